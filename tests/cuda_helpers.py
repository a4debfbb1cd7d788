"""What the GPU-only tests share: the generic ones in
tests/test_cuda_backends.py and the kernel-variant tests next to each
NVIDIA layer (ops/common/nvidia/test_*_nvidia.py, ops/<op>/nvidia/
test_<op>_nvidia.py). tests/ is on sys.path (the root conftest), so both
import it as `cuda_helpers`.

Nothing here names an op: a test takes an OpDescription (operator_runtime.
ops.DESCRIPTIONS) and calls its public forms, builds its reference in
float64 and judges the result by the description's accuracy kind.

Everything is compared on the GPU (float64 references there too) unless
OPRT_HOST_REFERENCE=1: then references and comparisons run on the CPU, so
under compute-sanitizer the only GPU kernels are ours plus torch's data
setup (torch's own CUDA reductions trip racecheck/initcheck by themselves).
"""

from __future__ import annotations

import contextlib
import math
import os

import pytest
import torch

import operator_runtime as oprt
from operator_runtime import Backend, BackendUnavailableError
from operator_runtime._internal.backends import backend_impl
from operator_runtime._internal.library import library
from operator_runtime._internal.tensors import DTYPE_CODES
from operator_runtime.ops import DESCRIPTIONS
from harness import check_scaled
from test_c_abi import create, functions, view
from operator_runtime_testing import (ACCUMULATION_EPS, TOLERANCES, assert_bitwise_equal, make_generator,
                                      make_tensor, reduction_tolerance)

NEEDS_CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
# Tests that compile CUDA (TileLang kernels) need nvcc, not a GPU.
NEEDS_NVCC = pytest.mark.skipif(
    not any(os.path.exists(os.path.join(d, "nvcc"))
            for d in [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin"),
                      *os.environ.get("PATH", "").split(os.pathsep)]),
    reason="nvcc not found (CUDA_HOME or PATH)")
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
NAN = float("nan")
F32_CODE, F16_CODE, BF16_CODE = (DTYPE_CODES[t] for t in (torch.float32, torch.float16, torch.bfloat16))
# The OPRT_TUNE_* knobs the plan tests set (ops/common/tuning.h lists them all).
TUNE_KNOBS = ("ELEMENTWISE_FLAT", "COPY_ODD_KERNEL", "COPY_TRANSPOSE_VEC")


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_params(*dtypes):
    """pytest params of dtypes, ids their names."""
    return [pytest.param(d, id=dtype_name(d)) for d in (dtypes or DTYPES)]


@pytest.fixture
def cuda_backend(backend):
    """`backend` (available: conftest skips the others), if it runs on CUDA tensors."""
    device_type = backend_impl(Backend(backend)).device_type
    if device_type != "cuda":
        pytest.skip(f"a CUDA-backend test; backend {backend} runs on {device_type} tensors")
    return backend


# -- descriptions --------------------------------------------------------------------

def family(name: str) -> list:
    """The descriptions of one family (the shared kernel layer they instantiate)."""
    return [d for d in DESCRIPTIONS.values() if d.family == name]


def op_params(descriptions, *, inputs: int | None = None):
    """pytest params of descriptions (ids their names), those of `inputs` inputs only if given."""
    return [pytest.param(d, id=d.name) for d in descriptions if inputs is None or len(d.inputs) == inputs]


def forms(description):
    """(op, op_, prepare_op) of a description."""
    name = description.name
    return getattr(oprt, name), getattr(oprt, f"{name}_"), getattr(oprt, f"prepare_{name}")


@contextlib.contextmanager
def skip_if_unavailable(description, backend):
    """Skips the test (with the reason) where `backend` has no kernel for the op."""
    try:
        yield
    except BackendUnavailableError as error:
        pytest.skip(f"{description.name} on {backend}: {error.reason}")


def prepare(description, out, inputs, params, backend):
    """prepare_op(out, *inputs, **params); skips where the backend lacks the op."""
    with skip_if_unavailable(description, backend):
        return forms(description)[2](out, *inputs, **params, backend=backend)


def call(description, inputs, params, backend):
    """op(*inputs, **params); skips where the backend lacks the op."""
    with skip_if_unavailable(description, backend):
        return forms(description)[0](*inputs, **params, backend=backend)


def call_(description, out, inputs, params, backend):
    """op_(out, *inputs, **params); skips where the backend lacks the op."""
    with skip_if_unavailable(description, backend):
        return forms(description)[1](out, *inputs, **params, backend=backend)


def out_like(description, inputs, params, dtype=None, device=None):
    """A NaN-filled contiguous out of the shape (and dtype) the op plans for."""
    plan = description.plan(None, *inputs, *description.bound_params(params))
    return torch.full(plan.out_shape, NAN, dtype=dtype or plan.out_dtype or inputs[0].dtype,
                      device=device or inputs[0].device)


def medium_cases(description) -> list:
    """The description's "medium" cases (more than one block's or thread's
    worth of work), or its largest case where it names none."""
    cases = [c for c in description.cases if c.name.startswith("medium")]
    if not cases and description.cases:
        cases = [max(description.cases, key=lambda c: sum(math.prod(s) for s in c.shapes))]
    return cases


def case_params(descriptions, select=medium_cases):
    """pytest params (description, case) for every description, ids op-case."""
    return [pytest.param(d, c, id=f"{d.name}-{c.name}") for d in descriptions for c in select(d)]


def case_inputs(case, dtype, seed, device="cuda") -> list:
    """A case's inputs (its shapes and layout kinds), random from `seed`."""
    gen = make_generator(seed)
    return [make_tensor(s, dtype, device, kind, gen) for s, kind in zip(case.shapes, case.layouts)]


def root(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor whose storage a view was taken from (the view itself if none)."""
    return tensor if tensor._base is None else tensor._base


# -- data ------------------------------------------------------------------------------

HOST_REFERENCE = os.environ.get("OPRT_HOST_REFERENCE") == "1"


def randn(shape, dtype=torch.float32, seed=0, device="cuda"):
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dtype)


def offset(t):
    """`t`'s values in storage one element past a 16-byte boundary."""
    base = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
    return base[1:].view(t.shape).copy_(t)


def rows_padded(shape, dtype, seed):
    """A tensor of `shape` whose last dim is padded in storage to a multiple
    of 64 elements (16-byte aligned rows, not whole vectors wide)."""
    width = shape[-1] + (-shape[-1]) % 64
    return randn((*shape[:-1], width), dtype, seed)[..., :shape[-1]]


def variant_input(shape, layout, dtype, seed):
    """One input of a variant case: `shape` in a named layout that reaches a kernel variant."""
    if layout == "transposed":
        return randn(shape[::-1], dtype, seed).t()
    if layout == "transposed-offset":
        return offset(randn(shape[::-1], dtype, seed)).t()
    if layout == "batch-transposed":  # the inner two dims swapped
        return randn((shape[0], shape[2], shape[1]), dtype, seed).transpose(1, 2)
    if layout == "permuted":
        return randn((shape[2], shape[0], shape[1]), dtype, seed).permute(1, 2, 0)
    if layout == "sliced-rows":
        return randn((shape[0], shape[1] + 24), dtype, seed)[:, 3:3 + shape[1]]
    if layout in ("padded-rows", "shifted-rows"):  # rows 32 (2) elements further apart than their length
        return randn((shape[0], shape[1] + (32 if layout == "padded-rows" else 2)), dtype, seed)[:, :shape[1]]
    if layout == "permuted-batch":  # the two outer dims swapped, the last contiguous
        return randn((shape[1], shape[0], shape[2]), dtype, seed).transpose(0, 1)
    if layout == "expand-rows":
        return randn(shape, dtype, seed).expand(700, shape[1])
    if layout == "expand-columns":  # one value per row
        return randn((shape[0], 1), dtype, seed).expand(shape[0], shape[1])
    values = randn(shape, dtype, seed)
    return offset(values) if layout == "offset" else values


def variant_inputs(shapes, layout, dtype, seed=80) -> list:
    """A variant case's inputs: the first in `layout`, the others contiguous
    except for the "offset" and "transposed" layouts, which all inputs share."""
    return [variant_input(s, layout if i == 0 or layout in ("offset", "transposed") else "contiguous", dtype, seed + i)
            for i, s in enumerate(shapes)]


def set_tune(tune, monkeypatch, request):
    """Sets OPRT_TUNE_* overrides (ops/common/tuning.h) for one test: they
    reach variants the planner keeps for other shapes. Descriptors read them
    when created, so cached ones are dropped now and after the test."""
    if not tune:
        return
    from operator_runtime._internal.operator import DESCRIPTOR_CACHE
    for key, value in tune.items():
        monkeypatch.setenv("OPRT_TUNE_" + key, str(value))
    DESCRIPTOR_CACHE.clear()
    request.addfinalizer(DESCRIPTOR_CACHE.clear)


# -- checks ------------------------------------------------------------------------------

def host(t):
    return t.cpu() if HOST_REFERENCE else t


def equal_bits(a, b, msg):
    assert_bitwise_equal(host(a), host(b), msg)


def check_close(actual, expected64, rtol, atol, msg):
    """|actual - expected| <= atol + rtol |expected| everywhere, equal
    infinities matching (on the GPU unless OPRT_HOST_REFERENCE=1)."""
    actual, expected64 = host(actual), host(expected64)
    assert actual.shape == expected64.shape, f"{msg}: shape {tuple(actual.shape)} vs {tuple(expected64.shape)}"
    wide = actual.double()
    error = (wide - expected64).abs()
    close = (error <= atol + rtol * expected64.abs()) & torch.isfinite(expected64)
    bad = ~(close | (wide == expected64))  # NaN counts as bad; an infinity must match exactly
    count = int(bad.sum())
    if count:
        first = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(f"{msg}: {count} of {actual.numel()} elements off (rtol {rtol:.3g}, atol {atol:.3g}); "
                             f"first at {first}: {actual[first].item()!r} vs {expected64[first].item()!r}")


def reference64(description, inputs, params):
    """The description's reference on the inputs in float64 (on the GPU
    unless OPRT_HOST_REFERENCE=1)."""
    return description.reference(*[host(t).double() for t in inputs], **params)


def row_length(src, params) -> int:
    return src.shape[params.get("dim", -1)] if src.dim() else 1


def tolerance(description, actual_dtype, inputs, params, out_numel, *, grow=True):
    """(rtol, atol) of the description's accuracy kind (not "exact"):
    elementwise: the dtype's rounding; reduction: a sum of the reduced count
    of terms; normalized: relative, growing with sqrt(row length); log: an
    absolute error of a few eps of the largest term, growing with sqrt(row
    length). grow=False: the dtype's rounding alone for "normalized"."""
    kind = description.accuracy
    rtol, atol = TOLERANCES[actual_dtype]
    if kind == "reduction":
        src = host(inputs[0])
        count = src.numel() // max(out_numel, 1)
        mean = float(src.abs().float().mean()) if src.numel() else 0.0
        return reduction_tolerance(actual_dtype, count, mean)
    n = max(row_length(inputs[0], params), 1)
    if kind == "normalized" and grow:
        rtol += 4 * ACCUMULATION_EPS[actual_dtype] * math.sqrt(n)
    elif kind == "log":
        src = host(inputs[0])
        finite = src[torch.isfinite(src)]
        scale = 1.0 + (float(finite.abs().max()) if finite.numel() else 0.0)
        atol += 8 * ACCUMULATION_EPS[actual_dtype] * math.sqrt(n) * scale
    return rtol, atol


def check_result(description, actual, inputs, params, msg, *, expected64=None, grow=True):
    """`actual` against the description's float64 reference, judged by its
    accuracy kind ("exact": bitwise the reference rounded to out's dtype)."""
    if expected64 is None:
        expected64 = reference64(description, inputs, params)
    if description.accuracy == "exact":
        equal_bits(actual, expected64.to(actual.dtype), msg)
        return
    if description.accuracy == "scaled":  # errors against the cancelling terms' size, as tests/test_ops.py judges
        check_scaled(actual.cpu(), expected64.cpu(), inputs, params, msg, error_scale=description.error_scale)
        return
    rtol, atol = tolerance(description, actual.dtype, inputs, params, actual.numel(), grow=grow)
    check_close(actual, expected64, rtol, atol, msg)


def check_special_rows(description, out, src, msg):
    """An along-dim op over the last dim of rows holding -inf/+inf/NaN: NaN
    exactly where torch has it, the rows without NaN within the accuracy
    kind's tolerance."""
    params = {"dim": -1}
    expected = reference64(description, [src], params)
    assert torch.equal(torch.isnan(host(out)), torch.isnan(expected)), f"{msg}: NaN rows differ from torch's"
    finite = ~torch.isnan(expected).any(-1)
    check_result(description, out[finite.to(out.device)], [src[finite.to(src.device)]], params, msg,
                 expected64=expected[finite])


def expected_variant(params, dtype):
    """A case's "nvidia_variant": a name, or one per dtype name (None: none asserted)."""
    expected = params.get("nvidia_variant")
    if isinstance(expected, dict):
        expected = expected.get(dtype_name(dtype))
    return expected


def assert_variant(backend, name, variant, expected):
    """nvidia on sm_90+: the descriptor planned the expected variant."""
    if backend == "nvidia" and expected and torch.cuda.get_device_capability()[0] >= 9:
        assert variant == expected, f"{name}: planned {variant}, not {expected}"


# -- shared test bodies ------------------------------------------------------------------

def check_graph_capture(name, prepare_, call_, make_inputs, make_out, check):
    """A prepared op and an op_ call captured in a CUDA graph; replays on new
    data copied into the captured inputs give the right results.

    prepare_(out, inputs) -> PreparedOp; call_(out, inputs); make_inputs(seed)
    -> inputs; make_out(inputs) -> out; check(out, inputs, msg). New data is
    copied storage to storage, so inputs of any layout (expanded included)
    take it; make_inputs must give the same layouts for every seed."""
    inputs = make_inputs(20)
    out, out2 = make_out(inputs), make_out(inputs)
    prepared = prepare_(out, inputs)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up (and the op_ signature recorded) outside the capture
        for _ in range(2):
            prepared.run()
            call_(out2, inputs)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        prepared.run()
        call_(out2, inputs)
    for seed in (30, 40, 50):
        new = make_inputs(seed)
        for target, value in zip(inputs, new):
            root(target).copy_(root(value))
        out.fill_(NAN)
        out2.fill_(NAN)
        graph.replay()
        torch.cuda.synchronize()
        check(out, new, f"{name}: prepared, replay with seed {seed}")
        check(out2, new, f"{name}: op_, replay with seed {seed}")
    del graph
    prepared.destroy()


def check_deterministic(name, run, attempts=3):
    """run() bit-identical run after run (no atomics in a different order)."""
    first = run()
    for attempt in range(attempts):
        torch.cuda._sleep(1_000_000 * attempt)  # vary the timing a little
        assert_bitwise_equal(run(), first, f"{name}: run {attempt + 2} vs run 1")


def planned_variant(op, shape, input_strides, out_dtype, in_dtype, tune, monkeypatch, out_strides=None):
    """The variant the NVIDIA backend plans for op on these layouts (create
    makes no CUDA call, so this runs wherever the library has the backend),
    with OPRT_TUNE_* set to `tune` and every other knob unset."""
    for key in TUNE_KNOBS:
        monkeypatch.delenv("OPRT_TUNE_" + key, raising=False)
    for key, value in tune.items():
        monkeypatch.setenv("OPRT_TUNE_" + key, str(value))  # read by the descriptor's create
    fns = functions(op, "nvidia")
    out = view(shape, out_strides, out_dtype)  # (no data: create never reads it)
    status, handle = create(fns, out, [view(shape, strides, in_dtype) for strides in input_strides], [])
    assert status == 0, library().oprt_last_error().decode()
    try:
        return library().oprt_descriptor_variant(handle).decode()
    finally:
        assert fns.destroy(handle) == 0
