"""Layouts torch cannot hand to the runtime, through the C ABI: negative
strides (a view whose data pointer is not its lowest element, as a reversed
NumPy or DLPack array has) and stride-0 dims mixed with them, for every
discovered op, dtype and case of its description; and sums over huge
broadcast (stride-0) inputs, whose error must grow with the log of the
count.

A C view may take any strides: the ABI must be right for every legal
layout, whatever the Python layer lets through (torch refuses negative
strides in as_strided). Each operand is a random buffer; out's is NaN
everywhere, and only out's own elements may change."""

from __future__ import annotations

import ctypes
import math

import pytest
import torch

from harness import spec_for, upcast
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime._internal.tensors import DTYPE_CODES
from c_abi_calls import create, functions, last_error, planned, view

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)

# A layout: for each dim (outermost first) its place in memory and its sign.
#   negative             every dim reversed (a flip of a contiguous buffer: strides (-C, -1))
#   negative_transposed  dims stored in reverse order, every other one reversed
#   zero_negative        (inputs) dims 0, 2, ... broadcast with stride 0, the others reversed
INPUT_LAYOUTS = ("negative", "negative_transposed", "zero_negative")
OUT_LAYOUTS = ("contiguous", "negative", "negative_transposed")


def layout_strides(kind: str, shape) -> list:
    """Strides (in elements) of `kind` for `shape` over a dense buffer."""
    ndim = len(shape)
    order = list(reversed(range(ndim))) if kind == "negative_transposed" else list(range(ndim))
    strides, running = [0] * ndim, 1
    for d in reversed(order):  # innermost storage dim last
        strides[d] = running
        running *= max(shape[d], 1)
    for d in range(ndim):
        if kind == "zero_negative" and d % 2 == 0:
            strides[d] = 0
        elif kind in ("negative", "zero_negative") or (kind == "negative_transposed" and d % 2 == 0):
            strides[d] = -strides[d]
    return strides


class Strided:
    """A view of `shape` and `strides` into a flat buffer with room on both
    sides: `base` is element 0's index in the buffer, `index` the buffer
    index of every element (row-major)."""

    def __init__(self, shape, strides, buffer_fill, dtype, gen):
        shape = tuple(shape)
        low = sum((s - 1) * st for s, st in zip(shape, strides) if st < 0 and s > 0)
        high = sum((s - 1) * st for s, st in zip(shape, strides) if st > 0 and s > 0)
        self.base = 3 - low  # a few elements before and after, never touched
        self.shape, self.strides = shape, strides
        size = self.base + high + 4
        wide = torch.float64 if dtype == torch.float64 else torch.float32
        values = torch.randn(size, generator=gen, dtype=wide) if buffer_fill is None else \
            torch.full((size,), buffer_fill, dtype=wide)
        self.buffer = values.to(dtype)
        index = torch.full(shape, self.base, dtype=torch.int64)
        for d, (s, st) in enumerate(zip(shape, strides)):
            along = torch.arange(s, dtype=torch.int64) * st
            index = index + along.view([s if k == d else 1 for k in range(len(shape))])
        self.index = index

    def logical(self) -> torch.Tensor:
        return self.buffer[self.index.reshape(-1)].reshape(self.shape)

    def pointer(self) -> int:
        return self.buffer.data_ptr() + self.base * self.buffer.element_size()

    def c_view(self):
        return view(self.shape, self.strides, DTYPE_CODES[self.buffer.dtype])


def _cases(name):
    """The description's cases that run through one C call: inputs and out
    non-empty, out shaped by the plan."""
    description = DESCRIPTIONS[name]
    for case in description.cases:
        if case.out_shape is not None or not all(math.prod(s) for s in case.shapes):
            continue
        try:
            out_shape, input_shapes, c_params = planned(name, case.shapes, case.params)
        except (TypeError, ValueError):
            continue
        if math.prod(out_shape) and len(out_shape) <= 4:
            yield case, out_shape, input_shapes, c_params


def _run_case(name, backend, dtype, gen, out_shape, input_shapes, c_params, params, input_kind, out_kind):
    """One call with every input of `input_kind` and out of `out_kind`;
    returns a failure message or None."""
    fns = functions(name, backend)
    inputs = [Strided(s, layout_strides(input_kind, s), None, dtype, gen) for s in input_shapes]
    out = Strided(out_shape, layout_strides(out_kind, out_shape), float("nan"), dtype, gen)
    status, handle = create(fns, out.c_view(), [t.c_view() for t in inputs], c_params)
    assert status == 0, last_error()
    try:
        size = ctypes.c_size_t()
        assert fns.workspace(handle, ctypes.byref(size)) == 0, last_error()
        workspace = torch.empty(size.value, dtype=torch.uint8)  # alive until execute returns
        status = fns.execute(handle, workspace.data_ptr() if size.value else None, size.value, out.pointer(),
                             *[t.pointer() for t in inputs], None)
        assert status == 0, last_error()
    finally:
        assert fns.destroy(handle) == 0
    logical = [t.logical() for t in inputs]
    expected = spec_for(name).reference(upcast(logical), params)
    spec_for(name).check(out.logical(), expected, logical, params, "")
    outside = torch.ones(out.buffer.numel(), dtype=torch.bool)
    outside[out.index.reshape(-1)] = False
    assert torch.isnan(out.buffer[outside].double()).all(), "out's buffer was written outside its view"


OPS = sorted(DESCRIPTIONS)


@pytest.mark.parametrize("out_kind", OUT_LAYOUTS)
@pytest.mark.parametrize("input_kind", INPUT_LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).replace("torch.", "") for d in DTYPES])
@pytest.mark.parametrize("name", OPS)
def test_negative_and_zero_strides(name, dtype, input_kind, out_kind, c_backend, gen):
    """Every case of the op's description with its inputs (and out) laid out
    with negative strides, stride-0 dims among them: the reference's result,
    nothing written outside out."""
    if c_backend != "cpu":
        pytest.skip("the C ABI tests here pass host pointers; the GPU's run in tests/test_cuda_backends.py")
    ran = 0
    for case, out_shape, input_shapes, c_params in _cases(name):
        try:
            _run_case(name, c_backend, dtype, gen, out_shape, input_shapes, c_params, case.params, input_kind,
                      out_kind)
        except AssertionError as error:
            raise AssertionError(f"{name} case {case.name} {input_shapes} -> {out_shape}: {error}") from None
        ran += 1
    assert ran, f"{name}: no case ran"


# -- huge broadcast sums ----------------------------------------------------------------

# Counts near 2^25, 2^32 and 2^36 that are not powers of two (a tree of equal
# powers of two is exact in any order, which would hide a serial sum).
BROADCAST_COUNTS = (2 ** 25 - 12345, 3 * 2 ** 30 + 777, 2 ** 36 - 5 * 2 ** 20 - 3)


@pytest.mark.parametrize("count", BROADCAST_COUNTS, ids=lambda n: f"2^{math.log2(n):.1f}")
def test_broadcast_sum_error_grows_with_log_count(count, backend):
    """sum(0.1 expanded to count elements): one element with stride 0, so
    the CPU reads it once per chunk, never count times in memory. A serial
    sum of the chunk partials drifted by 6e-4 at 2^32 and 1e-2 at 2^36;
    pairwise, float32 stays within a few of its roundings."""
    import operator_runtime as ort
    device = "cuda" if backend in ("nvidia", "tilelang") else "cpu"
    for dtype, bound in ((torch.float32, 8 * 2 ** -24), (torch.bfloat16, 2 ** -8), (torch.float64, 1e-12)):
        if dtype == torch.float64 and backend != "cpu":
            continue
        x = torch.tensor([0.1], dtype=dtype, device=device).expand(count)
        exact = x[:1].double().item() * count
        try:
            result = ort.reduce_sum(x, 0, backend=backend).double().item()
        except NotImplementedError as error:
            pytest.skip(str(error))
        assert abs(result - exact) / exact <= bound, (dtype, result, exact, abs(result - exact) / exact)


@pytest.mark.parametrize("count", BROADCAST_COUNTS, ids=lambda n: f"2^{math.log2(n):.1f}")
def test_broadcast_column_sums_error_grows_with_log_count(count, backend):
    """The same over rows of 3 columns (a row expanded to count / 3 rows): the
    columns path (the outputs contiguous, the reduced dim of stride 0, which
    the GPU backends sum once and scale by its size)."""
    import operator_runtime as ort
    device = "cuda" if backend in ("nvidia", "tilelang") else "cpu"
    for dtype, bound in ((torch.float32, 8 * 2 ** -24), (torch.bfloat16, 2 ** -8), (torch.float64, 1e-12)):
        if dtype == torch.float64 and backend != "cpu":
            continue
        columns = torch.tensor([[0.1, -0.3, 0.7]], dtype=dtype, device=device).expand(count // 3, 3)
        exact = columns[0].cpu().double() * (count // 3)
        try:
            result = ort.reduce_sum(columns, 0, backend=backend).cpu().double()
        except NotImplementedError as error:
            pytest.skip(str(error))
        assert ((result - exact).abs() / exact.abs()).max().item() <= bound, (dtype, result, exact)


@pytest.mark.parametrize("columns", (1, 3, 8, 64))
def test_tall_column_sums_stay_near_rounding(columns, backend):
    """Sums over dim 0 of a tall, narrow tensor held in memory (not
    broadcast): a CPU chunk of such a tensor has thousands of rows, whose
    folded partials a plain running sum added with up to ~100 roundings
    of drift (3 columns of 0.1); compensated, float32 stays within a few."""
    import operator_runtime as ort
    device = "cuda" if backend in ("nvidia", "tilelang") else "cpu"
    rows = 65531
    values = torch.tensor([0.1, -0.3, 0.7, 1.1, 0.2, -0.9, 0.5, 0.3] * 8)[:columns]
    src = values.expand(rows, columns).contiguous().to(device)
    exact = values.double() * rows
    try:
        result = ort.reduce_sum(src, 0, backend=backend).cpu().double()
    except NotImplementedError as error:
        pytest.skip(str(error))
    worst = ((result - exact).abs() / exact.abs()).max().item()
    assert worst <= 8 * 2 ** -24, f"{columns} columns: relative error {worst / 2 ** -24:.1f} roundings"
