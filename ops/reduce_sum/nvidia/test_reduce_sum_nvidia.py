"""reduce_sum's NVIDIA kernels on a GPU (reduce_rows.cuh, reduce_columns.cuh):
each variant at moderate sizes (also the compute-sanitizer subset, `-k
test_variant`), CUDA graphs, determinism of the split regimes, split sums
interleaved with the other ops that share the per-thread workspace, the
columns kernels' whole-rows loop against the general loop, 64M-element
inputs and more than 2**31 elements.

    python -m pytest ops/reduce_sum/nvidia/test_reduce_sum_nvidia.py --backend nvidia -q
"""

from __future__ import annotations

import math

import pytest
import torch

import operator_runtime as oprt
from cuda_helpers import (NEEDS_CUDA, assert_variant, check_close, check_deterministic,  # noqa: F401
                          check_graph_capture, cuda_backend, dtype_params, equal_bits, expected_variant, host,
                          randn, set_tune, variant_inputs)
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import assert_bitwise_equal, reduction_tolerance

pytestmark = NEEDS_CUDA

SQUARE = (8192, 8192)


def _check_sum(actual, src, dims, msg):
    dims = tuple(range(src.dim())) if dims is None else dims
    src = host(src)
    expected = src.double().sum(dims)
    count = math.prod(src.shape[d] for d in dims)
    rtol, atol = reduction_tolerance(actual.dtype, count, float(src.abs().float().mean()))
    check_close(actual, expected, rtol, atol, msg)


def _dims(src, dim):
    """reduce_sum's dim as a tuple of non-negative dims (None: all)."""
    return None if dim is None else tuple(d % src.dim() for d in (dim if isinstance(dim, tuple) else (dim,)))


# -- every kernel variant, at moderate sizes (also the compute-sanitizer subset) --------

# (name, input shapes, input layout, params)
VARIANT_CASES = [
    # one contiguous run per output, 16-byte aligned rows of whole rounds (nvidia: rows_aligned), split over
    # blocks (the last piece of a row a partial round where the row is not whole rounds); the same without
    # rows_aligned (rows_dense); several runs per output: rows
    ("sum-rows", [(512, 4096)], "contiguous", {"dim": -1, "nvidia_variant": "rows_aligned"}),
    ("sum-rows-split", [(2, 1 << 20)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_aligned_split"}),
    ("sum-rows-split-partial-round", [(2, 1000008)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_aligned_split"}),
    ("sum-all-split", [(1 << 22,)], "contiguous", {"dim": None, "nvidia_variant": "rows_aligned_split"}),
    # rows_aligned loads 32 elements a lane per round (8 vectors in float32, 4 in 16-bit): the other
    # count in every dtype, unsplit and split
    *[(f"sum-rows-unroll{u}{suffix}", [shape], "contiguous",
       {"dim": -1, "tune": {"REDUCE_ALIGNED_UNROLL": u}, "nvidia_variant": variant})
      for u in (4, 8)
      for suffix, shape, variant in (("", (512, 4096), "rows_aligned"), ("-split", (2, 1000008), "rows_aligned_split"))],
    ("sum-rows-dense", [(512, 4096)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_ALIGNED": 0}, "nvidia_variant": "rows_dense"}),
    ("sum-rows-dense-split", [(2, 1000008)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_ALIGNED": 0}, "nvidia_variant": "rows_dense_split"}),
    # split rows with 32 threads a task (a block's 8 tasks span rows); then 64 rows with the base unaligned
    # (the plan's rows_aligned_split runs as rows_dense_split)
    ("sum-rows-split-groups", [(3, 1 << 20)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_MAX_TPR": 32}, "nvidia_variant": "rows_aligned_split"}),
    ("sum-rows-split-groups-dense", [(3, 1 << 20)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_MAX_TPR": 32, "REDUCE_ALIGNED": 0}, "nvidia_variant": "rows_dense_split"}),
    ("sum-rows-split-many", [(64, 1 << 16)], "offset", {"dim": -1}),
    ("sum-runs", [(2, 8192, 1024)], "contiguous", {"dim": (0, 2), "nvidia_variant": "rows"}),
    ("sum-runs-split", [(64, 2, 4096)], "contiguous", {"dim": (0, 2), "nvidia_variant": "rows_split"}),
    ("sum-rows-dense-off", [(512, 4096)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_DENSE_ROWS": 0}, "nvidia_variant": "rows"}),
    ("sum-rows-unaligned", [(33, 1001)], "offset", {"dim": -1}),
    ("sum-strided", [(300, 2000)], "transposed", {"dim": 0}),
    ("sum-columns", [(4096, 1000)], "contiguous", {"dim": 0}),
    ("sum-columns-split", [(1 << 18, 16)], "contiguous", {"dim": 0}),
    # rows not 16-byte aligned (odd widths): 16-bit vectors loaded aligned and shifted into place
    # across lanes (float32 planned on element loads; shifted when forced); split; tiles 1, 2 and 4
    # lanes wide; planes (a kept dim outside the columns); element loads forced
    ("sum-columns-shifted", [(2047, 2053)], "contiguous",
     {"dim": 0, "nvidia_variant": {"float32": "columns_split", "float16": "columns_shifted_split",
                                   "bfloat16": "columns_shifted_split"}}),
    ("sum-columns-shifted-float32", [(2047, 2053)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_SHIFTED": 2}, "nvidia_variant": "columns_shifted_split"}),
    ("sum-columns-shifted-split", [(1 << 16, 37)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_SHIFTED": 2}, "nvidia_variant": "columns_shifted_split"}),
    ("sum-columns-shifted-narrow", [(30001, 5)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_SHIFTED": 2}, "nvidia_variant": "columns_shifted_split"}),
    ("sum-columns-shifted-planes", [(7, 301, 33)], "contiguous",
     {"dim": 1, "tune": {"REDUCE_COLUMN_SHIFTED": 2}, "nvidia_variant": "columns_shifted"}),
    ("sum-columns-shifted-off", [(2047, 2053)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_SHIFTED": 0}, "nvidia_variant": "columns_split"}),
    # aligned rows planned, the base one element past a 16-byte boundary at execute: shifted (16-bit)
    ("sum-columns-unaligned-base", [(4096, 1000)], "offset", {"dim": 0}),
    # a tile's splits as the blocks of a cluster, merged through distributed shared memory (planned
    # where they fill half the GPU and rows are 16-byte aligned; forced here on smaller shapes and
    # odd rows): clusters of 16, 8, 4 and 2; unaligned rows (16-bit: shifted loads); tiles wider than
    # the columns (planes of 40, 3 columns: ranks with no columns to write); a base off alignment
    ("sum-columns-cluster", [(4096, 1000)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1}, "nvidia_variant": "columns_cluster16"}),
    ("sum-columns-cluster8", [(4096, 1000)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1, "REDUCE_COLUMN_CLUSTER_MAX": 8},
      "nvidia_variant": "columns_cluster8"}),
    ("sum-columns-cluster2", [(2047, 2053)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER": 2, "REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1,
                         "REDUCE_COLUMN_CLUSTER_MAX": 2},
      "nvidia_variant": {"float32": "columns_cluster2", "float16": "columns_shifted_cluster2",
                         "bfloat16": "columns_shifted_cluster2"}}),
    ("sum-columns-cluster-shifted", [(2047, 2053)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER": 2, "REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1,
                         "REDUCE_COLUMN_CLUSTER_MAX": 4, "REDUCE_COLUMN_CLUSTER_TX": 32},
      "nvidia_variant": {"float32": "columns_cluster4", "float16": "columns_shifted_cluster4",
                         "bfloat16": "columns_shifted_cluster4"}}),
    ("sum-columns-cluster-planes", [(5, 4000, 40)], "contiguous",
     {"dim": 1, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1}, "nvidia_variant": "columns_cluster16"}),
    ("sum-columns-cluster-narrow", [(30001, 3)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1}}),
    ("sum-columns-cluster-unaligned-base", [(4096, 1000)], "offset",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1}, "nvidia_variant": "columns_cluster16"}),
    # tiles of whole aligned vectors, one reduced dim: the row loop with no per-row checks (add_whole_rows);
    # rows not whole rounds (4099), split or clustered, planes (a kept dim outside the columns)
    ("sum-columns-whole-split", [(4099, 256)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER": 0}, "nvidia_variant": "columns_whole_split"}),
    ("sum-columns-whole-cluster8", [(4099, 1024)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1, "REDUCE_COLUMN_CLUSTER_MAX": 8},
      "nvidia_variant": "columns_whole_cluster8"}),
    ("sum-columns-whole-planes", [(6, 1001, 128)], "contiguous",
     {"dim": 1, "nvidia_variant": {"float32": "columns_whole_cluster8", "float16": "columns_whole_split",
                                   "bfloat16": "columns_whole_split"}}),
    ("sum-middle", [(16, 300, 64)], "contiguous", {"dim": 1}),
    ("sum-zeros", [(7, 0)], "contiguous", {"dim": 1}),
    # many short rows of whole 16-byte vectors, 16-byte aligned (nvidia: rows_short): lanes per row
    # 16 / 8 (float32 / 16-bit), 16 / 8 with vectors past the row end, 1, 32 / 16 with 2 rows per group,
    # a grid that strides (4688 / 2344 blocks, more than one resident grid); 1001 rows: a part block
    ("sum-rows-short", [(4096, 128)], "contiguous", {"dim": -1, "nvidia_variant": "rows_short"}),
    ("sum-rows-short-part-lanes", [(1001, 96)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_short"}),
    ("sum-rows-short-one-lane", [(777, 8)], "contiguous", {"dim": -1, "nvidia_variant": "rows_short"}),
    ("sum-rows-short-2-rows-per-group", [(1001, 256)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_SHORT_ROWS": 2}, "nvidia_variant": "rows_short"}),
    ("sum-rows-short-strided-grid", [(300001, 32)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_SHORT_WAVES": 1}, "nvidia_variant": "rows_short"}),
    # row starts 16-byte aligned but not back to back: one kept dim of stride 160; two kept dims (the
    # offset calculator)
    ("sum-rows-short-padded", [(1001, 128)], "padded-rows", {"dim": -1, "nvidia_variant": "rows_short"}),
    ("sum-rows-short-batched", [(7, 143, 64)], "permuted-batch",
     {"dim": -1, "nvidia_variant": "rows_short"}),
    # planned rows_short, the base not 16-byte aligned: the rows kernel runs
    ("sum-rows-short-unaligned-base", [(1001, 128)], "offset", {"dim": -1, "nvidia_variant": "rows_short"}),
    # rows not whole vectors long (16-bit), row starts 2 elements off 16-byte steps, longer rows, or
    # turned off: rows_dense (rows_aligned where a row is whole rounds of 32 lanes of 32 elements)
    ("sum-rows-short-odd-length", [(1001, 100)], "contiguous",
     {"dim": -1, "nvidia_variant": {"float32": "rows_short", "float16": "rows_dense", "bfloat16": "rows_dense"}}),
    ("sum-rows-short-shifted", [(1001, 128)], "shifted-rows",
     {"dim": -1, "nvidia_variant": "rows_dense"}),
    ("sum-rows-short-too-long", [(1001, 1024)], "contiguous", {"dim": -1, "nvidia_variant": "rows_aligned"}),
    ("sum-rows-short-off", [(4096, 128)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_SHORT_ROWS": 0}, "nvidia_variant": "rows_dense"}),
]


@pytest.mark.parametrize("dt", dtype_params())
@pytest.mark.parametrize("case", VARIANT_CASES, ids=[c[0] for c in VARIANT_CASES])
def test_variant(cuda_backend, case, dt, record_property, monkeypatch, request):
    """reduce_sum() and prepare_reduce_sum on layouts chosen to reach every
    kernel variant (the variant is recorded in the junit XML); the sanitizer
    runs these. A case's "tune" values are OPRT_TUNE_* overrides
    (ops/common/tuning.h) that reach variants the planner keeps for other
    shapes."""
    name, shapes, layout, params = case
    set_tune(params.get("tune", {}), monkeypatch, request)
    src, dim = variant_inputs(shapes, layout, dt)[0], params["dim"]
    result = oprt.reduce_sum(src, dim, backend=cuda_backend)
    out = torch.full(result.shape, float("nan"), dtype=dt, device="cuda")
    with oprt.prepare_reduce_sum(out, src, dim, backend=cuda_backend) as prepared:
        prepared.run()
        variant = prepared.variant
    _check_sum(out, src, _dims(src, dim), name)
    equal_bits(result, out, f"{name}: reduce_sum() vs prepared")
    record_property("variant", variant)
    print(f"{name} {dt}: variant {variant}")
    assert_variant(cuda_backend, name, variant, expected_variant(params, dt))


# -- CUDA graphs ---------------------------------------------------------------------

# (name, input shape, dtype, dim)
GRAPH_CASES = [
    ("sum-rows-4x2^24", (4, 1 << 24), torch.float32, -1),
    ("sum-all-2^24", (1 << 24,), torch.float32, None),
    ("sum-columns", (4096, 1024), torch.float32, 0),
]


@pytest.mark.parametrize("case", GRAPH_CASES, ids=[c[0] for c in GRAPH_CASES])
def test_cuda_graph_capture(cuda_backend, case):
    name, shape, dtype, dim = case
    dims = None if dim is None else (dim % len(shape),)
    out_shape = () if dims is None else tuple(s for d, s in enumerate(shape) if d not in dims)
    check_graph_capture(
        name,
        lambda o, x: oprt.prepare_reduce_sum(o, *x, dim, backend=cuda_backend),
        lambda o, x: oprt.reduce_sum_(o, *x, dim, backend=cuda_backend),
        lambda seed: [randn(shape, dtype, seed)],
        lambda x: torch.empty(out_shape, dtype=dtype, device="cuda"),
        lambda o, x, msg: _check_sum(o, x[0], dims, msg))


# -- split sums run after run ---------------------------------------------------------

SPLIT_SUMS = [((4, 1 << 20), torch.float32, (1,)), ((4096, 1024), torch.bfloat16, (0,)),
              ((1 << 22,), torch.float32, None), ((3, 1000, 96), torch.float16, (1,)),
              ((5, 300001), torch.float32, (1,)), ((2001, 96), torch.float32, (0,))]  # unaligned bases below


def _other_ops(backend, noise):
    """A call of every other op on `noise` (at its default params) that the
    backend has: those with a workspace take the same per-thread one."""
    calls = []
    for description in DESCRIPTIONS.values():
        if description.name == "reduce_sum":
            continue
        inputs = [noise] * len(description.inputs)
        function = getattr(oprt, description.name)
        try:
            function(*inputs, backend=backend)
        except oprt.BackendUnavailableError:
            continue
        calls.append(lambda f=function, x=inputs: f(*x, backend=backend))
    return calls


def test_split_sums_interleaved(cuda_backend):
    """Sums split across blocks, run again and again between other ops that
    write the same per-thread workspace, on two streams and through
    unaligned views: right every time (tilelang: each split's last block
    adds the partials, counted by counters that every run must leave at 0)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    noise = randn((64, 1 << 16), torch.float32, 90)
    others = _other_ops(cuda_backend, noise)
    for attempt in range(3):
        for index, (shape, dtype, dims) in enumerate(SPLIT_SUMS):
            x = randn(shape, dtype, 91 + index + attempt)
            if index >= 4:  # dense, 4 bytes past a 16-byte boundary: the scalar kernels
                x = randn((x.numel() + 1,), dtype, 91 + attempt)[1:].view(shape)
            for stream in (torch.cuda.current_stream(), side):
                with torch.cuda.stream(stream):
                    got = oprt.reduce_sum(x, dims, backend=cuda_backend)
                    for other in others:
                        other()  # a workspace of its own (an along-dim op's stats) in the same place
                    again = oprt.reduce_sum(x, dims, backend=cuda_backend)
                stream.synchronize()
                msg = f"{shape} {dtype} dims {dims}, attempt {attempt}"
                _check_sum(got, x, dims, msg)
                assert_bitwise_equal(again, got, msg)


@pytest.mark.parametrize("dt", dtype_params(torch.float32, torch.bfloat16))
@pytest.mark.parametrize("shape,dim,tune", [
    ((4099, 1024), 0, {}),
    ((4099, 1024), 0, {"REDUCE_COLUMN_CLUSTER": 0}),
    ((6, 1001, 128), 1, {}),
    ((1 << 16, 16), 0, {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1}),
], ids=["planned", "split", "planes", "narrow-cluster"])
def test_sum_columns_whole_rows_match_general_loop(cuda_backend, dt, shape, dim, tune, monkeypatch, request):
    """nvidia: the columns kernels' whole-rows loop (add_whole_rows) adds
    each column's rows in the general loop's order: the same bits, and the
    right sum."""
    if cuda_backend != "nvidia":
        pytest.skip("the nvidia backend's column kernels")
    src = randn(shape, dt, 35)
    sums = {}
    for whole in (0, 1):
        set_tune({**tune, "REDUCE_COLUMN_WHOLE": whole}, monkeypatch, request)
        sums[whole] = oprt.reduce_sum(src, dim, backend=cuda_backend)
        with oprt.prepare_reduce_sum(torch.empty_like(sums[whole]), src, dim, backend=cuda_backend) as prepared:
            assert ("whole" in prepared.variant) == (whole > 0), f"{shape}, whole {whole}: {prepared.variant}"
    _check_sum(sums[1], src, (dim,), f"{shape} over {dim}, whole rows")
    assert_bitwise_equal(sums[1], sums[0], f"{shape} over {dim}: the whole-rows loop vs the general loop")


# -- determinism -----------------------------------------------------------------------

# (name, dim, input shape, dtype)
DETERMINISM_CASES = [
    ("sum-2x2^24", -1, (2, 1 << 24), torch.float32),
    ("sum-all-2^24", None, (1 << 24,), torch.float32),
    ("sum-all-2^26-bf16", None, (1 << 26,), torch.bfloat16),
    ("sum-columns-2^22x8", 0, (1 << 22, 8), torch.float32),
    ("sum-square-all", None, SQUARE, torch.float16),
    ("sum-square-dim0-bf16", 0, SQUARE, torch.bfloat16),  # columns_cluster
]


@pytest.mark.parametrize("case", DETERMINISM_CASES, ids=[c[0] for c in DETERMINISM_CASES])
def test_deterministic(cuda_backend, case):
    """Bit-identical results run after run (no atomics in a different order)."""
    name, dim, shape, dtype = case
    src = randn(shape, dtype, 60)
    check_deterministic(name, lambda: oprt.reduce_sum(src, dim, backend=cuda_backend))


# -- large tensors (>= 64M elements) ------------------------------------------------

BIG = 1 << 26


@pytest.mark.parametrize("shape,dims", [((BIG,), None), (SQUARE, (1,)), (SQUARE, (0,)), (SQUARE, None),
                                        ((2, 1 << 25), (1,)), ((1 << 24, 4), (0,))],
                         ids=["64M-all", "rows", "columns", "square-all", "2-long-rows", "4-long-columns"])
def test_large_reduce_sum(cuda_backend, shape, dims):
    src = randn(shape, torch.float32, 7)
    result = oprt.reduce_sum(src, dims, backend=cuda_backend)
    _check_sum(result, src, dims, f"reduce_sum {shape} over {dims}")
    half = src.to(torch.bfloat16)
    _check_sum(oprt.reduce_sum(half, dims, backend=cuda_backend), half, dims, f"bf16 reduce_sum {shape}")


def test_sum_past_2_to_the_31(cuda_backend):
    """A full reduction of 2**31 + 7 bfloat16 elements (4 GiB)."""
    n = (1 << 31) + 7
    free, _ = torch.cuda.mem_get_info()
    if free < 6 * 2**30:
        pytest.skip(f"needs ~6 GiB of free GPU memory, {free / 2**30:.1f} GiB free")
    src = torch.ones(n, dtype=torch.bfloat16, device="cuda")
    src[-7:] = 1000.0
    result = oprt.reduce_sum(src, None, backend=cuda_backend).double().item()
    exact = float(n - 7) + 7000.0
    # float32 accumulation of 2**31 ones, rounded to bfloat16 (8 bits of mantissa)
    assert abs(result - exact) <= 2 ** -7 * exact, f"reduce_sum of 2**31+7 elements: {result} vs {exact}"
