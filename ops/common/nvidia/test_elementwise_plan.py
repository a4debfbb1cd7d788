"""The NVIDIA elementwise engine's plans for two-input ops of one dtype
(vector_add, mul, ... : every elementwise op with two inputs), checked
without a GPU: creating a descriptor makes no CUDA call. Whether each variant
computes the right values is checked on a GPU (test_elementwise_nvidia.py)."""

from __future__ import annotations

import pytest

from cuda_helpers import BF16_CODE as BF16, F16_CODE as F16, F32_CODE as F32, planned_variant
from operator_runtime.ops import DESCRIPTIONS

FLAT = {"ELEMENTWISE_FLAT": 1}  # flat wherever it applies
NO_FLAT = {"ELEMENTWISE_FLAT": 0}
BINARY = [name for name, d in DESCRIPTIONS.items() if d.family == "elementwise" and len(d.inputs) == 2]

# (name, shape, input strides, out dtype, input dtype, OPRT_TUNE_* values, variant)
CASES = [
    ("add-dense", (1 << 20,), [(1,), (1,)], F32, F32, {}, "dense"),
    ("add-scalar", (4096,), [(1,), (0,)], BF16, BF16, FLAT, "dense"),
    ("add-bias", (512, 1000), [(1000, 1), (0, 1)], F32, F32, {}, "rows"),
    ("add-bias-16bit", (512, 1024), [(1024, 1), (0, 1)], BF16, BF16, {}, "rows"),
    ("add-bias-16bit-odd", (512, 1004), [(1004, 1), (0, 1)], BF16, BF16, {}, "rows"),
    ("add-bias-flat", (512, 1000), [(1000, 1), (0, 1)], F32, F32, FLAT, "flat"),
    ("add-bias-odd", (512, 2053), [(2053, 1), (0, 1)], F32, F32, {}, "flat"),
    ("add-bias-odd-told-rows", (512, 2053), [(2053, 1), (0, 1)], F32, F32, NO_FLAT, "rows"),
    ("add-column", (300, 1024), [(1024, 1), (1, 0)], BF16, BF16, {}, "rows"),
    ("add-column-odd-16bit", (300, 1001), [(1001, 1), (1, 0)], BF16, BF16, {}, "rows"),
    ("add-column-flat", (300, 1001), [(1001, 1), (1, 0)], F32, F32, {}, "flat"),
    # rows under 64 elements: flat, also below a vector (strided when told)
    ("add-short-rows", (4099, 3), [(3, 1), (0, 1)], F32, F32, {}, "flat"),
    ("add-short-rows-told-strided-f32", (4099, 3), [(3, 1), (0, 1)], F32, F32, NO_FLAT, "strided"),
    ("add-short-rows-one-vector", (4099, 4), [(4, 1), (0, 1)], F32, F32, {}, "flat"),
    ("add-short-rows-16bit", (4099, 7), [(7, 1), (0, 1)], F16, F16, {}, "flat"),
    ("add-short-rows-transposed", (4099, 3), [(1, 4099), (0, 1)], F32, F32, {}, "strided"),
    ("add-short-rows-column", (4099, 3), [(3, 1), (1, 0)], F32, F32, {}, "flat"),
    ("add-short-rows-column-told-strided", (4099, 3), [(3, 1), (1, 0)], F32, F32, NO_FLAT, "strided"),
    # (a 3-D input needs the calculator per element: strided)
    ("add-short-rows-3d-column", (5, 300, 3), [(900, 3, 1), (600, 1, 0)], F32, F32, {}, "strided"),
    ("add-short-rows-column-one-vector", (4099, 4), [(4, 1), (1, 0)], F32, F32, {}, "flat"),
    ("add-short-rows-16", (1 << 16, 16), [(16, 1), (0, 1)], BF16, BF16, {}, "flat"),
    ("add-short-rows-told-strided", (1 << 16, 16), [(16, 1), (0, 1)], BF16, BF16, NO_FLAT,
     "strided"),
    ("add-3d-flat", (6, 70, 33), [(2310, 33, 1), (0, 1, 0)], F16, F16, FLAT, "flat"),
    ("add-transposed-flat", (300, 1000), [(1, 300), (1000, 1)], F32, F32, FLAT, "strided"),
]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_planned_variant(op, case, monkeypatch):
    name, shape, input_strides, out_dtype, in_dtype, tune, expected = case
    assert planned_variant(op, shape, input_strides, out_dtype, in_dtype, tune, monkeypatch) == expected, name


@pytest.mark.parametrize("op", BINARY)
def test_flat_needs_a_contiguous_out(op, monkeypatch):
    """out's rows 24 elements apart: `rows`, told or not."""
    variant = planned_variant(op, (300, 1000), [(1000, 1), (0, 1)], F32, F32, FLAT, monkeypatch, out_strides=(1024, 1))
    assert variant == "rows"
