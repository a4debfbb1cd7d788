"""The NVIDIA softmax family's two-input layer (row_sum.cuh: rows_warp,
rows_held, rows_block, rows_split, columns, columns_vector, their _split forms,
strided) on a GPU, for
every op of family "along_dim_backward" (softmax_backward,
log_softmax_backward): each variant at moderate sizes (also the
compute-sanitizer subset, `-k test_variant`), forced through OPRT_TUNE_*
knobs (ops/common/tuning.h) where the planner keeps it for other shapes,
with the variant names the planner reports, checked against the
description's reference in float64.

    python -m pytest ops/common/nvidia/test_row_sum_nvidia.py --backend nvidia -q
"""

from __future__ import annotations

import pytest
import torch

from cuda_helpers import (NAN, NEEDS_CUDA, assert_variant, call, call_, check_result, cuda_backend,  # noqa: F401
                          dtype_params, equal_bits, expected_variant, family, op_params, prepare, set_tune,
                          variant_inputs)

pytestmark = NEEDS_CUDA

OPS = op_params(family("along_dim_backward"))

# (name, input shapes, input layout, params); every case runs for every op of the family.
# ROW_SUM_SPLITS: chunks per contiguous row (1: rows_block); ROW_SUM_COLUMN_SPLITS: blocks per
# column tile along the dim (1: columns); ROW_SUM_COLUMN_VECTORS=0: a column a thread.
VARIANT_CASES = [
    ("rows-warp", [(4096, 100), (4096, 100)], "contiguous", {"dim": -1, "nvidia_variant": "rows_warp"}),
    ("rows-warp-unaligned", [(333, 37), (333, 37)], "offset", {"dim": -1, "nvidia_variant": "rows_warp"}),
    # rows of up to 4096 16-byte vectors: each thread's vectors of both inputs held in registers
    ("rows-held", [(4096, 4096), (4096, 4096)], "contiguous", {"dim": -1, "nvidia_variant": "rows_held"}),
    # rows not whole vectors long: each row at another 16-byte alignment, its ends element by element
    ("rows-held-odd", [(1000, 3001), (1000, 3001)], "contiguous", {"dim": -1, "nvidia_variant": "rows_held"}),
    # grad and output at different alignments: rows_block's passes, element loads
    ("rows-held-sliced", [(1000, 3000), (1000, 3000)], "sliced-rows", {"dim": -1, "nvidia_variant": "rows_held"}),
    ("rows-held-1024-threads", [(64, 16384), (64, 16384)], "contiguous",
     {"dim": -1, "tune": {"ROW_SUM_SPLITS": 1}, "nvidia_variant": "rows_held"}),
    ("rows-block", [(4096, 4096), (4096, 4096)], "contiguous",
     {"dim": -1, "tune": {"ROW_SUM_HELD_VECTORS": 0}, "nvidia_variant": "rows_block"}),
    ("rows-block-odd", [(1000, 3001), (1000, 3001)], "contiguous",
     {"dim": -1, "tune": {"ROW_SUM_HELD_VECTORS": 0}, "nvidia_variant": "rows_block"}),
    ("rows-block-sliced", [(1000, 3000), (1000, 3000)], "sliced-rows",
     {"dim": -1, "tune": {"ROW_SUM_HELD_VECTORS": 0}, "nvidia_variant": "rows_block"}),
    ("rows-block-1024-threads", [(512, 65536), (512, 65536)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_block"}),
    ("rows-block-told", [(4, 1 << 20), (4, 1 << 20)], "contiguous",
     {"dim": -1, "tune": {"ROW_SUM_SPLITS": 1}, "nvidia_variant": "rows_block"}),
    # few long rows: each cut into chunks over blocks, two launches
    ("rows-split", [(4, 1 << 20), (4, 1 << 20)], "contiguous", {"dim": -1, "nvidia_variant": "rows_split"}),
    ("rows-split-vocab", [(32, 151936), (32, 151936)], "contiguous", {"dim": -1, "nvidia_variant": "rows_split"}),
    ("rows-split-unaligned", [(5, 270001), (5, 270001)], "offset", {"dim": -1, "nvidia_variant": "rows_split"}),
    ("rows-split-sliced", [(3, 300001), (3, 300001)], "sliced-rows", {"dim": -1, "nvidia_variant": "rows_split"}),
    ("rows-split-told", [(256, 8192), (256, 8192)], "contiguous",
     {"dim": -1, "tune": {"ROW_SUM_SPLITS": 7}, "nvidia_variant": "rows_split"}),
    # the dim not the contiguous one: tiles of neighbouring rows, the dim over threads (and blocks)
    ("columns", [(4096, 1024), (4096, 1024)], "contiguous",
     {"dim": 0, "tune": {"ROW_SUM_COLUMN_SPLITS": 1, "ROW_SUM_COLUMN_VECTORS": 0}, "nvidia_variant": "columns"}),
    ("columns-split", [(4096, 1024), (4096, 1024)], "contiguous",
     {"dim": 0, "tune": {"ROW_SUM_COLUMN_VECTORS": 0}, "nvidia_variant": "columns_split"}),
    # columns whole 16-byte vectors: a vector of columns a thread
    ("columns-vector", [(4096, 1024), (4096, 1024)], "contiguous",
     {"dim": 0, "tune": {"ROW_SUM_COLUMN_SPLITS": 1}, "nvidia_variant": "columns_vector"}),
    ("columns-vector-split", [(4096, 1024), (4096, 1024)], "contiguous",
     {"dim": 0, "nvidia_variant": "columns_vector_split"}),
    ("columns-vector-split-narrow", [(1 << 16, 8), (1 << 16, 8)], "contiguous",
     {"dim": 0, "nvidia_variant": "columns_vector_split"}),
    # planned with vectors, bases not 16-byte aligned at execute: a column a thread
    ("columns-vector-unaligned", [(4096, 1024), (4096, 1024)], "offset",
     {"dim": 0, "nvidia_variant": "columns_vector_split"}),
    ("columns-3d", [(64, 300, 257), (64, 300, 257)], "contiguous", {"dim": 1}),
    ("strided", [(500, 300), (500, 300)], "transposed", {"dim": -1}),
    ("strided-split", [(4000, 300), (4000, 300)], "transposed",
     {"dim": -1, "tune": {"ROW_SUM_COLUMN_SPLITS": 8}, "nvidia_variant": "strided_split"}),
]


@pytest.mark.parametrize("dt", dtype_params())
@pytest.mark.parametrize("case", VARIANT_CASES, ids=[c[0] for c in VARIANT_CASES])
@pytest.mark.parametrize("description", OPS)
def test_variant(cuda_backend, description, case, dt, record_property, monkeypatch, request):
    """prepare_op and op() on layouts chosen to reach every variant (the
    variant is recorded in the junit XML); the sanitizer runs these."""
    name, shapes, layout, params = case
    name = f"{description.name} {name}"
    set_tune(params.get("tune", {}), monkeypatch, request)
    inputs = variant_inputs(shapes, layout, dt)
    dim = params["dim"]
    out = torch.full(inputs[0].shape, NAN, dtype=dt, device="cuda")
    with prepare(description, out, inputs, {"dim": dim}, cuda_backend) as prepared:
        prepared.run()
        variant = prepared.variant
    check_result(description, out, inputs, {"dim": dim}, name)
    equal_bits(call(description, inputs, {"dim": dim}, cuda_backend), out, f"{name}: {description.name}() vs prepared")
    record_property("variant", variant)
    print(f"{name} {dt}: variant {variant}")
    assert_variant(cuda_backend, name, variant, expected_variant(params, dt))


# The variants whose sum and write run in different launches or threads.
IN_PLACE_CASES = [c for c in VARIANT_CASES if c[0] in ("rows-held", "rows-held-odd", "rows-split",
                                                       "rows-split-unaligned", "columns",
                                                       "columns-split", "columns-vector", "columns-vector-split",
                                                       "strided-split")]


@pytest.mark.parametrize("which", [0, 1], ids=["out-is-grad", "out-is-output"])
@pytest.mark.parametrize("case", IN_PLACE_CASES, ids=[c[0] for c in IN_PLACE_CASES])
@pytest.mark.parametrize("description", OPS)
def test_split_variants_in_place(cuda_backend, description, case, which, monkeypatch, request):
    """op_(x, grad, output) with x grad or output itself: every element's
    inputs are read before its write, also where the sums come from other
    blocks (the _split variants) or other threads (columns)."""
    name, shapes, layout, params = case
    set_tune(params.get("tune", {}), monkeypatch, request)
    inputs = variant_inputs(shapes, layout, torch.float32)
    expected = [t.clone() for t in inputs]
    call_(description, inputs[which], inputs, {"dim": params["dim"]}, cuda_backend)
    check_result(description, inputs[which], expected, {"dim": params["dim"]}, f"{description.name} {name} in place")
    equal_bits(inputs[1 - which], expected[1 - which], f"{name}: the other input")
