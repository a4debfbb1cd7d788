"""The NVIDIA along-dim layer (one set of kernels with an epilogue per op:
rows_warp .. rows_split2, columns, columns_cluster, strided) on a GPU, for
every op of family "along_dim": each variant at moderate sizes (also the
compute-sanitizer subset, `-k test_variant`), with the variant names the
planner reports (the same for every op of the family, for the same shapes
and knobs), CUDA graphs, determinism of the split and cluster regimes,
large inputs, -inf/+inf/NaN placed where the kernels split, shift or cache
rows, and in-place calls. Results are checked against the description's
reference in float64, by its accuracy kind ("normalized": relative,
"log": absolute, both growing with sqrt(row length)).

    python -m pytest ops/common/nvidia/test_along_dim_nvidia.py --backend nvidia -q
"""

from __future__ import annotations

import math

import pytest
import torch

from cuda_helpers import (NAN, NEEDS_CUDA, assert_variant, call, call_, check_deterministic,  # noqa: F401
                          check_graph_capture, check_result, check_special_rows, cuda_backend, dtype_name,
                          dtype_params, equal_bits, expected_variant, family, host, offset, op_params, prepare,
                          randn, reference64, rows_padded, set_tune, variant_inputs)

pytestmark = NEEDS_CUDA

ALONG_DIM = family("along_dim")
OPS = op_params(ALONG_DIM)

# over dim 0 (nvidia): tiles of 128 bytes in float32, 64 in 16-bit, so 1000 x 4096 has 128
# tiles, 2 blocks each (a block per SM); tiles of 128 bytes in 16-bit when told (64 tiles, 4 blocks
# each). 8192 rows: 16 blocks of 64 KB per tile in float32, 8 in 16-bit.
_CLUSTER_2 = "columns_cluster2"
_CLUSTER_WIDE = {"float32": "columns_cluster2", "float16": "columns_cluster4", "bfloat16": "columns_cluster4"}
_CLUSTER_8192 = {"float32": "columns_cluster16", "float16": "columns_cluster8", "bfloat16": "columns_cluster8"}
# rows_shared on rows of ~40000 elements: two slices of <= 80 KB in float32, one block in 16-bit.
_SHARED_40K = {"float32": "rows_shared2", "float16": "rows_shared1", "bfloat16": "rows_shared1"}


def _run(description, src, dim, backend):
    return call(description, [src], {"dim": dim}, backend)


def _run_(description, out, src, dim, backend):
    return call_(description, out, [src], {"dim": dim}, backend)


def _check(description, actual, src, dim, msg):
    check_result(description, actual, [src], {"dim": dim}, msg)


# -- every kernel variant, at moderate sizes (also the compute-sanitizer subset) --------

# (name, input shapes, input layout, params); every case runs for every along-dim op
VARIANT_CASES = [
    ("rows-warp", [(4096, 100)], "contiguous", {"dim": -1}),
    ("rows-warp-unaligned", [(333, 37)], "offset", {"dim": -1}),
    # rows back to back, whole vectors long (nvidia: the dense kernels); sliced rows, an
    # unaligned base (planned dense, the general kernel runs) or the dense kernel turned off
    ("rows-warp-dense", [(4096, 128)], "contiguous", {"dim": -1, "nvidia_variant": "rows_warp_dense"}),
    ("rows-warp-sliced", [(4096, 128)], "sliced-rows", {"dim": -1, "nvidia_variant": "rows_warp"}),
    ("rows-block-dense", [(256, 8192)], "contiguous", {"dim": -1, "nvidia_variant": "rows_block_dense"}),
    ("rows-block-dense-1024-threads", [(64, 16384)], "contiguous",
     {"dim": -1, "nvidia_variant": {"float32": "rows_block_dense"}}),
    ("rows-block-dense-unaligned-base", [(256, 8192)], "offset",
     {"dim": -1, "nvidia_variant": "rows_block_dense"}),
    # rows back to back but not whole vectors long: shifted onto 16-byte boundaries row by row
    ("rows-block-dense-odd", [(300, 12289)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_block_dense"}),
    ("rows-block-dense-odd-shifted", [(300, 12289)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_FLAT": 0}, "nvidia_variant": "rows_block_dense"}),
    ("rows-block-dense-odd-short", [(1000, 2053)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_block_dense"}),
    ("rows-warp-dense-odd", [(999, 37)], "contiguous", {"dim": -1, "nvidia_variant": "rows_warp_dense"}),
    ("rows-block-sliced", [(256, 8192)], "sliced-rows", {"dim": -1, "nvidia_variant": "rows_block"}),
    ("rows-block-general", [(256, 8192)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_DENSE": 0}, "nvidia_variant": "rows_block"}),
    ("rows-block", [(256, 8000)], "contiguous", {"dim": -1}),
    ("rows-warp-4-slots", [(512, 1000)], "contiguous", {"dim": -1}),
    ("rows-block-8-slots", [(64, 20000)], "offset", {"dim": -1}),
    ("rows-block-1024-threads", [(64, 16000)], "offset", {"dim": -1}),
    ("rows-cluster2", [(64, 50000)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0}}),
    ("rows-cluster4-unaligned", [(7, 65537)], "offset", {"dim": -1}),
    ("rows-cluster8", [(16, 200001)], "contiguous", {"dim": -1, "tune": {"SOFTMAX_SHARED": 0}}),
    ("rows-resident", [(3, 300001)], "contiguous", {"dim": -1}),
    ("rows-resident-unaligned", [(2, (1 << 21) + 3)], "offset", {"dim": -1}),
    ("rows-resident-partly-cached", [(5, 270001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT_CACHE": 700}}),
    # more than one round of loads per thread outside shared memory: read again after the barrier
    ("rows-resident-rest-reread", [(5, 700001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT_CACHE": 100}}),
    # the cache filled by each thread's own copies (rows_resident_copies): planned for chunks of at least 1.5
    # times the cache (float32 here, 363 KB; 16-bit chunks half that stay bulk), and told on the shapes above
    ("rows-resident-copies", [(1, 12_000_001)], "offset",
     {"dim": -1, "nvidia_variant": {"float32": "rows_resident_copies", "float16": "rows_resident",
                                    "bfloat16": "rows_resident"}}),
    ("rows-resident-copies-told", [(2, (1 << 21) + 3)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT_COPIES": 1}, "nvidia_variant": "rows_resident_copies"}),
    ("rows-resident-copies-partly-cached", [(5, 270001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT_COPIES": 1, "SOFTMAX_RESIDENT_CACHE": 700}}),
    ("rows-resident-copies-rest-reread", [(5, 700001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT_COPIES": 1, "SOFTMAX_RESIDENT_CACHE": 100}}),
    # long rows in (row, chunk) tasks over two launches (nvidia: rows_split2), or one cooperative kernel
    ("rows-split", [(3, 300001)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT": 0}, "nvidia_variant": "rows_split2"}),
    ("rows-split-unaligned", [(5, 270001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0, "SOFTMAX_RESIDENT": 0}, "nvidia_variant": "rows_split2"}),
    ("rows-split-cooperative", [(5, 270001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0, "SOFTMAX_RESIDENT": 0, "SOFTMAX_SPLIT_LAUNCHES": 1},
      "nvidia_variant": "rows_split"}),
    # more than two long rows per SM, a block per row reading it twice (nvidia: rows_twice)
    ("rows-twice", [(270, 40001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0}, "nvidia_variant": "rows_twice"}),
    # the row's first vectors kept in shared memory between the passes: 8 KB of it (the rest read twice), none
    ("rows-twice-partly-cached", [(270, 40001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0, "SOFTMAX_TWICE_CACHE_KB": 8}, "nvidia_variant": "rows_twice"}),
    ("rows-twice-no-cache", [(270, 40001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0, "SOFTMAX_TWICE_CACHE_KB": 0}, "nvidia_variant": "rows_twice"}),
    ("rows-twice-cached", [(300, 70001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0, "SOFTMAX_TWICE_CACHE_KB": 1 << 20}, "nvidia_variant": "rows_twice"}),
    ("rows-twice-one-block-per-sm", [(300, 33000)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_TWICE_BLOCKS": 1, "SOFTMAX_SHARED": 0}, "nvidia_variant": "rows_twice"}),
    # rows of 4+ rounds of 1024 threads' loads: 1024-thread blocks (float32 rows of 65536+)
    ("rows-twice-1024-threads", [(300, 70001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0}, "nvidia_variant": "rows_twice"}),
    # rows_twice's rows where they start 16-byte aligned and are whole vectors long: a cluster per row, each
    # block's slice (<= 80 KB) in shared memory (nvidia: rows_shared<C>). 40008: the last slice shorter, a
    # part bulk copy; rows padded apart (the offset calculator); slices of <= 10 KB (clusters of 16 / 8);
    # one block per row (160 / 80 KB); planned, but the base not 16-byte aligned at execute: rows_twice runs
    ("rows-shared", [(270, 40008)], "contiguous",
     {"dim": -1, "nvidia_variant": _SHARED_40K}),
    ("rows-shared-padded", [(270, 40008)], "padded-rows",
     {"dim": -1, "nvidia_variant": _SHARED_40K}),
    ("rows-shared-large-clusters", [(270, 40008)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_SHARED_KB": 10, "SOFTMAX_SHARED_ONE_KB": 10},
      "nvidia_variant": {"float32": "rows_shared16", "float16": "rows_shared8", "bfloat16": "rows_shared8"}}),
    ("rows-shared-one-block", [(270, 40008)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_SHARED_KB": 200}, "nvidia_variant": "rows_shared1"}),
    # rows not whole vectors long, each at another 16-byte alignment: the edges element by element;
    # a 100 KB 16-bit row in one block (past the 80 KB slices of a cluster)
    ("rows-shared-odd-one-block", [(200, 50257)], "contiguous",
     {"dim": -1, "nvidia_variant": {"float32": "rows_shared4", "float16": "rows_shared1", "bfloat16": "rows_shared1"}}),
    ("rows-shared-odd", [(270, 40001)], "contiguous",
     {"dim": -1, "nvidia_variant": _SHARED_40K}),
    # few rows (70; rows_cluster without rows_shared), the grid at least half the SMs' worth of blocks
    ("rows-shared-few-rows", [(70, 40008)], "contiguous",
     {"dim": -1, "nvidia_variant": _SHARED_40K}),
    ("rows-shared-unaligned-base", [(270, 40008)], "offset",
     {"dim": -1, "nvidia_variant": _SHARED_40K}),

    # rows_block rows of at most 2 blocks per SM, more rows than the resident grid has blocks: rows
    # streamed through shared memory (nvidia: rows_stream)
    # (rows of 16384 are planned dense, 2 float32 or 4 16-bit blocks per SM: streamed only when
    # told, with 4 slots, so that 300 rows outnumber the resident grid)
    ("rows-stream", [(300, 16384)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_STREAM_BELOW": 64, "SOFTMAX_SLOTS": 4}, "nvidia_variant": "rows_stream"}),
    ("rows-stream-3-buffers", [(300, 16384)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_STREAM_BUFFERS": 3, "SOFTMAX_STREAM_BELOW": 64, "SOFTMAX_SLOTS": 4},
      "nvidia_variant": "rows_stream"}),
    ("rows-stream-8-slots", [(300, 32768)], "contiguous",
     {"dim": -1, "nvidia_variant": {"float16": "rows_stream", "bfloat16": "rows_stream"}}),
    # planned as rows_stream, but the base is not 16-byte aligned: rows_block runs
    ("rows-stream-unaligned-base", [(300, 16384)], "offset", {"dim": -1}),
    ("columns", [(1000, 4096)], "contiguous",
     {"dim": 0, "tune": {"SOFTMAX_COLUMN_CLUSTER": 0}, "nvidia_variant": "columns_split"}),
    ("columns-cluster", [(1000, 4096)], "contiguous", {"dim": 0, "nvidia_variant": _CLUSTER_2}),
    ("columns-cluster-128-byte-tiles", [(1000, 4096)], "contiguous",
     {"dim": 0, "tune": {"SOFTMAX_COLUMN_CLUSTER_TX": 8}, "nvidia_variant": _CLUSTER_WIDE}),
    ("columns-cluster-8192-rows", [(8192, 1024)], "contiguous",
     {"dim": 0, "nvidia_variant": _CLUSTER_8192}),
    ("columns-split", [(1 << 18, 8)], "contiguous", {"dim": 0}),
    ("strided", [(500, 300)], "transposed", {"dim": -1}),
]


@pytest.mark.parametrize("dt", dtype_params())
@pytest.mark.parametrize("case", VARIANT_CASES, ids=[c[0] for c in VARIANT_CASES])
@pytest.mark.parametrize("description", OPS)
def test_variant(cuda_backend, description, case, dt, record_property, monkeypatch, request):
    """prepare_op and op() on layouts chosen to reach every kernel variant
    (the variant is recorded in the junit XML); the sanitizer runs these. A
    case's "tune" values are OPRT_TUNE_* overrides (ops/common/tuning.h)
    that reach variants the planner keeps for other shapes."""
    name, shapes, layout, params = case
    name = f"{description.name} {name}"
    set_tune(params.get("tune", {}), monkeypatch, request)
    src, dim = variant_inputs(shapes, layout, dt)[0], params["dim"]
    out = torch.full(src.shape, NAN, dtype=dt, device="cuda")
    with prepare(description, out, [src], {"dim": dim}, cuda_backend) as prepared:
        prepared.run()
        variant = prepared.variant
    _check(description, out, src, dim, name)
    equal_bits(_run(description, src, dim, cuda_backend), out, f"{name}: {description.name}() vs prepared")
    record_property("variant", variant)
    print(f"{name} {dt}: variant {variant}")
    assert_variant(cuda_backend, name, variant, expected_variant(params, dt))


# -- CUDA graphs ---------------------------------------------------------------------

# (name, input shape, dtype, dim)
GRAPH_CASES = [
    ("4x2^20", (4, 1 << 20), torch.float32, -1),
    ("cluster-32x120000", (32, 120000), torch.bfloat16, -1),
    ("rows-fp16", (4096, 1000), torch.float16, -1),
    ("columns", (1000, 512), torch.float32, 0),
]


@pytest.mark.parametrize("case", GRAPH_CASES, ids=[c[0] for c in GRAPH_CASES])
@pytest.mark.parametrize("description", OPS)
def test_cuda_graph_capture(cuda_backend, description, case):
    name, shape, dtype, dim = case
    check_graph_capture(
        f"{description.name} {name}",
        lambda o, x: prepare(description, o, x, {"dim": dim}, cuda_backend),
        lambda o, x: call_(description, o, x, {"dim": dim}, cuda_backend),
        lambda seed: [randn(shape, dtype, seed)],
        lambda x: torch.empty(shape, dtype=dtype, device="cuda"),
        lambda o, x, msg: _check(description, o, x[0], dim, msg))


# -- determinism -----------------------------------------------------------------------

# (name, dim, input shape, dtype)
DETERMINISM_CASES = [
    ("4x2^20", -1, (4, 1 << 20), torch.float32),
    ("split-200x140001", -1, (200, 140001), torch.float32),
    ("cluster-64x100000", -1, (64, 100000), torch.float32),
    ("2^20x4-dim0", 0, (1 << 20, 4), torch.float32),
    ("rows-bf16", -1, (8192, 4096), torch.bfloat16),
]


@pytest.mark.parametrize("case", DETERMINISM_CASES, ids=[c[0] for c in DETERMINISM_CASES])
@pytest.mark.parametrize("description", OPS)
def test_deterministic(cuda_backend, description, case):
    """Bit-identical results run after run (no atomics in a different order)."""
    name, dim, shape, dtype = case
    src = randn(shape, dtype, 60)
    check_deterministic(f"{description.name} {name}", lambda: _run(description, src, dim, cuda_backend))


# -- large tensors (>= 64M elements) ------------------------------------------------

SQUARE = (8192, 8192)


@pytest.mark.parametrize("shape,dim", [(SQUARE, -1), (SQUARE, 0), ((16, 1 << 22), -1), ((1 << 22, 16), 0),
                                       ((700, 140001), -1)],
                         ids=["rows", "columns", "long-rows", "long-columns", "many-long-rows"])
@pytest.mark.parametrize("description", OPS)
def test_large(cuda_backend, description, shape, dim):
    """Includes split rows with more rows than the cooperative grid has blocks."""
    src = randn(shape, torch.float32, 8)
    _check(description, _run(description, src, dim, cuda_backend), src, dim,
           f"{description.name} {shape} dim {dim}")
    if shape == SQUARE:
        half = src.to(torch.float16)
        _check(description, _run(description, half, dim, cuda_backend), half, dim,
               f"fp16 {description.name} {shape}")


# -- over a non-last dim read once: columns_cluster ----------------------------------

@pytest.mark.parametrize("dt", dtype_params())
@pytest.mark.parametrize("shape,dim,layout,expected", [
    ((1000, 4096), 0, "contiguous", _CLUSTER_2),
    ((8192, 1024), 0, "contiguous", _CLUSTER_8192),
    ((4, 700, 1001), 1, "padded", _CLUSTER_2),  # planes; a vector cut by the last column
    ((1000, 4096), 0, "offset", _CLUSTER_2),  # planned, but the base is unaligned: the columns kernels run
], ids=["2d", "8192-rows", "planes-padded", "unaligned-base"])
@pytest.mark.parametrize("description", OPS)
def test_columns_cluster(cuda_backend, description, dt, shape, dim, layout, expected):
    """Columns whose whole length a cluster holds in shared memory, with
    -inf/+inf/NaN columns: torch's values and NaN columns from the prepared
    op (bitwise the same on a second run), op() and op_ in place."""
    name = f"{description.name} {dtype_name(dt)}"
    src = rows_padded(shape, dt, 90) if layout == "padded" else randn(shape, dt, 90)
    columns = src.movedim(dim, 0)  # a view: [dim, ..., columns]
    columns[..., 5] = float("-inf")  # all -inf: NaN, as torch
    columns[17, ..., 9] = float("nan")
    columns[3, ..., 13] = float("inf")
    columns[..., 17] = float("-inf")
    columns[-1, ..., 17] = 2.0  # -inf but for the last element: the only finite one
    columns[:columns.shape[0] // 2, ..., 21] = float("-inf")  # a block's rows all -inf but a NaN: NaN, as torch
    columns[40, ..., 21] = float("nan")
    if layout == "offset":
        src = offset(src)
    params = {"dim": dim}
    expected64 = reference64(description, [src], params)
    nan = torch.isnan(expected64)

    def check(actual, what):
        assert torch.equal(torch.isnan(host(actual)), nan), f"{name} {what}: NaN columns differ from torch's"
        check_result(description, host(actual)[~nan], [src], params, f"{name} {what} {shape} dim {dim}",
                     expected64=expected64[~nan], grow=False)

    out = rows_padded(shape, dt, 91).fill_(NAN) if layout == "padded" else torch.full_like(src, NAN)
    with prepare(description, out, [src], params, cuda_backend) as prepared:
        prepared.run()
        variant = prepared.variant
        first = out.clone()
        prepared.run()
    equal_bits(out, first, f"{name}: second run")
    check(out, "prepared")
    check(_run(description, src, dim, cuda_backend), f"{description.name}()")
    inplace = src.clone()
    _run_(description, inplace, inplace, dim, cuda_backend)
    check(inplace, "in place")
    if isinstance(expected, dict):
        expected = expected[dtype_name(dt)]
    assert_variant(cuda_backend, name, variant, expected)


# -- -inf, +inf and NaN where the kernels split, shift or cache rows -------------------

@pytest.mark.parametrize("tune", [{}, {"SOFTMAX_RESIDENT": 0}, {"SOFTMAX_RESIDENT": 0, "SOFTMAX_SPLIT_LAUNCHES": 1}],
                         ids=["resident", "split", "cooperative"])
@pytest.mark.parametrize("dt", dtype_params(torch.float32, torch.bfloat16))
@pytest.mark.parametrize("description", OPS)
def test_long_row_special_values(cuda_backend, description, dt, tune, monkeypatch, request):
    """-inf, +inf and NaN in rows split over many blocks, placed where whole
    chunks (and rounds) hold nothing but -inf: NaN rows where torch has them,
    and -inf counting as 0 even while a chunk's max is still -inf."""
    set_tune(tune, monkeypatch, request)
    n = (1 << 20) + 5
    src = randn((7, n), dt, 31)
    src[0, : n // 2] = -math.inf          # half the row's chunks are all -inf
    src[1] = -math.inf                    # all -inf: a NaN row
    src[2] = -math.inf
    src[2, n - 3] = math.nan              # all -inf but one NaN near the end: NaN row
    src[3, n // 3] = math.inf             # +inf: NaN row (inf - inf)
    src[4, 12345] = math.nan              # one NaN: NaN row
    src[5] = -math.inf
    src[5, n - 1] = 2.0                   # one finite value at the very end: the only finite one
    src[6, ::1000] = -math.inf
    check_special_rows(description, _run(description, src, -1, cuda_backend), src, f"finite rows {tune}")


@pytest.mark.parametrize("tune", [{"SOFTMAX_SHARED": 0}, {"SOFTMAX_SHARED": 0, "SOFTMAX_TWICE_CACHE_KB": 1 << 20},
                                  {"SOFTMAX_SHARED": 0, "SOFTMAX_TWICE_CACHE_KB": 0}],
                         ids=["planned", "cached", "uncached"])
@pytest.mark.parametrize("dt", dtype_params(torch.float32, torch.bfloat16))
@pytest.mark.parametrize("description", OPS)
def test_many_long_row_special_values(cuda_backend, description, dt, tune, monkeypatch, request):
    """-inf, +inf and NaN in more than two long rows per SM (nvidia:
    rows_twice, told not to plan rows_shared; float32 rows of 70001 in 1024-thread blocks, a grid that
    takes rows 264.. in a second pass; bf16 in 512-thread blocks), at the
    ends of rows and in the rows a block takes second."""
    rows, n = 300, 70001
    src = randn((rows, n), dt, 34)
    for r in (1, 270):
        src[r, 0] = math.nan                  # the first element NaN: NaN row
        src[r + 1, n - 1] = math.inf          # the last element +inf: NaN row
        src[r + 2] = -math.inf                # all -inf: NaN row
        src[r + 3] = -math.inf
        src[r + 3, n - 1] = 1.0               # one finite value, the last
        src[r + 4, : n // 2] = -math.inf      # the first half -inf
        src[r + 5, n - 5:] = 40.0             # the row's max among its last elements
    set_tune(tune, monkeypatch, request)
    check_special_rows(description, _run(description, src, -1, cuda_backend), src, f"many long rows {tune}")


@pytest.mark.parametrize("tune", [{}, {"SOFTMAX_SHARED_KB": 20}, {"SOFTMAX_SHARED_KB": 200}],
                         ids=["planned", "clusters-of-16-8", "140-kb-slices"])
@pytest.mark.parametrize("n", [70000, 70001])
@pytest.mark.parametrize("dt", dtype_params(torch.float32, torch.bfloat16))
@pytest.mark.parametrize("description", OPS)
def test_shared_row_special_values(cuda_backend, description, dt, n, tune, monkeypatch, request):
    """-inf, +inf and NaN in many long rows (nvidia: rows_shared,
    float32 rows of 70000 in clusters of 4, bf16 of 2; told: clusters of
    16 / 8, or 140 KB slices, 2 / 1 blocks per row): at row ends, in whole
    slices of -inf, and in a row whose only finite value sits in its last
    slice; rows of whole vectors
    and not (70001: each row at another alignment, its edges element by
    element); out of place, in place, and in place one element past a
    16-byte boundary."""
    rows = 300
    src = randn((rows, n), dt, 36)
    src[1, 0] = math.nan                  # the first element NaN: NaN row
    src[2, n - 1] = math.inf              # the last element +inf: NaN row
    src[3] = -math.inf                    # all -inf: NaN row
    src[4] = -math.inf
    src[4, n - 1] = 1.0                   # one finite value, the last
    src[5, : n // 2] = -math.inf          # the first half (whole slices) -inf
    src[6, n // 2:] = -math.inf           # the second half
    src[7, n - 5:] = 40.0                 # the row's max among its last elements
    src[8, n // 2] = 40.0                 # ... in a middle slice
    src[299, ::3] = -math.inf
    set_tune(tune, monkeypatch, request)
    check_special_rows(description, _run(description, src, -1, cuda_backend), src, f"long rows {tune}")
    in_place = src.clone()
    _run_(description, in_place, in_place, -1, cuda_backend)
    check_special_rows(description, in_place, src, f"long rows in place {tune}")
    shifted = offset(src)
    _run_(description, shifted, shifted, -1, cuda_backend)
    check_special_rows(description, shifted, src, f"long rows in place, one element off {tune}")


@pytest.mark.parametrize("tune", [{}, {"SOFTMAX_STREAM_BELOW": 64}, {"SOFTMAX_DENSE": 0, "SOFTMAX_STREAM": 0}],
                         ids=["planned", "streamed", "general"])
@pytest.mark.parametrize("dt", dtype_params())
@pytest.mark.parametrize("description", OPS)
def test_many_row_special_values(cuda_backend, description, dt, tune, monkeypatch, request):
    """-inf, +inf and NaN in rows past the first the grid's blocks take (nvidia:
    planned dense or rows_stream, each block's later rows from its
    shared-memory buffers; told: rows_stream, or the general rows_block):
    NaN rows where torch has them, the others exact."""
    set_tune(tune, monkeypatch, request)
    rows, n = 400, 16384
    src = randn((rows, n), dt, 32)
    src[301] = -math.inf                  # all -inf: a NaN row
    src[302, n // 2] = math.inf           # +inf: NaN row
    src[303, 7] = math.nan                # one NaN: NaN row
    src[304] = -math.inf
    src[304, n - 1] = 2.0                 # one finite value at the end
    src[399, ::3] = -math.inf
    src[200, : n // 2] = -math.inf
    check_special_rows(description, _run(description, src, -1, cuda_backend), src, "finite rows")


@pytest.mark.parametrize("tune", [{}, {"SOFTMAX_FLAT": 0}], ids=["planned", "shifted"])
@pytest.mark.parametrize("dt", dtype_params())
@pytest.mark.parametrize("description", OPS)
def test_odd_row_edge_values(cuda_backend, description, dt, tune, monkeypatch, request):
    """Dense rows not whole vectors long, each at another 16-byte
    misalignment (nvidia: rows_block_dense; the elements before a row's first
    and after its last 16-byte boundary take their own path, the kFlat
    form's edge elements, or told: the shifted slots): -inf/+inf/NaN and the
    row's largest values placed there; out of place and in place."""
    set_tune(tune, monkeypatch, request)
    rows, n = 24, 12289  # row r starts r elements past a 16-byte boundary, modulo the vector width
    src = randn((rows, n), dt, 33)
    src[1, 0] = math.nan                  # a leading element: NaN row
    src[2, n - 1] = math.inf              # the last element: NaN row
    src[3] = -math.inf
    src[3, 0] = 1.0                       # only the first element finite
    src[4] = -math.inf
    src[4, n - 1] = 1.0                   # only the last
    src[5, :5] = 30.0                     # the max among the leading elements
    src[6, n - 3:] = 30.0                 # ... among the trailing ones
    src[7] = -math.inf                    # all -inf: NaN row
    src[9, 1] = -math.inf                 # -inf at an edge
    src[10, n - 2] = -math.inf
    check_special_rows(description, _run(description, src, -1, cuda_backend), src, f"odd rows {tune}")
    in_place = src.clone()
    _run_(description, in_place, in_place, -1, cuda_backend)
    check_special_rows(description, in_place, src, f"odd rows in place {tune}")


# -- in place --------------------------------------------------------------------------

@pytest.mark.parametrize("dt", dtype_params(torch.float32, torch.bfloat16))
@pytest.mark.parametrize("description", OPS)
def test_many_row_in_place(cuda_backend, description, dt):
    """out is src on rows of the streamed shape (nvidia: rows_stream reads the
    block's next row while it writes the current one in place)."""
    src = randn((400, 16384), dt, 33)
    x = src.clone()
    _run_(description, x, x, -1, cuda_backend)
    _check(description, x, src, -1, f"{description.name}_(x, x)")


@pytest.mark.parametrize("shape", [(300, 12289), (1, 1001), (999, 37), (256, 8192), (1, 8192)])
@pytest.mark.parametrize("dt", dtype_params(torch.float32, torch.float16))
@pytest.mark.parametrize("description", OPS)
def test_in_place_unaligned(cuda_backend, description, dt, shape):
    """op_(x, x) with x one element past a 16-byte boundary: out and src
    equally misaligned (nvidia: the dense kernel shifts each row onto 16-byte
    boundaries where the rows are not whole vectors, else the general kernel runs)."""
    src = randn(shape, dt, 34)
    x = offset(src)
    _run_(description, x, x, -1, cuda_backend)
    _check(description, x, src, -1, f"{description.name}_(x, x) {shape}")


@pytest.mark.parametrize("shape", [(300, 12289), (7, 2049), (3, 4095), (5, 16377), (33, 1001), (1, 12289)])
@pytest.mark.parametrize("dt", dtype_params())
@pytest.mark.parametrize("description", OPS)
def test_rows_not_whole_vectors(cuda_backend, description, dt, shape):
    """Aligned rows whose length is not a multiple of the 16-byte vector
    (nvidia: dense rows shifted row by row; tilelang: block_rows flat, where
    neighbouring rows share a vector): every row as torch, none written by
    its neighbour (a NaN row and a -inf row sit between finite ones)."""
    src = randn(shape, dt, 35)
    if shape[0] > 2:
        src[1, shape[1] // 2] = math.nan
        src[2] = -math.inf
    out = torch.full(shape, NAN, dtype=dt, device="cuda")
    _run_(description, out, src, -1, cuda_backend)
    check_special_rows(description, out, src, f"rows of {shape[1]}")
