"""The NVIDIA elementwise layer (elementwise.cuh: dense, rows, flat and
strided kernels) on a GPU, for every op of family "elementwise" whose input
count a case fits: each kernel variant at moderate sizes (also the
compute-sanitizer subset, `-k test_variant`), CUDA graphs over broadcast and
transposed inputs, and inputs of 64M elements. An op's own kernels (say,
transposes or dtype conversions) are tested in ops/<op>/nvidia/.

    python -m pytest ops/common/nvidia/test_elementwise_nvidia.py --backend nvidia -q
"""

from __future__ import annotations

import pytest
import torch

from cuda_helpers import (NAN, NEEDS_CUDA, assert_variant, call, call_, check_graph_capture,  # noqa: F401
                          check_result, cuda_backend, dtype_params, expected_variant, family, op_params,
                          out_like, prepare, randn, set_tune, variant_inputs)

pytestmark = NEEDS_CUDA

ELEMENTWISE = family("elementwise")

# The flat kernel wherever it applies (planned where rows cannot be whole 16-byte vectors).
_FLAT = {"tune": {"ELEMENTWISE_FLAT": 1}, "nvidia_variant": "flat"}

# (name, input shapes, input layout, params); a case runs for every elementwise op of as many inputs.
VARIANT_CASES = [
    # one input: contiguous (an op may take it as a cudaMemcpyAsync), sliced rows, permuted (strided), a broadcast row
    ("contiguous", [(1 << 20,)], "contiguous", {}),
    ("rows", [(300, 1000)], "sliced-rows", {}),
    ("strided", [(64, 50, 30)], "permuted", {}),
    ("broadcast", [(1, 513)], "expand-rows", {}),
    # flat (told): a broadcast column with rows shorter than a vector, a broadcast row
    ("flat-short-column", [(700, 3)], "expand-columns", _FLAT),
    ("flat-row", [(1, 513)], "expand-rows", _FLAT),
    # two inputs
    ("dense", [(1 << 20,), (1 << 20,)], "contiguous", {}),
    ("dense-unaligned", [(100003,), (100003,)], "offset", {}),
    ("rows-broadcast", [(512, 1000), (1000,)], "contiguous", {}),
    ("strided", [(700, 300), (700, 300)], "transposed", {}),
    # flat (told: OPRT_TUNE_ELEMENTWISE_FLAT=1, wherever it applies): out contiguous, b a bias row read
    # whole within a row (1000) or across row ends and unaligned (1001), one value per row, rows
    # shorter than a vector (3), a 3-D layout (b one value per middle index), a misaligned a (every
    # element scalar)
    ("flat-bias", [(512, 1000), (1000,)], "contiguous", _FLAT),
    ("flat-bias-odd", [(300, 1001), (1001,)], "contiguous", _FLAT),
    ("flat-column", [(300, 1001), (300, 1)], "contiguous", _FLAT),
    ("flat-short-rows", [(4099, 3), (3,)], "contiguous", _FLAT),
    # rows shorter than a vector with one value per row: the offset steps along its 2-D layout
    ("flat-short-column", [(4099, 3), (4099, 1)], "contiguous", _FLAT),
    ("flat-short-column-planned", [(4099, 3), (4099, 1)], "contiguous", {"nvidia_variant": "flat"}),
    ("flat-3d", [(6, 70, 33), (70, 1)], "contiguous", _FLAT),
    ("flat-unaligned", [(300, 1001), (1001,)], "offset", _FLAT),
    # planned flat: float32 rows not whole vectors (1001), short rows (16, and 3: under a vector); told back to rows
    ("flat-bias-odd-planned", [(300, 1001), (1001,)], "contiguous",
     {"nvidia_variant": {"float32": "flat", "float16": "rows", "bfloat16": "rows"}}),
    ("flat-short-rows-planned", [(4099, 16), (16,)], "contiguous", {"nvidia_variant": "flat"}),
    ("flat-shorter-rows-planned", [(4099, 3), (3,)], "contiguous", {"nvidia_variant": "flat"}),
    ("rows-bias-odd-told", [(300, 1001), (1001,)], "contiguous",
     {"tune": {"ELEMENTWISE_FLAT": 0}, "nvidia_variant": "rows"}),
]

_VARIANT_PARAMS = [pytest.param(d, case, id=f"{d.name}-{case[0]}")
                   for case in VARIANT_CASES for d in ELEMENTWISE if len(d.inputs) == len(case[1])]


@pytest.mark.parametrize("dt", dtype_params())
@pytest.mark.parametrize("description,case", _VARIANT_PARAMS)
def test_variant(cuda_backend, description, case, dt, record_property, monkeypatch, request):
    """Each op form on layouts chosen to reach every kernel variant of the
    elementwise layer (the variant is recorded in the junit XML); the
    sanitizer runs these. A case's "tune" values are OPRT_TUNE_* overrides
    (ops/common/tuning.h) that reach variants the planner keeps for other
    shapes."""
    name, shapes, layout, params = case
    name = f"{description.name} {name}"
    set_tune(params.get("tune", {}), monkeypatch, request)
    inputs = variant_inputs(shapes, layout, dt)
    out = out_like(description, inputs, {})
    with prepare(description, out, inputs, {}, cuda_backend) as prepared:
        prepared.run()
        variant = prepared.variant
    check_result(description, out, inputs, {}, name)
    check_result(description, call(description, inputs, {}, cuda_backend), inputs, {},
                 f"{name}: {description.name}()")
    record_property("variant", variant)
    print(f"{name} {dt}: variant {variant}")
    assert_variant(cuda_backend, name, variant, expected_variant(params, dt))


# -- CUDA graphs ---------------------------------------------------------------------

# (name, input shapes, dtype, transpose input 0); a case runs for every elementwise op of as many inputs.
GRAPH_CASES = [
    ("transposed", [(4096, 2048)], torch.float16, True),
    ("broadcast", [(1024, 4096), (4096,)], torch.bfloat16, False),
]

_GRAPH_PARAMS = [pytest.param(d, case, id=f"{d.name}-{case[0]}")
                 for case in GRAPH_CASES for d in ELEMENTWISE if len(d.inputs) == len(case[1])]


@pytest.mark.parametrize("description,case", _GRAPH_PARAMS)
def test_cuda_graph_capture(cuda_backend, description, case):
    name, shapes, dtype, transpose = case

    def make_inputs(seed):
        inputs = [randn(s, dtype, seed + i) for i, s in enumerate(shapes)]
        return [inputs[0].t(), *inputs[1:]] if transpose else inputs

    check_graph_capture(
        f"{description.name} {name}",
        lambda o, x: prepare(description, o, x, {}, cuda_backend),
        lambda o, x: call_(description, o, x, {}, cuda_backend),
        make_inputs,
        lambda x: out_like(description, x, {}),
        lambda o, x, msg: check_result(description, o, x, {}, msg))


# -- large tensors (>= 64M elements) ------------------------------------------------

BIG = 1 << 26
SQUARE = (8192, 8192)


@pytest.mark.parametrize("dt", dtype_params())
@pytest.mark.parametrize("description", op_params(ELEMENTWISE))
def test_large(cuda_backend, description, dt):
    """64M elements a tensor; two inputs: also a square plus a broadcast row,
    and op_ of a transposed square and a broadcast column."""
    count = len(description.inputs)
    inputs = [randn(BIG, dt, 1 + k) for k in range(count)]
    check_result(description, call(description, inputs, {}, cuda_backend), inputs, {},
                 f"{description.name} of 64M")
    del inputs
    if count == 2:
        square, row = randn(SQUARE, dt, 5), randn(SQUARE[1], dt, 6)
        check_result(description, call(description, [square, row], {}, cuda_backend), [square, row], {},
                     f"{description.name} 8192^2 + a row")
        out = torch.full(square.t().shape, NAN, dtype=dt, device="cuda")
        call_(description, out, [square.t(), row[:, None]], {}, cuda_backend)
        check_result(description, out, [square.t(), row[:, None]], {},
                     f"{description.name}_ transposed + a column")
