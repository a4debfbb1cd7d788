"""reduce_sum / reduce_sum_ / prepare_reduce_sum against a float64 reference,
with torch.sum's dim semantics (None and () mean every dim)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, strategies as st

import operator_runtime as oprt
from harness import OpSpec, check_all_forms, check_out_variant, check_sum, outs, shapes, tensors
from operator_runtime_testing import make_out, make_tensor


def reduced_dims(dim, ndim: int) -> list:
    """torch.sum's reading of `dim`: None and () are every dim; a 0-d tensor
    has nothing to reduce."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return list(range(ndim))
    dims = list(dim) if isinstance(dim, (tuple, list)) else [dim]
    return sorted({d % ndim for d in dims}) if ndim else []


def reference(inputs, params):
    src = inputs[0]
    dim, keepdim = params.get("dim", -1), params.get("keepdim", False)
    result = src
    for d in sorted(reduced_dims(dim, src.dim()), reverse=True):
        result = result.sum(d, keepdim=keepdim)
    # the shape must be torch.sum's (this also pins down dim=() and dim=None)
    torch_shape = torch.sum(src, dim=dim, keepdim=keepdim).shape if src.dim() else src.shape
    assert result.shape == torch_shape, (result.shape, torch_shape)
    return result


def check(actual, expected, inputs, params, msg):
    src = inputs[0]
    count = math.prod(src.shape[d] for d in reduced_dims(params.get("dim", -1), src.dim()))
    check_sum(actual, expected, inputs, params, msg, reduced_count=count)


SPEC = OpSpec("reduce_sum", oprt.reduce_sum, oprt.reduce_sum_, oprt.prepare_reduce_sum, reference, check)


@pytest.mark.parametrize("shape,dim", [((3, 0), 1), ((0,), 0), ((2, 0, 4), (1, 2)), ((0, 3), None)])
def test_empty_reduction_gives_zeros(backend, dtype, device, gen, shape, dim):
    src = make_tensor(shape, dtype, device, "contiguous", gen)
    result = oprt.reduce_sum(src, dim, backend=backend)
    assert torch.equal(result.cpu(), torch.zeros_like(result.cpu()))
    out = make_out(result.shape, dtype, device, "sliced", gen)
    oprt.reduce_sum_(out, src, dim, backend=backend)
    assert torch.equal(out.cpu(), torch.zeros_like(out.cpu())), "empty sums must overwrite the NaN poison with 0"


def test_default_dim_is_last(backend, device, gen):
    src = make_tensor((3, 4, 5), torch.float32, device, "contiguous", gen)
    assert oprt.reduce_sum(src, backend=backend).shape == (3, 4)
    assert oprt.reduce_sum(src, keepdim=True, backend=backend).shape == (3, 4, 1)


def test_zero_d_input(backend, dtype, device, gen):
    src = make_tensor((), dtype, device, "contiguous", gen)
    for dim in (None, 0, -1, (), (0,)):
        for keepdim in (False, True):
            result = oprt.reduce_sum(src, dim, keepdim, backend=backend)
            assert result.shape == () and torch.equal(result.cpu(), src.cpu()), (dim, keepdim)


@pytest.mark.parametrize("shape,dim", [((4, 1, 3), 1), ((1, 5), (0,)), ((), None), ((2, 1, 1, 3), (1, 2))])
def test_in_place_when_nothing_changes_shape(backend, dtype, device, gen, shape, dim):
    """keepdim over size-1 dims (or a 0-d tensor) gives out the input's shape,
    so reduce_sum_(x, x, ...) is an allowed in-place call."""
    x = make_tensor(shape, dtype, device, "transposed", gen)
    expected = x.double().cpu().clone()
    assert oprt.reduce_sum_(x, x, dim, True, backend=backend) is x
    check(x, expected, [x], {"dim": dim, "keepdim": True}, "reduce_sum_(x, x)")


def test_special_values(backend, dtype, device):
    inf, nan = float("inf"), float("nan")
    rows = [[1.0, inf, 2.0], [-inf, 1.0, 1.0], [inf, -inf, 0.0], [nan, 1.0, 2.0], [1.0, 2.0, 3.0]]
    src = torch.tensor(rows, dtype=torch.float64).to(dtype).to(device)
    result = oprt.reduce_sum(src, 1, backend=backend)
    check(result, src.double().cpu().sum(1), [src], {"dim": 1}, "special values")


def test_fp16_sum_beyond_fp16_partial_range(backend, device):
    """Accumulation is float32: 4096 x 32.0 = 131072 overflows fp16 (-> inf)
    while 2048 x 32.0 - 2048 x 32.0 must be exactly 0 even though the running
    partial sums exceed fp16's range."""
    half = torch.float16
    big = torch.full((4096,), 32.0, dtype=half, device=device)
    assert torch.isinf(oprt.reduce_sum(big, backend=backend).cpu())
    mixed = torch.cat([torch.full((2048,), 32.0), torch.full((2048,), -32.0)]).to(half).to(device)
    assert oprt.reduce_sum(mixed, backend=backend).item() == 0.0
    # many small terms: fp16 accumulation would stall at 2048, float32 does not
    ones = torch.ones(3000, dtype=half, device=device)
    assert oprt.reduce_sum(ones, backend=backend).item() == 3000.0


@pytest.mark.parametrize("shape", [(1029, 1027), (5, 200003)], ids=str)
@pytest.mark.parametrize("kind", ["contiguous", "offset"])
def test_rows_not_whole_vectors(backend, dtype, device, gen, shape, kind):
    """Rows whose length is no multiple of a 16-byte vector, so each row
    starts at another place within a vector, unsplit and split over blocks
    (TileLang counts vectors from the tensor's start and takes each row's
    few leftover elements one by one)."""
    check_all_forms(SPEC, [make_tensor(shape, dtype, device, kind, gen)], {"dim": -1}, backend, gen)


@pytest.mark.parametrize("shape, dim", [((1 << 20,), None), ((4096, 256), 0), ((16, 65536), 1)],
                         ids=["scalar", "columns", "long-rows"])
def test_float32_sums_as_accurate_as_torch(backend, device, shape, dim):
    """float32 sums of many terms: the error against float64, per output in
    units of sqrt(n) * mean|x| (the size of a random sum, so that a sum that
    happens to cancel does not blow the ratio up), summed over four seeds,
    within 3x of torch.sum's. CPU lanes that added 128 terms in a row before
    folding were 4-10x torch's here."""
    ours = theirs = 0.0
    for seed in range(4):
        src = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(device)
        exact = src.double().sum() if dim is None else src.double().sum(dim)
        unit = math.sqrt(src.numel() // exact.numel()) * src.double().abs().mean()
        torch_sum = src.sum() if dim is None else src.sum(dim)
        ours += ((oprt.reduce_sum(src, dim, backend=backend).double() - exact).norm() / unit).item()
        theirs += ((torch_sum.double() - exact).norm() / unit).item()
    assert ours <= 3 * theirs, f"error {ours:.3g}, torch's {theirs:.3g} (summed over 4 seeds)"


# -- long sums on a GPU: errors that must not grow with the count ---------------------------
# (the CPU's are in tests/test_layouts.py; the emulated NVIDIA kernels' in
# tests/emulation/reduce_sum_harness.cc, at sizes the emulator runs)

LONG_SUM_BOUNDS = ((torch.float32, 8 * 2 ** -24), (torch.bfloat16, 2 ** -8))


def _gpu_only(device):
    if device.type == "cpu":
        pytest.skip("sized for a GPU")


def test_tall_column_sums_error_does_not_grow_with_rows(backend, device):
    """Column sums of 2^26 - 12345 real rows of one value (not a power of
    two: a tree of equal powers of two is exact in any order): a thread's
    running sum over its rows drifted with their count; compensated, float32
    stays within a few of its roundings."""
    _gpu_only(device)
    rows = 2 ** 26 - 12345
    for dtype, bound in LONG_SUM_BOUNDS:
        src = torch.tensor([0.1, -0.3, 0.7, 0.2, 0.9, -0.6, 0.4, 0.5], dtype=dtype, device=device)
        tall = src.expand(rows, 8).contiguous()
        exact = src.double() * rows
        result = oprt.reduce_sum(tall, 0, backend=backend).double()
        error = ((result - exact).abs() / exact.abs()).max().item()
        assert error <= bound, (dtype, error / 2 ** -24)
        del tall


def test_long_row_sums_error_does_not_grow_with_rounds(backend, device):
    """1024 rows of 2^20 elements of one value, enough rows to fill the GPU
    unsplit: each lane adds 128 rounds of loads (NVIDIA rows_aligned). A
    lane's running sum of its rounds drifted by 16 roundings in float32;
    compensated, it stays within a few."""
    _gpu_only(device)
    rows, length = 1024, 2 ** 20
    for dtype, bound in LONG_SUM_BOUNDS:
        src = torch.full((rows, length), 0.1, dtype=dtype, device=device)
        exact = src[0, 0].double().item() * length
        result = oprt.reduce_sum(src, 1, backend=backend).double()
        error = ((result - exact).abs() / exact).max().item()
        assert error <= bound, (dtype, error / 2 ** -24)
        del src


def test_broadcast_runs_sum_error_grows_with_log_count(backend, device):
    """sum over all of 2^26 - 3 real values each repeated 1024 times
    (stride 0): 2^36 elements, the broadcast dim the innermost run and the
    real dim the runs around it, which a task added one after another."""
    _gpu_only(device)
    count = 2 ** 26 - 3
    for dtype, bound in LONG_SUM_BOUNDS:
        runs = torch.full((count,), 0.1, dtype=dtype, device=device)
        src = runs.unsqueeze(1).expand(count, 1024)
        exact = runs[:1].double().item() * count * 1024
        result = oprt.reduce_sum(src, (0, 1), backend=backend).double().item()
        assert abs(result - exact) / exact <= bound, (dtype, result, exact)


def test_keepdim_matches_torch(backend, device, gen):
    src = make_tensor((2, 3, 4, 5), torch.float32, device, "mixed", gen)
    for dim in (0, -1, (1, 3), (-4, 2), None, ()):
        result = oprt.reduce_sum(src, dim, True, backend=backend)
        assert result.shape == torch.sum(src, dim=dim, keepdim=True).shape, dim


# -- properties -----------------------------------------------------------------------

@st.composite
def dim_arguments(draw, ndim: int):
    """Every form torch.sum takes: an int, a tuple (negative dims included),
    a list, None or ()."""
    kinds = ["none", "empty"] + (["int", "tuple", "list"] if ndim else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "empty":
        return ()
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    dims = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    dims = [d - ndim if draw(st.booleans()) else d for d in dims]  # mix in negative spellings
    return tuple(dims) if kind == "tuple" else dims


@given(data=st.data())
def test_property_dims_and_layouts(backend, dtypes, device, data):
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    shape = data.draw(shapes(), label="shape")
    dim = data.draw(dim_arguments(len(shape)), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    src = data.draw(tensors(shape, dtype, device), label="src")
    params = {"dim": dim, "keepdim": keepdim}
    expected = reference([src.double().cpu()], params)
    result = oprt.reduce_sum(src, dim, keepdim, backend=backend)
    check(result, expected, [src], params, "reduce_sum")
    out = data.draw(outs(tuple(expected.shape), dtype, device), label="out")
    check_out_variant(SPEC, out, [src], params, backend, expected=expected)
