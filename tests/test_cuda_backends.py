"""GPU-only properties of every backend that runs on CUDA tensors (nvidia,
tilelang): large tensors, more than 2**31 elements, non-default streams,
CUDA graph capture, determinism of the split/long-row regimes, tensors on a
non-current device, and a CUDA error surfacing as OperatorRuntimeError.

Each test takes the `backend` fixture, so `--backend nvidia` (or tilelang)
selects it; a backend that does not run on CUDA is skipped with the reason.
Everything is compared on the GPU (float64 references there too), so the
whole file stays around a minute on an H200; the 2**31 copy needs ~8 GiB.

    python -m pytest tests/test_cuda_backends.py --backend nvidia -q
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys

import pytest
import torch

import operator_runtime as oprt
from operator_runtime import Backend
from operator_runtime._internal.backends import backend_impl
from operator_runtime_testing import ACCUMULATION_EPS, TOLERANCES, assert_bitwise_equal, reduction_tolerance

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture
def cuda_backend(backend):
    """`backend` (available: conftest skips the others), if it runs on CUDA tensors."""
    device_type = backend_impl(Backend(backend)).device_type
    if device_type != "cuda":
        pytest.skip(f"a CUDA-backend test; backend {backend} runs on {device_type} tensors")
    return backend


def _randn(shape, dtype=torch.float32, seed=0, device="cuda"):
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dtype)


# OPRT_HOST_REFERENCE=1: references and comparisons on the CPU, so under
# compute-sanitizer the only GPU kernels are ours plus torch's data setup
# (torch's own CUDA reductions trip racecheck/initcheck by themselves).
HOST_REFERENCE = os.environ.get("OPRT_HOST_REFERENCE") == "1"


def _host(t):
    return t.cpu() if HOST_REFERENCE else t


def _equal_bits(a, b, msg):
    assert_bitwise_equal(_host(a), _host(b), msg)


def _check_close(actual, expected64, rtol, atol, msg):
    """|actual - expected| <= atol + rtol |expected| everywhere (on the GPU
    unless OPRT_HOST_REFERENCE=1)."""
    actual, expected64 = _host(actual), _host(expected64)
    assert actual.shape == expected64.shape, f"{msg}: shape {tuple(actual.shape)} vs {tuple(expected64.shape)}"
    error = (actual.double() - expected64).abs()
    bad = ~(error <= atol + rtol * expected64.abs())  # NaN counts as bad
    count = int(bad.sum())
    if count:
        first = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(f"{msg}: {count} of {actual.numel()} elements off (rtol {rtol:.3g}, atol {atol:.3g}); "
                             f"first at {first}: {actual[first].item()!r} vs {expected64[first].item()!r}")


def _check_sum(actual, src, dims, msg):
    dims = tuple(range(src.dim())) if dims is None else dims
    src = _host(src)
    expected = src.double().sum(dims)
    count = math.prod(src.shape[d] for d in dims)
    rtol, atol = reduction_tolerance(actual.dtype, count, float(src.abs().float().mean()))
    _check_close(actual, expected, rtol, atol, msg)


def _check_softmax(actual, src, dim, msg):
    src = _host(src)
    expected = torch.softmax(src.double(), dim)
    rtol, atol = TOLERANCES[actual.dtype]
    rtol += 4 * ACCUMULATION_EPS[actual.dtype] * math.sqrt(src.shape[dim])
    _check_close(actual, expected, rtol, atol, msg)


def _check_add(actual, a, b, msg):
    rtol, atol = TOLERANCES[actual.dtype]
    a, b = _host(a), _host(b)
    _check_close(actual, a.double() + b.double(), rtol, atol, msg)


# -- every kernel variant, at moderate sizes (also the compute-sanitizer subset) --------

def _offset(t):
    """`t`'s values in storage one element past a 16-byte boundary."""
    base = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
    return base[1:].view(t.shape).copy_(t)


# softmax over dim 0 (nvidia): tiles of 128 bytes in float32, 64 in 16-bit, so 1000 x 4096 has 128
# tiles, 2 blocks each (a block per SM); tiles of 128 bytes in 16-bit when told (64 tiles, 4 blocks
# each). 8192 rows: 16 blocks of 64 KB per tile in float32, 8 in 16-bit.
_CLUSTER_2 = "columns_cluster2"
_CLUSTER_WIDE = {"float32": "columns_cluster2", "float16": "columns_cluster4", "bfloat16": "columns_cluster4"}
_CLUSTER_8192 = {"float32": "columns_cluster16", "float16": "columns_cluster8", "bfloat16": "columns_cluster8"}
# softmax rows_shared on rows of ~40000 elements: two slices of <= 80 KB in float32, one block in 16-bit.
_SHARED_40K = {"float32": "rows_shared2", "float16": "rows_shared1", "bfloat16": "rows_shared1"}

# The elementwise flat kernel wherever it applies (planned where rows cannot be whole 16-byte
# vectors: ops/common/nvidia/elementwise.cuh).
_FLAT = {"tune": {"ELEMENTWISE_FLAT": 1}, "nvidia_variant": "flat"}
# Same-dtype copies whose bytes are not whole 16-byte words: the dense kernel (planned), or memcpy when told.
_ODD_COPY = {"nvidia_variant": "dense"}

# (name, op, input shapes, input layout, params, out dtype for copy or None)
VARIANT_CASES = [
    ("copy-memcpy", "copy", [(1 << 20,)], "contiguous", {}, None),
    ("copy-convert-dense", "copy", [(1000, 1000)], "contiguous", {}, torch.float32),
    ("copy-rows", "copy", [(300, 1000)], "sliced-rows", {}, None),
    ("copy-strided", "copy", [(64, 50, 30)], "permuted", {}, None),
    # odd rows on both sides (1001 x 777): the scalar tiles; whole 16-byte vectors: transpose_vec, with
    # partial tiles (1000 x 776), batched (a dim outside the swapped pair), or a base one element
    # past a 16-byte boundary (planned transpose_vec, transpose_tiled runs)
    ("copy-transpose-tiled", "copy", [(1001, 777)], "transposed", {"nvidia_variant": "transpose_tiled"}, None),
    ("copy-transpose-vec", "copy", [(1024, 768)], "transposed", {"nvidia_variant": "transpose_vec"}, None),
    ("copy-transpose-vec-partial-tiles", "copy", [(1000, 776)], "transposed", {"nvidia_variant": "transpose_vec"},
     None),
    ("copy-transpose-vec-batched", "copy", [(3, 200, 136)], "batch-transposed", {"nvidia_variant": "transpose_vec"},
     None),
    ("copy-transpose-vec-unaligned-base", "copy", [(1000, 776)], "transposed-offset", {}, None),
    # out rows not whole vectors (777): transpose_vec_shift (16-byte src loads, shifted out stores)
    ("copy-transpose-vec-shift", "copy", [(1000, 777)], "transposed", {"nvidia_variant": "transpose_vec_shift"}, None),
    ("copy-transpose-vec-shift-batched", "copy", [(3, 200, 137)], "batch-transposed",
     {"nvidia_variant": "transpose_vec_shift"}, None),
    # out's base one element past a 16-byte boundary, rows whole vectors: planned transpose_vec, the shift runs
    ("copy-transpose-vec-out-offset", "copy", [(1024, 768)], "transposed",
     {"out_offset": True, "nvidia_variant": "transpose_vec"}, None),
    ("copy-transpose-odd-told-tiled", "copy", [(1000, 777)], "transposed",
     {"tune": {"COPY_TRANSPOSE_VEC": 2}, "nvidia_variant": "transpose_tiled"}, None),
    ("copy-broadcast", "copy", [(1, 513)], "expand-rows", {}, None),
    ("add-dense", "vector_add", [(1 << 20,), (1 << 20,)], "contiguous", {}, None),
    ("add-dense-unaligned", "vector_add", [(100003,), (100003,)], "offset", {}, None),
    ("add-rows-broadcast", "vector_add", [(512, 1000), (1000,)], "contiguous", {}, None),
    ("add-strided", "vector_add", [(700, 300), (700, 300)], "transposed", {}, None),
    # flat (told: OPRT_TUNE_ELEMENTWISE_FLAT=1, wherever it applies): out contiguous, b a bias row read
    # whole within a row (1000) or across row ends and unaligned (1001), one value per row, rows
    # shorter than a vector (3), a 3-D layout (b one value per middle index), a misaligned a (every
    # element scalar), and copies of a broadcast row and of a broadcast column converted to float32
    ("add-flat-bias", "vector_add", [(512, 1000), (1000,)], "contiguous", _FLAT, None),
    ("add-flat-bias-odd", "vector_add", [(300, 1001), (1001,)], "contiguous", _FLAT, None),
    ("add-flat-column", "vector_add", [(300, 1001), (300, 1)], "contiguous", _FLAT, None),
    ("add-flat-short-rows", "vector_add", [(4099, 3), (3,)], "contiguous", _FLAT, None),
    # rows shorter than a vector with one value per row: the offset steps along its 2-D layout
    ("add-flat-short-column", "vector_add", [(4099, 3), (4099, 1)], "contiguous", _FLAT, None),
    ("add-flat-short-column-planned", "vector_add", [(4099, 3), (4099, 1)], "contiguous", {"nvidia_variant": "flat"},
     None),
    ("copy-flat-short-column", "copy", [(700, 3)], "expand-columns", _FLAT, None),
    ("add-flat-3d", "vector_add", [(6, 70, 33), (70, 1)], "contiguous", _FLAT, None),
    ("add-flat-unaligned", "vector_add", [(300, 1001), (1001,)], "offset", _FLAT, None),
    ("copy-flat-row", "copy", [(1, 513)], "expand-rows", _FLAT, None),
    ("copy-flat-column-convert", "copy", [(700, 5)], "expand-columns", _FLAT, torch.float32),
    # planned flat: float32 rows not whole vectors (1001), short rows (16, and 3: under a vector); told back to rows
    ("add-flat-bias-odd-planned", "vector_add", [(300, 1001), (1001,)], "contiguous",
     {"nvidia_variant": {"float32": "flat", "float16": "rows", "bfloat16": "rows"}}, None),
    ("add-flat-short-rows-planned", "vector_add", [(4099, 16), (16,)], "contiguous", {"nvidia_variant": "flat"},
     None),
    ("add-flat-shorter-rows-planned", "vector_add", [(4099, 3), (3,)], "contiguous", {"nvidia_variant": "flat"},
     None),
    ("add-rows-bias-odd-told", "vector_add", [(300, 1001), (1001,)], "contiguous",
     {"tune": {"ELEMENTWISE_FLAT": 0}, "nvidia_variant": "rows"}, None),
    # odd byte counts through the dense kernel (planned) instead of cudaMemcpyAsync (told)
    ("copy-odd-kernel", "copy", [(100003,)], "contiguous", _ODD_COPY, None),
    ("copy-odd-kernel-unaligned", "copy", [(100003,)], "offset", _ODD_COPY, None),
    ("copy-odd-memcpy-told", "copy", [(100003,)], "contiguous",
     {"tune": {"COPY_ODD_KERNEL": 0}, "nvidia_variant": "memcpy"}, None),
    # one contiguous run per output, 16-byte aligned rows of whole rounds (nvidia: rows_aligned), split over
    # blocks (the last piece of a row a partial round where the row is not whole rounds); the same without
    # rows_aligned (rows_dense); several runs per output: rows
    ("sum-rows", "reduce_sum", [(512, 4096)], "contiguous", {"dim": -1, "nvidia_variant": "rows_aligned"}, None),
    ("sum-rows-split", "reduce_sum", [(2, 1 << 20)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_aligned_split"}, None),
    ("sum-rows-split-partial-round", "reduce_sum", [(2, 1000008)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_aligned_split"}, None),
    ("sum-all-split", "reduce_sum", [(1 << 22,)], "contiguous", {"dim": None, "nvidia_variant": "rows_aligned_split"},
     None),
    # rows_aligned loads 32 elements a lane per round (8 vectors in float32, 4 in 16-bit): the other
    # count in every dtype, unsplit and split
    *[(f"sum-rows-unroll{u}{suffix}", "reduce_sum", [shape], "contiguous",
       {"dim": -1, "tune": {"REDUCE_ALIGNED_UNROLL": u}, "nvidia_variant": variant}, None)
      for u in (4, 8)
      for suffix, shape, variant in (("", (512, 4096), "rows_aligned"), ("-split", (2, 1000008), "rows_aligned_split"))],
    ("sum-rows-dense", "reduce_sum", [(512, 4096)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_ALIGNED": 0}, "nvidia_variant": "rows_dense"}, None),
    ("sum-rows-dense-split", "reduce_sum", [(2, 1000008)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_ALIGNED": 0}, "nvidia_variant": "rows_dense_split"}, None),
    # split rows with 32 threads a task (a block's 8 tasks span rows); then 64 rows with the base unaligned
    # (the plan's rows_aligned_split runs as rows_dense_split)
    ("sum-rows-split-groups", "reduce_sum", [(3, 1 << 20)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_MAX_TPR": 32}, "nvidia_variant": "rows_aligned_split"}, None),
    ("sum-rows-split-groups-dense", "reduce_sum", [(3, 1 << 20)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_MAX_TPR": 32, "REDUCE_ALIGNED": 0}, "nvidia_variant": "rows_dense_split"}, None),
    ("sum-rows-split-many", "reduce_sum", [(64, 1 << 16)], "offset", {"dim": -1}, None),
    ("sum-runs", "reduce_sum", [(2, 8192, 1024)], "contiguous", {"dim": (0, 2), "nvidia_variant": "rows"}, None),
    ("sum-runs-split", "reduce_sum", [(64, 2, 4096)], "contiguous", {"dim": (0, 2), "nvidia_variant": "rows_split"},
     None),
    ("sum-rows-dense-off", "reduce_sum", [(512, 4096)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_DENSE_ROWS": 0}, "nvidia_variant": "rows"}, None),
    ("sum-rows-unaligned", "reduce_sum", [(33, 1001)], "offset", {"dim": -1}, None),
    ("sum-strided", "reduce_sum", [(300, 2000)], "transposed", {"dim": 0}, None),
    ("sum-columns", "reduce_sum", [(4096, 1000)], "contiguous", {"dim": 0}, None),
    ("sum-columns-split", "reduce_sum", [(1 << 18, 16)], "contiguous", {"dim": 0}, None),
    # rows not 16-byte aligned (odd widths): 16-bit vectors loaded aligned and shifted into place
    # across lanes (float32 planned on element loads; shifted when forced); split; tiles 1, 2 and 4
    # lanes wide; planes (a kept dim outside the columns); element loads forced
    ("sum-columns-shifted", "reduce_sum", [(2047, 2053)], "contiguous",
     {"dim": 0, "nvidia_variant": {"float32": "columns_split", "float16": "columns_shifted_split",
                                   "bfloat16": "columns_shifted_split"}}, None),
    ("sum-columns-shifted-float32", "reduce_sum", [(2047, 2053)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_SHIFTED": 2}, "nvidia_variant": "columns_shifted_split"}, None),
    ("sum-columns-shifted-split", "reduce_sum", [(1 << 16, 37)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_SHIFTED": 2}, "nvidia_variant": "columns_shifted_split"}, None),
    ("sum-columns-shifted-narrow", "reduce_sum", [(30001, 5)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_SHIFTED": 2}, "nvidia_variant": "columns_shifted_split"}, None),
    ("sum-columns-shifted-planes", "reduce_sum", [(7, 301, 33)], "contiguous",
     {"dim": 1, "tune": {"REDUCE_COLUMN_SHIFTED": 2}, "nvidia_variant": "columns_shifted"}, None),
    ("sum-columns-shifted-off", "reduce_sum", [(2047, 2053)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_SHIFTED": 0}, "nvidia_variant": "columns_split"}, None),
    # aligned rows planned, the base one element past a 16-byte boundary at execute: shifted (16-bit)
    ("sum-columns-unaligned-base", "reduce_sum", [(4096, 1000)], "offset", {"dim": 0}, None),
    # a tile's splits as the blocks of a cluster, merged through distributed shared memory (planned
    # where they fill half the GPU and rows are 16-byte aligned; forced here on smaller shapes and
    # odd rows): clusters of 16, 8, 4 and 2; unaligned rows (16-bit: shifted loads); tiles wider than
    # the columns (planes of 40, 3 columns: ranks with no columns to write); a base off alignment
    ("sum-columns-cluster", "reduce_sum", [(4096, 1000)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1}, "nvidia_variant": "columns_cluster16"}, None),
    ("sum-columns-cluster8", "reduce_sum", [(4096, 1000)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1, "REDUCE_COLUMN_CLUSTER_MAX": 8},
      "nvidia_variant": "columns_cluster8"}, None),
    ("sum-columns-cluster2", "reduce_sum", [(2047, 2053)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER": 2, "REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1,
                         "REDUCE_COLUMN_CLUSTER_MAX": 2},
      "nvidia_variant": {"float32": "columns_cluster2", "float16": "columns_shifted_cluster2",
                         "bfloat16": "columns_shifted_cluster2"}}, None),
    ("sum-columns-cluster-shifted", "reduce_sum", [(2047, 2053)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER": 2, "REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1,
                         "REDUCE_COLUMN_CLUSTER_MAX": 4, "REDUCE_COLUMN_CLUSTER_TX": 32},
      "nvidia_variant": {"float32": "columns_cluster4", "float16": "columns_shifted_cluster4",
                         "bfloat16": "columns_shifted_cluster4"}}, None),
    ("sum-columns-cluster-planes", "reduce_sum", [(5, 4000, 40)], "contiguous",
     {"dim": 1, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1}, "nvidia_variant": "columns_cluster16"}, None),
    ("sum-columns-cluster-narrow", "reduce_sum", [(30001, 3)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1}}, None),
    ("sum-columns-cluster-unaligned-base", "reduce_sum", [(4096, 1000)], "offset",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1}, "nvidia_variant": "columns_cluster16"}, None),
    # tiles of whole aligned vectors, one reduced dim: the row loop with no per-row checks (add_whole_rows);
    # rows not whole rounds (4099), split or clustered, planes (a kept dim outside the columns)
    ("sum-columns-whole-split", "reduce_sum", [(4099, 256)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER": 0}, "nvidia_variant": "columns_whole_split"}, None),
    ("sum-columns-whole-cluster8", "reduce_sum", [(4099, 1024)], "contiguous",
     {"dim": 0, "tune": {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1, "REDUCE_COLUMN_CLUSTER_MAX": 8},
      "nvidia_variant": "columns_whole_cluster8"}, None),
    ("sum-columns-whole-planes", "reduce_sum", [(6, 1001, 128)], "contiguous",
     {"dim": 1, "nvidia_variant": {"float32": "columns_whole_cluster8", "float16": "columns_whole_split",
                                   "bfloat16": "columns_whole_split"}}, None),
    ("sum-middle", "reduce_sum", [(16, 300, 64)], "contiguous", {"dim": 1}, None),
    ("sum-zeros", "reduce_sum", [(7, 0)], "contiguous", {"dim": 1}, None),
    # many short rows of whole 16-byte vectors, 16-byte aligned (nvidia: rows_short): lanes per row
    # 16 / 8 (float32 / 16-bit), 16 / 8 with vectors past the row end, 1, 32 / 16 with 2 rows per group,
    # a grid that strides (4688 / 2344 blocks, more than one resident grid); 1001 rows: a part block
    ("sum-rows-short", "reduce_sum", [(4096, 128)], "contiguous", {"dim": -1, "nvidia_variant": "rows_short"}, None),
    ("sum-rows-short-part-lanes", "reduce_sum", [(1001, 96)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_short"}, None),
    ("sum-rows-short-one-lane", "reduce_sum", [(777, 8)], "contiguous", {"dim": -1, "nvidia_variant": "rows_short"},
     None),
    ("sum-rows-short-2-rows-per-group", "reduce_sum", [(1001, 256)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_SHORT_ROWS": 2}, "nvidia_variant": "rows_short"}, None),
    ("sum-rows-short-strided-grid", "reduce_sum", [(300001, 32)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_SHORT_WAVES": 1}, "nvidia_variant": "rows_short"}, None),
    # row starts 16-byte aligned but not back to back: one kept dim of stride 160; two kept dims (the
    # offset calculator)
    ("sum-rows-short-padded", "reduce_sum", [(1001, 128)], "padded-rows", {"dim": -1, "nvidia_variant": "rows_short"},
     None),
    ("sum-rows-short-batched", "reduce_sum", [(7, 143, 64)], "permuted-batch",
     {"dim": -1, "nvidia_variant": "rows_short"}, None),
    # planned rows_short, the base not 16-byte aligned: the rows kernel runs
    ("sum-rows-short-unaligned-base", "reduce_sum", [(1001, 128)], "offset", {"dim": -1, "nvidia_variant": "rows_short"},
     None),
    # rows not whole vectors long (16-bit), row starts 2 elements off 16-byte steps, longer rows, or
    # turned off: rows_dense (rows_aligned where a row is whole rounds of 32 lanes of 32 elements)
    ("sum-rows-short-odd-length", "reduce_sum", [(1001, 100)], "contiguous",
     {"dim": -1, "nvidia_variant": {"float32": "rows_short", "float16": "rows_dense", "bfloat16": "rows_dense"}},
     None),
    ("sum-rows-short-shifted", "reduce_sum", [(1001, 128)], "shifted-rows",
     {"dim": -1, "nvidia_variant": "rows_dense"}, None),
    ("sum-rows-short-too-long", "reduce_sum", [(1001, 1024)], "contiguous", {"dim": -1, "nvidia_variant": "rows_aligned"},
     None),
    ("sum-rows-short-off", "reduce_sum", [(4096, 128)], "contiguous",
     {"dim": -1, "tune": {"REDUCE_SHORT_ROWS": 0}, "nvidia_variant": "rows_dense"}, None),
    ("softmax-rows-warp", "softmax", [(4096, 100)], "contiguous", {"dim": -1}, None),
    ("softmax-rows-warp-unaligned", "softmax", [(333, 37)], "offset", {"dim": -1}, None),
    # rows back to back, whole vectors long (nvidia: the dense kernels); sliced rows, an
    # unaligned base (planned dense, the general kernel runs) or the dense kernel turned off
    ("softmax-rows-warp-dense", "softmax", [(4096, 128)], "contiguous", {"dim": -1, "nvidia_variant": "rows_warp_dense"},
     None),
    ("softmax-rows-warp-sliced", "softmax", [(4096, 128)], "sliced-rows", {"dim": -1, "nvidia_variant": "rows_warp"},
     None),
    ("softmax-rows-block-dense", "softmax", [(256, 8192)], "contiguous", {"dim": -1, "nvidia_variant": "rows_block_dense"},
     None),
    ("softmax-rows-block-dense-1024-threads", "softmax", [(64, 16384)], "contiguous",
     {"dim": -1, "nvidia_variant": {"float32": "rows_block_dense"}}, None),
    ("softmax-rows-block-dense-unaligned-base", "softmax", [(256, 8192)], "offset",
     {"dim": -1, "nvidia_variant": "rows_block_dense"}, None),
    # rows back to back but not whole vectors long: shifted onto 16-byte boundaries row by row
    ("softmax-rows-block-dense-odd", "softmax", [(300, 12289)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_block_dense"}, None),
    ("softmax-rows-block-dense-odd-shifted", "softmax", [(300, 12289)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_FLAT": 0}, "nvidia_variant": "rows_block_dense"}, None),
    ("softmax-rows-block-dense-odd-short", "softmax", [(1000, 2053)], "contiguous",
     {"dim": -1, "nvidia_variant": "rows_block_dense"}, None),
    ("softmax-rows-warp-dense-odd", "softmax", [(999, 37)], "contiguous", {"dim": -1, "nvidia_variant": "rows_warp_dense"},
     None),
    ("softmax-rows-block-sliced", "softmax", [(256, 8192)], "sliced-rows", {"dim": -1, "nvidia_variant": "rows_block"},
     None),
    ("softmax-rows-block-general", "softmax", [(256, 8192)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_DENSE": 0}, "nvidia_variant": "rows_block"}, None),
    ("softmax-rows-block", "softmax", [(256, 8000)], "contiguous", {"dim": -1}, None),
    ("softmax-rows-warp-4-slots", "softmax", [(512, 1000)], "contiguous", {"dim": -1}, None),
    ("softmax-rows-block-8-slots", "softmax", [(64, 20000)], "offset", {"dim": -1}, None),
    ("softmax-rows-block-1024-threads", "softmax", [(64, 16000)], "offset", {"dim": -1}, None),
    ("softmax-rows-cluster2", "softmax", [(64, 50000)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0}}, None),
    ("softmax-rows-cluster4-unaligned", "softmax", [(7, 65537)], "offset", {"dim": -1}, None),
    ("softmax-rows-cluster8", "softmax", [(16, 200001)], "contiguous", {"dim": -1, "tune": {"SOFTMAX_SHARED": 0}},
     None),
    ("softmax-rows-resident", "softmax", [(3, 300001)], "contiguous", {"dim": -1}, None),
    ("softmax-rows-resident-unaligned", "softmax", [(2, (1 << 21) + 3)], "offset", {"dim": -1}, None),
    ("softmax-rows-resident-partly-cached", "softmax", [(5, 270001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT_CACHE": 700}}, None),
    # more than one round of loads per thread outside shared memory: read again after the barrier
    ("softmax-rows-resident-rest-reread", "softmax", [(5, 700001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT_CACHE": 100}}, None),
    # the cache filled by each thread's own copies (rows_resident_copies): planned for chunks of at least 1.5
    # times the cache (float32 here, 363 KB; 16-bit chunks half that stay bulk), and told on the shapes above
    ("softmax-rows-resident-copies", "softmax", [(1, 12_000_001)], "offset",
     {"dim": -1, "nvidia_variant": {"float32": "rows_resident_copies", "float16": "rows_resident",
                                    "bfloat16": "rows_resident"}}, None),
    ("softmax-rows-resident-copies-told", "softmax", [(2, (1 << 21) + 3)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT_COPIES": 1}, "nvidia_variant": "rows_resident_copies"}, None),
    ("softmax-rows-resident-copies-partly-cached", "softmax", [(5, 270001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT_COPIES": 1, "SOFTMAX_RESIDENT_CACHE": 700}}, None),
    ("softmax-rows-resident-copies-rest-reread", "softmax", [(5, 700001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT_COPIES": 1, "SOFTMAX_RESIDENT_CACHE": 100}}, None),
    # long rows in (row, chunk) tasks over two launches (nvidia: rows_split2), or one cooperative kernel
    ("softmax-rows-split", "softmax", [(3, 300001)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_RESIDENT": 0}, "nvidia_variant": "rows_split2"}, None),
    ("softmax-rows-split-unaligned", "softmax", [(5, 270001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0, "SOFTMAX_RESIDENT": 0}, "nvidia_variant": "rows_split2"}, None),
    ("softmax-rows-split-cooperative", "softmax", [(5, 270001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0, "SOFTMAX_RESIDENT": 0, "SOFTMAX_SPLIT_LAUNCHES": 1},
      "nvidia_variant": "rows_split"}, None),
    # more than two long rows per SM, a block per row reading it twice (nvidia: rows_twice)
    ("softmax-rows-twice", "softmax", [(270, 40001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0}, "nvidia_variant": "rows_twice"}, None),
    # the row's first vectors kept in shared memory between the passes: 8 KB of it (the rest read twice), none
    ("softmax-rows-twice-partly-cached", "softmax", [(270, 40001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0, "SOFTMAX_TWICE_CACHE_KB": 8}, "nvidia_variant": "rows_twice"}, None),
    ("softmax-rows-twice-no-cache", "softmax", [(270, 40001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0, "SOFTMAX_TWICE_CACHE_KB": 0}, "nvidia_variant": "rows_twice"}, None),
    ("softmax-rows-twice-cached", "softmax", [(300, 70001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0, "SOFTMAX_TWICE_CACHE_KB": 1 << 20}, "nvidia_variant": "rows_twice"},
     None),
    ("softmax-rows-twice-one-block-per-sm", "softmax", [(300, 33000)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_TWICE_BLOCKS": 1, "SOFTMAX_SHARED": 0}, "nvidia_variant": "rows_twice"}, None),
    # rows of 4+ rounds of 1024 threads' loads: 1024-thread blocks (float32 rows of 65536+)
    ("softmax-rows-twice-1024-threads", "softmax", [(300, 70001)], "offset",
     {"dim": -1, "tune": {"SOFTMAX_SHARED": 0}, "nvidia_variant": "rows_twice"}, None),
    # rows_twice's rows where they start 16-byte aligned and are whole vectors long: a cluster per row, each
    # block's slice (<= 80 KB) in shared memory (nvidia: rows_shared<C>). 40008: the last slice shorter, a
    # part bulk copy; rows padded apart (the offset calculator); slices of <= 10 KB (clusters of 16 / 8);
    # one block per row (160 / 80 KB); planned, but the base not 16-byte aligned at execute: rows_twice runs
    ("softmax-rows-shared", "softmax", [(270, 40008)], "contiguous",
     {"dim": -1, "nvidia_variant": _SHARED_40K}, None),
    ("softmax-rows-shared-padded", "softmax", [(270, 40008)], "padded-rows",
     {"dim": -1, "nvidia_variant": _SHARED_40K}, None),
    ("softmax-rows-shared-large-clusters", "softmax", [(270, 40008)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_SHARED_KB": 10, "SOFTMAX_SHARED_ONE_KB": 10},
      "nvidia_variant": {"float32": "rows_shared16", "float16": "rows_shared8", "bfloat16": "rows_shared8"}}, None),
    ("softmax-rows-shared-one-block", "softmax", [(270, 40008)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_SHARED_KB": 200}, "nvidia_variant": "rows_shared1"}, None),
    # rows not whole vectors long, each at another 16-byte alignment: the edges element by element;
    # a 100 KB 16-bit row in one block (past the 80 KB slices of a cluster)
    ("softmax-rows-shared-odd-one-block", "softmax", [(200, 50257)], "contiguous",
     {"dim": -1, "nvidia_variant": {"float32": "rows_shared4", "float16": "rows_shared1", "bfloat16": "rows_shared1"}},
     None),
    ("softmax-rows-shared-odd", "softmax", [(270, 40001)], "contiguous",
     {"dim": -1, "nvidia_variant": _SHARED_40K}, None),
    # few rows (70; rows_cluster without rows_shared), the grid at least half the SMs' worth of blocks
    ("softmax-rows-shared-few-rows", "softmax", [(70, 40008)], "contiguous",
     {"dim": -1, "nvidia_variant": _SHARED_40K}, None),
    ("softmax-rows-shared-unaligned-base", "softmax", [(270, 40008)], "offset",
     {"dim": -1, "nvidia_variant": _SHARED_40K}, None),

    # rows_block rows of at most 2 blocks per SM, more rows than the resident grid has blocks: rows
    # streamed through shared memory (nvidia: rows_stream)
    # (rows of 16384 are planned dense, 2 float32 or 4 16-bit blocks per SM: streamed only when
    # told, with 4 slots, so that 300 rows outnumber the resident grid)
    ("softmax-rows-stream", "softmax", [(300, 16384)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_STREAM_BELOW": 64, "SOFTMAX_SLOTS": 4}, "nvidia_variant": "rows_stream"}, None),
    ("softmax-rows-stream-3-buffers", "softmax", [(300, 16384)], "contiguous",
     {"dim": -1, "tune": {"SOFTMAX_STREAM_BUFFERS": 3, "SOFTMAX_STREAM_BELOW": 64, "SOFTMAX_SLOTS": 4},
      "nvidia_variant": "rows_stream"}, None),
    ("softmax-rows-stream-8-slots", "softmax", [(300, 32768)], "contiguous",
     {"dim": -1, "nvidia_variant": {"float16": "rows_stream", "bfloat16": "rows_stream"}}, None),
    # planned as rows_stream, but the base is not 16-byte aligned: rows_block runs
    ("softmax-rows-stream-unaligned-base", "softmax", [(300, 16384)], "offset", {"dim": -1}, None),
    ("softmax-columns", "softmax", [(1000, 4096)], "contiguous",
     {"dim": 0, "tune": {"SOFTMAX_COLUMN_CLUSTER": 0}, "nvidia_variant": "columns_split"}, None),
    ("softmax-columns-cluster", "softmax", [(1000, 4096)], "contiguous", {"dim": 0, "nvidia_variant": _CLUSTER_2},
     None),
    ("softmax-columns-cluster-128-byte-tiles", "softmax", [(1000, 4096)], "contiguous",
     {"dim": 0, "tune": {"SOFTMAX_COLUMN_CLUSTER_TX": 8}, "nvidia_variant": _CLUSTER_WIDE}, None),
    ("softmax-columns-cluster-8192-rows", "softmax", [(8192, 1024)], "contiguous",
     {"dim": 0, "nvidia_variant": _CLUSTER_8192}, None),
    ("softmax-columns-split", "softmax", [(1 << 18, 8)], "contiguous", {"dim": 0}, None),
    ("softmax-strided", "softmax", [(500, 300)], "transposed", {"dim": -1}, None),
]


def _set_tune(tune, monkeypatch, request):
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


def _variant_input(shape, layout, dtype, seed):
    if layout == "transposed":
        return _randn(shape[::-1], dtype, seed).t()
    if layout == "transposed-offset":
        return _offset(_randn(shape[::-1], dtype, seed)).t()
    if layout == "batch-transposed":  # the inner two dims swapped
        return _randn((shape[0], shape[2], shape[1]), dtype, seed).transpose(1, 2)
    if layout == "permuted":
        return _randn((shape[2], shape[0], shape[1]), dtype, seed).permute(1, 2, 0)
    if layout == "sliced-rows":
        return _randn((shape[0], shape[1] + 24), dtype, seed)[:, 3:3 + shape[1]]
    if layout in ("padded-rows", "shifted-rows"):  # rows 32 (2) elements further apart than their length
        return _randn((shape[0], shape[1] + (32 if layout == "padded-rows" else 2)), dtype, seed)[:, :shape[1]]
    if layout == "permuted-batch":  # the two outer dims swapped, the last contiguous
        return _randn((shape[1], shape[0], shape[2]), dtype, seed).transpose(0, 1)
    if layout == "expand-rows":
        return _randn(shape, dtype, seed).expand(700, shape[1])
    if layout == "expand-columns":  # one value per row
        return _randn((shape[0], 1), dtype, seed).expand(shape[0], shape[1])
    values = _randn(shape, dtype, seed)
    return _offset(values) if layout == "offset" else values


@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.bfloat16],
                         ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("case", VARIANT_CASES, ids=[c[0] for c in VARIANT_CASES])
def test_variant(cuda_backend, case, dt, record_property, monkeypatch, request):
    """Each op form on layouts chosen to reach every kernel variant (the
    variant is recorded in the junit XML); the sanitizer runs these. A case's
    "tune" values are OPRT_TUNE_* overrides (ops/common/tuning.h) that reach
    variants the planner keeps for other shapes."""
    name, op, shapes, layout, params, out_dtype = case
    _set_tune(params.get("tune", {}), monkeypatch, request)
    inputs = [_variant_input(s, layout if i == 0 or layout in ("offset", "transposed") else "contiguous", dt, 80 + i)
              for i, s in enumerate(shapes)]
    if op == "copy":
        src = inputs[0]
        out = torch.full(src.shape, float("nan"), dtype=out_dtype or dt, device="cuda")
        if params.get("out_offset"):
            out = _offset(out)
        with oprt.prepare_copy(out, src, backend=cuda_backend) as prepared:
            prepared.run()
            variant = prepared.variant
        _equal_bits(out, src.to(out.dtype), name)
        _equal_bits(oprt.copy(src, backend=cuda_backend), src.contiguous(), f"{name}: copy()")
    elif op == "vector_add":
        a, b = inputs
        out = torch.full(torch.broadcast_shapes(a.shape, b.shape), float("nan"), dtype=dt, device="cuda")
        with oprt.prepare_vector_add(out, a, b, backend=cuda_backend) as prepared:
            prepared.run()
            variant = prepared.variant
        _check_add(out, a, b, name)
        _check_add(oprt.vector_add(a, b, backend=cuda_backend), a, b, f"{name}: vector_add()")
    elif op == "reduce_sum":
        src, dim = inputs[0], params["dim"]
        dims = None if dim is None else tuple(d % src.dim() for d in (dim if isinstance(dim, tuple) else (dim,)))
        result = oprt.reduce_sum(src, dim, backend=cuda_backend)
        out = torch.full(result.shape, float("nan"), dtype=dt, device="cuda")
        with oprt.prepare_reduce_sum(out, src, dim, backend=cuda_backend) as prepared:
            prepared.run()
            variant = prepared.variant
        _check_sum(out, src, dims, name)
        _equal_bits(result, out, f"{name}: reduce_sum() vs prepared")
    else:
        src, dim = inputs[0], params["dim"]
        out = torch.full(src.shape, float("nan"), dtype=dt, device="cuda")
        with oprt.prepare_softmax(out, src, dim, backend=cuda_backend) as prepared:
            prepared.run()
            variant = prepared.variant
        _check_softmax(out, src, dim, name)
        _equal_bits(oprt.softmax(src, dim, backend=cuda_backend), out, f"{name}: softmax() vs prepared")
    record_property("variant", variant)
    print(f"{name} {dt}: variant {variant}")
    expected = params.get("nvidia_variant")  # a name, or one per dtype name
    if isinstance(expected, dict):
        expected = expected.get(str(dt).removeprefix("torch."))
    if cuda_backend == "nvidia" and expected and torch.cuda.get_device_capability()[0] >= 9:
        assert variant == expected, f"{name}: planned {variant}, not {expected}"


# -- large tensors (>= 64M elements) ------------------------------------------------

BIG = 1 << 26
SQUARE = (8192, 8192)


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_large_copy(cuda_backend, dt):
    dtype = dt
    src = _randn(BIG, dtype, 1)
    assert_bitwise_equal(oprt.copy(src, backend=cuda_backend), src, "copy of 64M")
    square = _randn(SQUARE, dtype, 2)
    out = torch.empty(square.t().shape, dtype=torch.float16, device="cuda")
    oprt.copy_(out, square.t(), backend=cuda_backend)  # transposed and converted
    assert_bitwise_equal(out, square.t().to(torch.float16), "copy_ of a transposed 8192^2 into float16")


@pytest.mark.parametrize("dt", [torch.float32, torch.float16], ids=["float32", "float16"])
def test_large_vector_add(cuda_backend, dt):
    dtype = dt
    a, b = _randn(BIG, dtype, 3), _randn(BIG, dtype, 4)
    _check_add(oprt.vector_add(a, b, backend=cuda_backend), a, b, "vector_add of 64M")
    square, row = _randn(SQUARE, dtype, 5), _randn(SQUARE[1], dtype, 6)
    _check_add(oprt.vector_add(square, row, backend=cuda_backend), square, row, "vector_add 8192^2 + a row")
    out = torch.empty(square.t().shape, dtype=dtype, device="cuda")
    oprt.vector_add_(out, square.t(), row[:, None], backend=cuda_backend)
    _check_add(out, square.t(), row[:, None], "vector_add_ transposed + a column")


@pytest.mark.parametrize("shape,dims", [((BIG,), None), (SQUARE, (1,)), (SQUARE, (0,)), (SQUARE, None),
                                        ((2, 1 << 25), (1,)), ((1 << 24, 4), (0,))],
                         ids=["64M-all", "rows", "columns", "square-all", "2-long-rows", "4-long-columns"])
def test_large_reduce_sum(cuda_backend, shape, dims):
    src = _randn(shape, torch.float32, 7)
    result = oprt.reduce_sum(src, dims, backend=cuda_backend)
    _check_sum(result, src, dims, f"reduce_sum {shape} over {dims}")
    half = src.to(torch.bfloat16)
    _check_sum(oprt.reduce_sum(half, dims, backend=cuda_backend), half, dims, f"bf16 reduce_sum {shape}")


@pytest.mark.parametrize("shape,dim", [(SQUARE, -1), (SQUARE, 0), ((16, 1 << 22), -1), ((1 << 22, 16), 0),
                                       ((700, 140001), -1)],
                         ids=["rows", "columns", "long-rows", "long-columns", "many-long-rows"])
def test_large_softmax(cuda_backend, shape, dim):
    """Includes split rows with more rows than the cooperative grid has blocks."""
    src = _randn(shape, torch.float32, 8)
    _check_softmax(oprt.softmax(src, dim, backend=cuda_backend), src, dim, f"softmax {shape} dim {dim}")
    if shape == SQUARE:
        half = src.to(torch.float16)
        _check_softmax(oprt.softmax(half, dim, backend=cuda_backend), half, dim, f"fp16 softmax {shape}")


# -- softmax over a non-last dim read once: columns_cluster ----------------------------

def _rows_padded(shape, dtype, seed):
    """A tensor of `shape` whose last dim is padded in storage to a multiple
    of 64 elements (16-byte aligned rows, not whole vectors wide)."""
    width = shape[-1] + (-shape[-1]) % 64
    return _randn((*shape[:-1], width), dtype, seed)[..., :shape[-1]]


@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.bfloat16],
                         ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape,dim,layout,expected", [
    ((1000, 4096), 0, "contiguous", _CLUSTER_2),
    ((8192, 1024), 0, "contiguous", _CLUSTER_8192),
    ((4, 700, 1001), 1, "padded", _CLUSTER_2),  # planes; a vector cut by the last column
    ((1000, 4096), 0, "offset", _CLUSTER_2),  # planned, but the base is unaligned: the columns kernels run
], ids=["2d", "8192-rows", "planes-padded", "unaligned-base"])
def test_softmax_columns_cluster(cuda_backend, dt, shape, dim, layout, expected):
    """Columns whose whole length a cluster holds in shared memory, with
    -inf/+inf/NaN columns: torch's values and NaN columns from the prepared
    op (bitwise the same on a second run), softmax() and softmax_ in place."""
    name = str(dt).removeprefix("torch.")
    src = _rows_padded(shape, dt, 90) if layout == "padded" else _randn(shape, dt, 90)
    columns = src.movedim(dim, 0)  # a view: [softmax dim, ..., columns]
    columns[..., 5] = float("-inf")  # all -inf: NaN, as torch
    columns[17, ..., 9] = float("nan")
    columns[3, ..., 13] = float("inf")
    columns[..., 17] = float("-inf")
    columns[-1, ..., 17] = 2.0  # -inf but for the last element: 1.0 there
    columns[:columns.shape[0] // 2, ..., 21] = float("-inf")  # a block's rows all -inf but a NaN: NaN, as torch
    columns[40, ..., 21] = float("nan")
    if layout == "offset":
        src = _offset(src)
    expected64 = torch.softmax(_host(src).double(), dim)
    nan = torch.isnan(expected64)

    def check(actual, what):
        assert torch.equal(torch.isnan(_host(actual)), nan), f"{name} {what}: NaN columns differ from torch's"
        _check_close(_host(actual)[~nan], expected64[~nan], *TOLERANCES[dt], f"{name} {what} {shape} dim {dim}")

    out = _rows_padded(shape, dt, 91).fill_(float("nan")) if layout == "padded" else torch.full_like(src, float("nan"))
    with oprt.prepare_softmax(out, src, dim, backend=cuda_backend) as prepared:
        prepared.run()
        variant = prepared.variant
        first = out.clone()
        prepared.run()
    _equal_bits(out, first, f"{name}: second run")
    check(out, "prepared")
    check(oprt.softmax(src, dim, backend=cuda_backend), "softmax()")
    inplace = src.clone()
    oprt.softmax_(inplace, inplace, dim, backend=cuda_backend)
    check(inplace, "in place")
    if isinstance(expected, dict):
        expected = expected[name]
    if cuda_backend == "nvidia" and torch.cuda.get_device_capability()[0] >= 9:
        assert variant == expected, f"planned {variant}, not {expected}"


def _check_softmax_special_rows(out, src, msg):
    """Softmax over the last dim of rows holding -inf/+inf/NaN: NaN rows
    exactly where torch has them, the other rows within tolerance."""
    expected = torch.softmax(_host(src).double(), -1)
    assert torch.equal(torch.isnan(_host(out)), torch.isnan(expected)), "NaN rows differ from torch's"
    finite = ~torch.isnan(expected).any(-1)
    _check_softmax(out[finite.to(out.device)], src[finite.to(src.device)], -1, msg)


@pytest.mark.parametrize("tune", [{}, {"SOFTMAX_RESIDENT": 0}, {"SOFTMAX_RESIDENT": 0, "SOFTMAX_SPLIT_LAUNCHES": 1}],
                         ids=["resident", "split", "cooperative"])
@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_long_row_softmax_special_values(cuda_backend, dt, tune, monkeypatch, request):
    """-inf, +inf and NaN in rows split over many blocks, placed where whole
    chunks (and rounds) hold nothing but -inf: NaN rows where torch has them,
    and -inf counting as 0 even while a chunk's max is still -inf."""
    _set_tune(tune, monkeypatch, request)
    n = (1 << 20) + 5
    src = _randn((7, n), dt, 31)
    src[0, : n // 2] = -math.inf          # half the row's chunks are all -inf
    src[1] = -math.inf                    # all -inf: a NaN row
    src[2] = -math.inf
    src[2, n - 3] = math.nan              # all -inf but one NaN near the end: NaN row
    src[3, n // 3] = math.inf             # +inf: NaN row (inf - inf)
    src[4, 12345] = math.nan              # one NaN: NaN row
    src[5] = -math.inf
    src[5, n - 1] = 2.0                   # one finite value at the very end: 1 there, 0 elsewhere
    src[6, ::1000] = -math.inf
    _check_softmax_special_rows(oprt.softmax(src, -1, backend=cuda_backend), src, f"finite rows {tune}")


@pytest.mark.parametrize("tune", [{"SOFTMAX_SHARED": 0}, {"SOFTMAX_SHARED": 0, "SOFTMAX_TWICE_CACHE_KB": 1 << 20},
                                  {"SOFTMAX_SHARED": 0, "SOFTMAX_TWICE_CACHE_KB": 0}],
                         ids=["planned", "cached", "uncached"])
@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_many_long_row_softmax_special_values(cuda_backend, dt, tune, monkeypatch, request):
    """-inf, +inf and NaN in more than two long rows per SM (nvidia:
    rows_twice, told not to plan rows_shared; float32 rows of 70001 in 1024-thread blocks, a grid that
    takes rows 264.. in a second pass; bf16 in 512-thread blocks), at the
    ends of rows and in the rows a block takes second."""
    rows, n = 300, 70001
    src = _randn((rows, n), dt, 34)
    for r in (1, 270):
        src[r, 0] = math.nan                  # the first element NaN: NaN row
        src[r + 1, n - 1] = math.inf          # the last element +inf: NaN row
        src[r + 2] = -math.inf                # all -inf: NaN row
        src[r + 3] = -math.inf
        src[r + 3, n - 1] = 1.0               # one finite value, the last: 1 there, 0 elsewhere
        src[r + 4, : n // 2] = -math.inf      # the first half -inf
        src[r + 5, n - 5:] = 40.0             # the row's max among its last elements
    _set_tune(tune, monkeypatch, request)
    _check_softmax_special_rows(oprt.softmax(src, -1, backend=cuda_backend), src, f"many long rows {tune}")


@pytest.mark.parametrize("tune", [{}, {"SOFTMAX_SHARED_KB": 20}, {"SOFTMAX_SHARED_KB": 200}],
                         ids=["planned", "clusters-of-16-8", "140-kb-slices"])
@pytest.mark.parametrize("n", [70000, 70001])
@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_shared_row_softmax_special_values(cuda_backend, dt, n, tune, monkeypatch, request):
    """-inf, +inf and NaN in many long rows (nvidia: rows_shared,
    float32 rows of 70000 in clusters of 4, bf16 of 2; told: clusters of
    16 / 8, or 140 KB slices, 2 / 1 blocks per row): at row ends, in whole
    slices of -inf, and in a row whose only finite value sits in its last
    slice; rows of whole vectors
    and not (70001: each row at another alignment, its edges element by
    element); out of place, in place, and in place one element past a
    16-byte boundary."""
    rows = 300
    src = _randn((rows, n), dt, 36)
    src[1, 0] = math.nan                  # the first element NaN: NaN row
    src[2, n - 1] = math.inf              # the last element +inf: NaN row
    src[3] = -math.inf                    # all -inf: NaN row
    src[4] = -math.inf
    src[4, n - 1] = 1.0                   # one finite value, the last: 1 there, 0 elsewhere
    src[5, : n // 2] = -math.inf          # the first half (whole slices) -inf
    src[6, n // 2:] = -math.inf           # the second half
    src[7, n - 5:] = 40.0                 # the row's max among its last elements
    src[8, n // 2] = 40.0                 # ... in a middle slice
    src[299, ::3] = -math.inf
    _set_tune(tune, monkeypatch, request)
    _check_softmax_special_rows(oprt.softmax(src, -1, backend=cuda_backend), src, f"long rows {tune}")
    in_place = src.clone()
    oprt.softmax_(in_place, in_place, -1, backend=cuda_backend)
    _check_softmax_special_rows(in_place, src, f"long rows in place {tune}")
    shifted = _offset(src)
    oprt.softmax_(shifted, shifted, -1, backend=cuda_backend)
    _check_softmax_special_rows(shifted, src, f"long rows in place, one element off {tune}")


@pytest.mark.parametrize("tune", [{}, {"SOFTMAX_STREAM_BELOW": 64}, {"SOFTMAX_DENSE": 0, "SOFTMAX_STREAM": 0}],
                         ids=["planned", "streamed", "general"])
@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.bfloat16], ids=["float32", "float16", "bfloat16"])
def test_many_row_softmax_special_values(cuda_backend, dt, tune, monkeypatch, request):
    """-inf, +inf and NaN in rows past the first the grid's blocks take (nvidia:
    planned dense or rows_stream, each block's later rows from its
    shared-memory buffers; told: rows_stream, or the general rows_block):
    NaN rows where torch has them, the others exact."""
    _set_tune(tune, monkeypatch, request)
    rows, n = 400, 16384
    src = _randn((rows, n), dt, 32)
    src[301] = -math.inf                  # all -inf: a NaN row
    src[302, n // 2] = math.inf           # +inf: NaN row
    src[303, 7] = math.nan                # one NaN: NaN row
    src[304] = -math.inf
    src[304, n - 1] = 2.0                 # one finite value at the end: 1 there, 0 elsewhere
    src[399, ::3] = -math.inf
    src[200, : n // 2] = -math.inf
    _check_softmax_special_rows(oprt.softmax(src, -1, backend=cuda_backend), src, "finite rows")


@pytest.mark.parametrize("tune", [{}, {"SOFTMAX_FLAT": 0}], ids=["planned", "shifted"])
@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.bfloat16], ids=["float32", "float16", "bfloat16"])
def test_odd_row_softmax_edge_values(cuda_backend, dt, tune, monkeypatch, request):
    """Dense rows not whole vectors long, each at another 16-byte
    misalignment (nvidia: rows_block_dense; the elements before a row's first
    and after its last 16-byte boundary take their own path, the kFlat
    form's edge elements, or told: the shifted slots): -inf/+inf/NaN and the
    row's largest values placed there; out of place and in place."""
    _set_tune(tune, monkeypatch, request)
    rows, n = 24, 12289  # row r starts r elements past a 16-byte boundary, modulo the vector width
    src = _randn((rows, n), dt, 33)
    src[1, 0] = math.nan                  # a leading element: NaN row
    src[2, n - 1] = math.inf              # the last element: NaN row
    src[3] = -math.inf
    src[3, 0] = 1.0                       # only the first element finite: 1 there, 0 elsewhere
    src[4] = -math.inf
    src[4, n - 1] = 1.0                   # only the last
    src[5, :5] = 30.0                     # the max among the leading elements
    src[6, n - 3:] = 30.0                 # ... among the trailing ones
    src[7] = -math.inf                    # all -inf: NaN row
    src[9, 1] = -math.inf                 # -inf at an edge: 0 there
    src[10, n - 2] = -math.inf
    _check_softmax_special_rows(oprt.softmax(src, -1, backend=cuda_backend), src, f"odd rows {tune}")
    in_place = src.clone()
    oprt.softmax_(in_place, in_place, -1, backend=cuda_backend)
    _check_softmax_special_rows(in_place, src, f"odd rows in place {tune}")


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_many_row_softmax_in_place(cuda_backend, dt):
    """out is src on rows of the streamed shape (nvidia: rows_stream reads the
    block's next row while it writes the current one in place)."""
    src = _randn((400, 16384), dt, 33)
    x = src.clone()
    oprt.softmax_(x, x, -1, backend=cuda_backend)
    _check_softmax(x, src, -1, "softmax_(x, x)")


@pytest.mark.parametrize("shape", [(300, 12289), (1, 1001), (999, 37), (256, 8192), (1, 8192)])
@pytest.mark.parametrize("dt", [torch.float32, torch.float16], ids=["float32", "float16"])
def test_softmax_in_place_unaligned(cuda_backend, dt, shape):
    """softmax_(x, x) with x one element past a 16-byte boundary: out and src
    equally misaligned (nvidia: the dense kernel shifts each row onto 16-byte
    boundaries where the rows are not whole vectors, else the general kernel runs)."""
    src = _randn(shape, dt, 34)
    x = _offset(src)
    oprt.softmax_(x, x, -1, backend=cuda_backend)
    _check_softmax(x, src, -1, f"softmax_(x, x) {shape}")


@pytest.mark.parametrize("shape", [(300, 12289), (7, 2049), (3, 4095), (5, 16377), (33, 1001), (1, 12289)])
@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.bfloat16], ids=["float32", "float16", "bfloat16"])
def test_softmax_rows_not_whole_vectors(cuda_backend, dt, shape):
    """Aligned rows whose length is not a multiple of the 16-byte vector
    (nvidia: dense rows shifted row by row; tilelang: block_rows flat, where
    neighbouring rows share a vector): every row as torch, none written by
    its neighbour (a NaN row and a -inf row sit between finite ones)."""
    src = _randn(shape, dt, 35)
    if shape[0] > 2:
        src[1, shape[1] // 2] = math.nan
        src[2] = -math.inf
    out = torch.full(shape, float("nan"), dtype=dt, device="cuda")
    oprt.softmax_(out, src, -1, backend=cuda_backend)
    _check_softmax_special_rows(out, src, f"rows of {shape[1]}")


def test_copy_past_2_to_the_31(cuda_backend):
    """2**31 + 7 float16 elements (4 GiB a tensor): 32-bit indexing would
    wrap. Checked at the tail, around 2**31 and at random positions."""
    n = (1 << 31) + 7
    free, _ = torch.cuda.mem_get_info()
    if free < 9 * 2**30:
        pytest.skip(f"needs ~9 GiB of free GPU memory, {free / 2**30:.1f} GiB free")
    src = torch.empty(n, dtype=torch.float16, device="cuda")
    src.normal_(generator=torch.Generator(device="cuda").manual_seed(9))
    src[-4096:] = torch.arange(4096, device="cuda", dtype=torch.float32).to(torch.float16)  # a known tail
    out = oprt.copy(src, backend=cuda_backend)
    assert out.shape == (n,) and out.dtype == torch.float16
    assert_bitwise_equal(out[-4096:], src[-4096:], "the last 4096 elements")
    assert_bitwise_equal(out[:4096], src[:4096], "the first 4096 elements")
    around = slice((1 << 31) - 4096, (1 << 31) + 7)
    assert_bitwise_equal(out[around], src[around], "around 2**31")
    picks = torch.randint(0, n, (1 << 20,), device="cuda", generator=torch.Generator(device="cuda").manual_seed(10))
    assert_bitwise_equal(out[picks], src[picks], "random positions")
    del out
    # a transposed copy of 2**31 elements (the tiled-transpose path): element
    # (i, j) of out is element (j, i) of the source view
    square = src[: n - 7].view(1 << 16, 1 << 15)
    out2 = torch.empty(1 << 15, 1 << 16, dtype=torch.float16, device="cuda")
    oprt.copy_(out2, square.t(), backend=cuda_backend)
    assert_bitwise_equal(out2[-1, -4096:], square[-4096:, -1], "transposed copy: the last row's tail")
    flat = picks % ((1 << 31) - 1)
    rows, cols = flat // (1 << 16), flat % (1 << 16)
    assert_bitwise_equal(out2[rows, cols], square[cols, rows], "transposed copy: random positions")


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


# -- non-default streams -------------------------------------------------------------

STREAM_OPS = {
    "copy": (lambda x, b: oprt.copy(x.t(), backend=b), lambda o, x, b: oprt.copy_(o, x.t(), backend=b),
             oprt.prepare_copy, lambda x: (x.t(),), lambda x: x.t(), lambda x: x.t()),
    "vector_add": (lambda x, b: oprt.vector_add(x, x[0], backend=b),
                   lambda o, x, b: oprt.vector_add_(o, x, x[0], backend=b),
                   oprt.prepare_vector_add, lambda x: (x, x[0]), lambda x: x + x[0], lambda x: x),
    "reduce_sum": (lambda x, b: oprt.reduce_sum(x, None, backend=b),
                   lambda o, x, b: oprt.reduce_sum_(o, x, None, backend=b),
                   lambda o, x, backend: oprt.prepare_reduce_sum(o, x, None, backend=backend),
                   lambda x: (x,), lambda x: x.sum(), lambda x: x.sum()),
    "softmax": (lambda x, b: oprt.softmax(x, -1, backend=b), lambda o, x, b: oprt.softmax_(o, x, -1, backend=b),
                oprt.prepare_softmax, lambda x: (x,), lambda x: torch.softmax(x, -1), lambda x: x),
}


@pytest.mark.parametrize("op", list(STREAM_OPS))
def test_non_default_stream(cuda_backend, op):
    """Data produced on a side stream that is still busy when the op is
    enqueued: an op that ran on another stream would read stale zeros."""
    call, call_, prepare, args, reference, out_like = STREAM_OPS[op]
    values = _randn((2048, 1024), torch.float32, 11)
    expected = reference(values.double()).float()
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = torch.zeros_like(values)
        torch.cuda._sleep(50_000_000)  # tens of ms of GPU time on `stream` only
        x.copy_(values)
        result = call(x, cuda_backend)
        out = torch.full_like(out_like(values), float("nan")).contiguous()
        call_(out, x, cuda_backend)
        prepared_out = torch.full_like(out, float("nan"))
        prepared = prepare(prepared_out, *args(x), backend=cuda_backend)
        prepared.run()
        torch.cuda._sleep(20_000_000)
        x.zero_()  # prepared on stream-ordered data only: re-running sees zeros
        x.copy_(values)
        prepared.run()
    stream.synchronize()
    rtol, atol = (1e-5, 1e-4) if op == "reduce_sum" else (1e-5, 1e-6)
    for name, got in (("op", result), ("op_", out), ("prepared", prepared_out)):
        if op == "reduce_sum":
            _check_sum(got, values, None, f"{op} {name} on a side stream")
        else:
            _check_close(got, expected.double(), rtol, atol, f"{op} {name} on a side stream")
    prepared.destroy()


# -- CUDA graphs ---------------------------------------------------------------------

# (name, op, input shapes, dtype, params); the inputs are fresh randn.
GRAPH_CASES = [
    ("copy-transposed", "copy", [(4096, 2048)], torch.float16, {"transpose": True}),
    ("add-broadcast", "vector_add", [(1024, 4096), (4096,)], torch.bfloat16, {}),
    ("sum-rows-4x2^24", "reduce_sum", [(4, 1 << 24)], torch.float32, {"dim": -1}),
    ("sum-all-2^24", "reduce_sum", [(1 << 24,)], torch.float32, {"dim": None}),
    ("sum-columns", "reduce_sum", [(4096, 1024)], torch.float32, {"dim": 0}),
    ("softmax-4x2^20", "softmax", [(4, 1 << 20)], torch.float32, {"dim": -1}),
    ("softmax-cluster-32x120000", "softmax", [(32, 120000)], torch.bfloat16, {"dim": -1}),
    ("softmax-rows-fp16", "softmax", [(4096, 1000)], torch.float16, {"dim": -1}),
    ("softmax-columns", "softmax", [(1000, 512)], torch.float32, {"dim": 0}),
]


def _graph_inputs(case, seed):
    _, _, shapes, dtype, params = case
    inputs = [_randn(s, dtype, seed + i) for i, s in enumerate(shapes)]
    if params.get("transpose"):
        inputs = [inputs[0].t()]
    return inputs


def shapes_of(case):
    return case[2]


def _graph_op(case):
    """(prepare(out, *inputs), op_(out, *inputs), out for inputs, check(out, inputs))"""
    _, op, _, dtype, params = case
    if op == "copy":
        return (lambda o, *x, b: oprt.prepare_copy(o, *x, backend=b), lambda o, *x, b: oprt.copy_(o, *x, backend=b),
                lambda x: torch.empty(x[0].shape, dtype=dtype, device="cuda"),
                lambda o, x, msg: assert_bitwise_equal(o, x[0].contiguous(), msg))
    if op == "vector_add":
        return (lambda o, *x, b: oprt.prepare_vector_add(o, *x, backend=b),
                lambda o, *x, b: oprt.vector_add_(o, *x, backend=b),
                lambda x: torch.empty(torch.broadcast_shapes(x[0].shape, x[1].shape), dtype=dtype, device="cuda"),
                lambda o, x, msg: _check_add(o, x[0], x[1], msg))
    if op == "reduce_sum":
        dim, shape = params["dim"], shapes_of(case)[0]
        dims = None if dim is None else (dim % len(shape),)
        out_shape = () if dims is None else tuple(s for d, s in enumerate(shape) if d not in dims)
        return (lambda o, *x, b: oprt.prepare_reduce_sum(o, *x, dim, backend=b),
                lambda o, *x, b: oprt.reduce_sum_(o, *x, dim, backend=b),
                lambda x: torch.empty(out_shape, dtype=dtype, device="cuda"),
                lambda o, x, msg: _check_sum(o, x[0], dims, msg))
    dim = params["dim"]
    return (lambda o, *x, b: oprt.prepare_softmax(o, *x, dim, backend=b),
            lambda o, *x, b: oprt.softmax_(o, *x, dim, backend=b),
            lambda x: torch.empty(x[0].shape, dtype=dtype, device="cuda"),
            lambda o, x, msg: _check_softmax(o, x[0], dim, msg))


@pytest.mark.parametrize("case", GRAPH_CASES, ids=[c[0] for c in GRAPH_CASES])
def test_cuda_graph_capture(cuda_backend, case):
    """A prepared op and an op_ call captured in a CUDA graph; replays on new
    data copied into the captured inputs give the right results."""
    prepare, call_, make_out, check = _graph_op(case)
    inputs = _graph_inputs(case, 20)
    out, out2 = make_out(inputs), make_out(inputs)
    prepared = prepare(out, *inputs, b=cuda_backend)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up (and the op_ signature recorded) outside the capture
        for _ in range(2):
            prepared.run()
            call_(out2, *inputs, b=cuda_backend)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        prepared.run()
        call_(out2, *inputs, b=cuda_backend)
    for seed in (30, 40, 50):
        new = _graph_inputs(case, seed)
        for target, value in zip(inputs, new):
            target.copy_(value)
        out.fill_(float("nan"))
        out2.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        check(out, new, f"{case[0]}: prepared, replay with seed {seed}")
        check(out2, new, f"{case[0]}: op_, replay with seed {seed}")
    del graph
    prepared.destroy()


# -- split sums run after run ---------------------------------------------------------

SPLIT_SUMS = [((4, 1 << 20), torch.float32, (1,)), ((4096, 1024), torch.bfloat16, (0,)),
              ((1 << 22,), torch.float32, None), ((3, 1000, 96), torch.float16, (1,)),
              ((5, 300001), torch.float32, (1,)), ((2001, 96), torch.float32, (0,))]  # unaligned bases below


def test_split_sums_interleaved(cuda_backend):
    """Sums split across blocks, run again and again between other ops that
    write the same per-thread workspace, on two streams and through
    unaligned views: right every time (tilelang: each split's last block
    adds the partials, counted by counters that every run must leave at 0)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    noise = _randn((64, 1 << 16), torch.float32, 90)
    for attempt in range(3):
        for index, (shape, dtype, dims) in enumerate(SPLIT_SUMS):
            x = _randn(shape, dtype, 91 + index + attempt)
            if index >= 4:  # dense, 4 bytes past a 16-byte boundary: the scalar kernels
                x = _randn((x.numel() + 1,), dtype, 91 + attempt)[1:].view(shape)
            for stream in (torch.cuda.current_stream(), side):
                with torch.cuda.stream(stream):
                    got = oprt.reduce_sum(x, dims, backend=cuda_backend)
                    oprt.softmax(noise, -1, backend=cuda_backend)  # its stats take the same workspace
                    again = oprt.reduce_sum(x, dims, backend=cuda_backend)
                stream.synchronize()
                msg = f"{shape} {dtype} dims {dims}, attempt {attempt}"
                _check_sum(got, x, dims, msg)
                assert_bitwise_equal(again, got, msg)


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
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
    src = _randn(shape, dt, 35)
    sums = {}
    for whole in (0, 1):
        _set_tune({**tune, "REDUCE_COLUMN_WHOLE": whole}, monkeypatch, request)
        sums[whole] = oprt.reduce_sum(src, dim, backend=cuda_backend)
        with oprt.prepare_reduce_sum(torch.empty_like(sums[whole]), src, dim, backend=cuda_backend) as prepared:
            assert ("whole" in prepared.variant) == (whole > 0), f"{shape}, whole {whole}: {prepared.variant}"
    _check_sum(sums[1], src, (dim,), f"{shape} over {dim}, whole rows")
    assert_bitwise_equal(sums[1], sums[0], f"{shape} over {dim}: the whole-rows loop vs the general loop")


# -- determinism -----------------------------------------------------------------------

DETERMINISM_CASES = [
    ("sum-2x2^24", lambda x, b: oprt.reduce_sum(x, -1, backend=b), (2, 1 << 24), torch.float32),
    ("sum-all-2^24", lambda x, b: oprt.reduce_sum(x, None, backend=b), (1 << 24,), torch.float32),
    ("sum-all-2^26-bf16", lambda x, b: oprt.reduce_sum(x, None, backend=b), (1 << 26,), torch.bfloat16),
    ("sum-columns-2^22x8", lambda x, b: oprt.reduce_sum(x, 0, backend=b), (1 << 22, 8), torch.float32),
    ("sum-square-all", lambda x, b: oprt.reduce_sum(x, None, backend=b), SQUARE, torch.float16),
    ("sum-square-dim0-bf16", lambda x, b: oprt.reduce_sum(x, 0, backend=b), SQUARE, torch.bfloat16),  # columns_cluster
    ("softmax-4x2^20", lambda x, b: oprt.softmax(x, -1, backend=b), (4, 1 << 20), torch.float32),
    ("softmax-split-200x140001", lambda x, b: oprt.softmax(x, -1, backend=b), (200, 140001), torch.float32),
    ("softmax-cluster-64x100000", lambda x, b: oprt.softmax(x, -1, backend=b), (64, 100000), torch.float32),
    ("softmax-2^20x4-dim0", lambda x, b: oprt.softmax(x, 0, backend=b), (1 << 20, 4), torch.float32),
    ("softmax-rows-bf16", lambda x, b: oprt.softmax(x, -1, backend=b), (8192, 4096), torch.bfloat16),
]


@pytest.mark.parametrize("case", DETERMINISM_CASES, ids=[c[0] for c in DETERMINISM_CASES])
def test_deterministic(cuda_backend, case):
    """Bit-identical results run after run (no atomics in a different order)."""
    name, call, shape, dtype = case
    src = _randn(shape, dtype, 60)
    first = call(src, cuda_backend)
    for attempt in range(3):
        torch.cuda._sleep(1_000_000 * attempt)  # vary the timing a little
        assert_bitwise_equal(call(src, cuda_backend), first, f"{name}: run {attempt + 2} vs run 1")


# -- a non-current device -------------------------------------------------------------

@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs at least 2 CUDA devices")
@pytest.mark.parametrize("op", list(STREAM_OPS))
def test_tensors_on_a_non_current_device(cuda_backend, op):
    call, call_, prepare, args, reference, out_like = STREAM_OPS[op]
    torch.cuda.set_device(0)
    values = _randn((512, 768), torch.float32, 70, device="cuda:1")
    expected = reference(values.double())
    results = []
    for stream in (None, torch.cuda.Stream(device=1)):  # the legacy default stream, then a side stream
        with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
            results.append(call(values, cuda_backend))
            out = torch.empty_like(out_like(values)).contiguous()
            call_(out, values, cuda_backend)
            results.append(out)
            prepared_out = torch.empty_like(out)
            with prepare(prepared_out, *args(values), backend=cuda_backend) as prepared:
                prepared.run()
            results.append(prepared_out)
        torch.cuda.synchronize(1)
    assert torch.cuda.current_device() == 0, "an op changed the current device"
    for i, got in enumerate(results):
        assert got.device == torch.device("cuda:1"), f"{op} result {i} on {got.device}"
        if op == "reduce_sum":
            _check_sum(got, values, None, f"{op} result {i} on cuda:1")
        else:
            _check_close(got, expected, 1e-5, 1e-6, f"{op} result {i} on cuda:1")


# -- a CUDA error becomes OperatorRuntimeError ----------------------------------------

_FAULT_SCRIPT = r"""
import sys
import torch
import operator_runtime as oprt
from operator_runtime import OperatorRuntimeError

backend = sys.argv[1]
x = torch.randn(1 << 20, device="cuda")
out = torch.empty_like(x)
# vector_add, not copy: a contiguous copy may be a cudaMemcpyAsync, which
# could take an unknown address for host memory and fault in the driver
prepared = oprt.prepare_vector_add(out, x, x, backend=backend)
descriptor = prepared._descriptor
if not hasattr(descriptor, "c_execute"):
    print("SKIP: the backend's descriptors are not C descriptors")
    sys.exit(0)


class Unmapped:
    # an address no allocation uses: the kernel's first load faults
    def data_ptr(self):
        return 1 << 12


try:
    descriptor.execute(out, (x, Unmapped()), None, torch.cuda.current_stream().cuda_stream)
    oprt.vector_add_(out, x, x, backend=backend)  # the (sticky) fault surfaces here at the latest
except OperatorRuntimeError as error:
    print("OPERATOR_RUNTIME_ERROR", error.status_name, error.message)
    sys.exit(0)
except Exception as error:
    print("OTHER", type(error).__name__, error)
    sys.exit(3)
print("NO_ERROR")
sys.exit(4)
"""


def test_cuda_error_raises_operator_runtime_error(cuda_backend):
    """An illegal address in a kernel (in a subprocess: the fault poisons its
    CUDA context) comes back as OperatorRuntimeError carrying CUDA's text."""
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1", PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-c", _FAULT_SCRIPT, cuda_backend], env=env, capture_output=True,
                         text=True, timeout=180)
    output = (run.stdout + run.stderr).strip()
    if run.stdout.startswith("SKIP"):
        pytest.skip(run.stdout.strip())
    assert run.returncode == 0 and "OPERATOR_RUNTIME_ERROR" in run.stdout, output[-2000:]
    assert "cuda" in run.stdout.lower() or "illegal" in run.stdout.lower(), output[-2000:]
