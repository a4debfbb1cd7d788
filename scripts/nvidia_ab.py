"""A/B of NVIDIA launch choices through the OPRT_TUNE_* overrides
(ops/common/tuning.h): each configuration runs every selected case, checks
the result against a float64 torch reference (NaN-poisoned output), and
times it with the benchmark harness (CUDA events, L2 flushed before every
call) beside torch, measured once per case.

    python3 scripts/nvidia_ab.py [--only softmax|reduce_sum|copy|add] [--configs NAME...] [--cases PREFIX...]
        [--min-time 0.02] [--interleave]

--configs runs the configurations in the order given (a name may repeat:
--configs a b a b); --interleave runs them case by case, so a drift over
the run (the first configuration's small cases ran 10-18% slow on the H200
in the thirty-fourth session) does not land on one configuration.

add cases are out = a + b, a contiguous, b of a's shape (the dense kernel)
or broadcast to it (a bias row, one value per row); their check is bitwise
equality with torch's add.

copy cases are permuted (or, with the identity permutation, contiguous)
sources copied into a contiguous out of the same dtype; their check is
bitwise equality with torch's copy_.

Configurations and cases are the tables below; a config is a name and the
OPRT_TUNE_* values it sets (everything else planned as usual).
"""

from __future__ import annotations

import argparse
import os

import torch

import operator_runtime as oprt
from operator_runtime._internal.operator import DESCRIPTOR_CACHE
from operator_runtime_testing.benchmark import TimingConfig, measure

SOFTMAX_CASES = [  # (name, shape, dim, dtypes)
    ("rows_262144x128", (262144, 128), -1, ("float32", "bfloat16")),
    ("medium_4096x4096", (4096, 4096), -1, ("float32", "bfloat16")),
    ("rows_16384x2048", (16384, 2048), -1, ("float32", "bfloat16")),
    ("medium_8192x8192", (8192, 8192), -1, ("float32", "float16", "bfloat16")),
    ("large_16384x16384", (16384, 16384), -1, ("float32", "float16", "bfloat16")),
    ("rows_4096x32768", (4096, 32768), -1, ("bfloat16",)),
    ("odd_16384x12289", (16384, 12289), -1, ("float32", "float16", "bfloat16")),
    ("odd_4096x2053", (4096, 2053), -1, ("float32", "bfloat16")),
    ("long_4x4M", (4, 4 * 1024 * 1024), -1, ("float32", "bfloat16")),
    ("long_16x4M", (16, 4 * 1024 * 1024), -1, ("float32", "float16", "bfloat16")),
    ("long_5x3M+7", (5, 3 * 1024 * 1024 + 7), -1, ("bfloat16",)),
    ("long_32x1M", (32, 1024 * 1024), -1, ("float32", "bfloat16")),
    ("long_1x16M", (1, 16 * 1024 * 1024), -1, ("float32", "bfloat16")),
    ("rows_2048x65536", (2048, 65536), -1, ("float32", "float16", "bfloat16")),
    ("rows_4096x40000", (4096, 40000), -1, ("float32", "bfloat16")),  # clusters of 2 (16-bit) / 4 without rows_twice
    ("vocab_4096x151936", (4096, 151936), -1, ("float32", "float16", "bfloat16")),
    ("vocab_32x151936", (32, 151936), -1, ("float32", "bfloat16")),
    ("gpt2_4096x50257", (4096, 50257), -1, ("float32", "bfloat16")),  # rows not whole vectors long
    ("aligned_4096x50264", (4096, 50264), -1, ("float32", "bfloat16")),  # gpt2's rows rounded up to whole vectors
    ("few_64x50000", (64, 50000), -1, ("float32", "bfloat16")),
    ("few_3x300000", (3, 300000), -1, ("float32", "bfloat16")),  # rows_shared16: 48 blocks (planned: rows_resident)
    ("few_16x300000", (16, 300000), -1, ("float32", "bfloat16")),
    ("dim0_8192x8192", (8192, 8192), 0, ("float32", "float16", "bfloat16")),
    ("dim0_4096x1024", (4096, 1024), 0, ("float32", "bfloat16")),
    ("dim0_32x2048x512", (32, 2048, 512), 1, ("bfloat16",)),
]
SOFTMAX_CONFIGS = [
    ("planned", {}),
    ("split", {"SOFTMAX_RESIDENT": 0}),
    ("no_cluster", {"SOFTMAX_CLUSTER_MAX": 1}),  # rows_cluster's rows to rows_resident / rows_split
    ("cluster4", {"SOFTMAX_CLUSTER_MAX": 4}),
    ("resident_all", {"SOFTMAX_RESIDENT_MAX_MB": 1 << 20}),  # rows_resident for every size it takes
    ("resident_nocache", {"SOFTMAX_RESIDENT_CACHE": 0}),
    ("ahead8", {"SOFTMAX_RESIDENT_AHEAD": 8}),  # every bulk copy at once (the sixth session's kernel)
    ("ahead2", {"SOFTMAX_RESIDENT_AHEAD": 2}),
    ("ahead5", {"SOFTMAX_RESIDENT_AHEAD": 5}),
    # rows_resident's cache filled by bulk copies / by each thread's own 16-byte asynchronous copies (planned for
    # chunks of at least 1.5 times the cache); copies with 6 rounds in flight; rows_resident past 96 MB
    ("resident_bulk", {"SOFTMAX_RESIDENT_COPIES": 0}),
    ("resident_copies", {"SOFTMAX_RESIDENT_COPIES": 1}),
    ("copies_a6", {"SOFTMAX_RESIDENT_COPIES": 1, "SOFTMAX_RESIDENT_AHEAD": 6}),
    ("resident_all_bulk", {"SOFTMAX_RESIDENT_MAX_MB": 1 << 20, "SOFTMAX_RESIDENT_COPIES": 0}),
    ("slots8", {"SOFTMAX_SLOTS": 8}),
    ("min_blocks1", {"SOFTMAX_MIN_BLOCKS": 1}),
    ("split_unroll8", {"SOFTMAX_SPLIT_UNROLL": 8}),
    ("split_tasks32", {"SOFTMAX_SPLIT_PER_BLOCK": 32}),  # (row, chunk) tasks per block of rows_split
    ("split_tasks64", {"SOFTMAX_SPLIT_PER_BLOCK": 64}),
    ("split_tasks4", {"SOFTMAX_RESIDENT": 0, "SOFTMAX_SPLIT_PER_BLOCK": 4}),  # few long rows: 4 tasks per block
    # long rows: rows_split2 (two launches, planned) against the cooperative rows_split, its chunk size;
    # rows_twice (more than two long rows per SM, a block per row): off, blocks per SM in the grid, threads
    ("split_coop", {"SOFTMAX_SPLIT_LAUNCHES": 1}),
    ("split2_kb64", {"SOFTMAX_SPLIT2_KB": 64}),
    ("split2_kb256", {"SOFTMAX_SPLIT2_KB": 256}),
    ("split2_kb512", {"SOFTMAX_SPLIT2_KB": 512}),
    ("no_twice", {"SOFTMAX_TWICE": 0}),  # rows_twice's rows to clusters / rows_split2
    ("twice_keep_l2", {"SOFTMAX_TWICE_EVICT_FIRST": 0}),  # rows_twice's write pass without evict_first
    ("resident_keep_l2", {"SOFTMAX_RESIDENT_EVICT_FIRST": 0}),  # rows_resident's, the same
    ("twice_nocache", {"SOFTMAX_TWICE_CACHE_KB": 0}),  # rows_twice reading the whole row twice (before session 19)
    ("twice_cacheall", {"SOFTMAX_TWICE_CACHE_KB": 1 << 20}),  # all the shared memory the blocks per SM leave
    ("twice_cache64", {"SOFTMAX_TWICE_CACHE_KB": 64}),
    ("twice_cache128", {"SOFTMAX_TWICE_CACHE_KB": 128}),
    ("twice_blocks1", {"SOFTMAX_TWICE_BLOCKS": 1}),
    ("twice_blocks2", {"SOFTMAX_TWICE_BLOCKS": 2}),
    ("twice_blocks3", {"SOFTMAX_TWICE_BLOCKS": 3}),
    ("twice_512", {"SOFTMAX_TWICE_THREADS": 512}),  # (planned for rows of fewer than 4 rounds of 1024 threads)
    ("twice_1024", {"SOFTMAX_TWICE_THREADS": 1024}),  # 1 block resident per SM: fewer rows in L2
    ("twice_1024_grid1", {"SOFTMAX_TWICE_THREADS": 1024, "SOFTMAX_TWICE_BLOCKS": 1}),
    # rows_shared (rows_twice's aligned rows read once by a cluster): off, shared memory per block, cluster cap
    ("no_shared", {"SOFTMAX_SHARED": 0}),
    ("shared_kb20", {"SOFTMAX_SHARED_KB": 20}),  # slice cap (planned 80 KB)
    ("shared_kb40", {"SOFTMAX_SHARED_KB": 40}),
    ("shared_kb110", {"SOFTMAX_SHARED_KB": 110}),
    ("shared_kb160", {"SOFTMAX_SHARED_KB": 160}),
    ("shared_one_kb80", {"SOFTMAX_SHARED_ONE_KB": 80}),  # a row in one block only up to 80 KB (before session 23)
    ("shared_max8", {"SOFTMAX_SHARED_MAX": 8}),
    ("shared_min_blocks1", {"SOFTMAX_SHARED_MIN_BLOCKS": 1}),  # few rows: rows_shared however few blocks it has
    ("min_blocks2", {"SOFTMAX_MIN_BLOCKS": 2}),
    ("slots4", {"SOFTMAX_SLOTS": 4}),
    ("waves1", {"SOFTMAX_WAVES": 1}),
    ("waves16", {"SOFTMAX_WAVES": 16}),
    ("waves64", {"SOFTMAX_WAVES": 64}),
    # rows_stream (many rows of rows_block size): off, rows in shared memory per block, blocks per SM
    ("no_dense", {"SOFTMAX_DENSE": 0}),  # the general rows kernel on dense rows too
    ("shifted", {"SOFTMAX_FLAT": 0}),  # dense rows not whole vectors long: the shifted slots (before the 15th session)
    ("no_stream", {"SOFTMAX_STREAM": 0}),
    ("stream_all", {"SOFTMAX_STREAM_BELOW": 64}),  # also where rows_block keeps 3+ blocks per SM
    ("stream_buffers2", {"SOFTMAX_STREAM_BUFFERS": 2}),
    ("stream_buffers3", {"SOFTMAX_STREAM_BUFFERS": 3}),
    ("stream_blocks1", {"SOFTMAX_STREAM_BLOCKS": 1}),
    ("stream_blocks2", {"SOFTMAX_STREAM_BLOCKS": 2}),
    # softmax over a non-last dim, two-pass `columns` (with SOFTMAX_COLUMN_CLUSTER 0, or where the cluster
    # does not apply): threads across a tile's columns, column tasks per SM
    ("columns_tx8", {"SOFTMAX_COLUMN_TX": 8}),
    ("columns_tx16", {"SOFTMAX_COLUMN_TX": 16}),
    ("columns_tasks8", {"SOFTMAX_COLUMN_TASKS": 8}),
    ("columns_tasks32", {"SOFTMAX_COLUMN_TASKS": 32}),
    ("columns_tasks64", {"SOFTMAX_COLUMN_TASKS": 64}),
    # columns_cluster (a column tile read once by a cluster): off, tile width, shared memory per block, cluster cap
    ("two_pass", {"SOFTMAX_COLUMN_CLUSTER": 0}),
    ("cluster_tx4", {"SOFTMAX_COLUMN_CLUSTER_TX": 4}),
    ("cluster_tx8", {"SOFTMAX_COLUMN_CLUSTER_TX": 8}),
    ("cluster_tx16", {"SOFTMAX_COLUMN_CLUSTER_TX": 16}),
    ("cluster_kb64", {"SOFTMAX_COLUMN_CLUSTER_KB": 64}),
    ("cluster_kb200", {"SOFTMAX_COLUMN_CLUSTER_KB": 200}),
    ("cluster_max8", {"SOFTMAX_COLUMN_CLUSTER_MAX": 8}),
    ("cluster_tx16_kb200", {"SOFTMAX_COLUMN_CLUSTER_TX": 16, "SOFTMAX_COLUMN_CLUSTER_KB": 200}),
    ("cluster_tx4_kb40", {"SOFTMAX_COLUMN_CLUSTER_TX": 4, "SOFTMAX_COLUMN_CLUSTER_KB": 40}),
    ("cluster_tx2_kb24", {"SOFTMAX_COLUMN_CLUSTER_TX": 2, "SOFTMAX_COLUMN_CLUSTER_KB": 24}),
    ("cluster_tx8_kb80", {"SOFTMAX_COLUMN_CLUSTER_TX": 8, "SOFTMAX_COLUMN_CLUSTER_KB": 80}),
]
REDUCE_CASES = [
    # short rows (rows_short where a row is whole vectors, at most 32 lanes of 2: not 65536x512 float32
    # nor 262144x100 bf16)
    ("rows_262144x128", (262144, 128), -1, ("float32", "float16", "bfloat16")),
    ("rows_1Mx32", (1024 * 1024, 32), -1, ("float32", "bfloat16")),
    ("rows_32768x128", (32768, 128), -1, ("float32", "float16", "bfloat16")),
    ("rows_131072x256", (131072, 256), -1, ("float32", "bfloat16")),
    ("rows_65536x512", (65536, 512), -1, ("float32", "bfloat16")),  # float32: rows_aligned, 32 lanes of 4
    ("rows_65536x1024", (65536, 1024), -1, ("float32", "bfloat16")),
    ("rows_262144x100", (262144, 100), -1, ("float32", "bfloat16")),  # bf16: not whole vectors, rows
    ("tiny_256x1024", (256, 1024), -1, ("float32", "float16", "bfloat16")),
    ("small_1024x1024", (1024, 1024), -1, ("float32", "bfloat16")),
    ("medium_2048x2048", (2048, 2048), -1, ("float32", "bfloat16")),
    ("medium_4096x4096", (4096, 4096), -1, ("float32", "bfloat16")),
    ("medium_8192x8192", (8192, 8192), -1, ("float32", "float16", "bfloat16")),
    ("large_16384x16384", (16384, 16384), -1, ("float32", "bfloat16")),
    ("long_4x4M", (4, 4 * 1024 * 1024), -1, ("float32", "bfloat16")),
    ("mid_1024x65536", (1024, 65536), -1, ("float32", "bfloat16")),  # 1 grid of 256-thread rows
    ("odd_16384x12289", (16384, 12289), -1, ("float32", "bfloat16")),
    ("scalar_4M", (4 * 1024 * 1024,), None, ("float32", "bfloat16")),
    ("long_4x1M", (4, 1024 * 1024), -1, ("float32", "bfloat16")),
    ("scalar_64M", (64 * 1024 * 1024,), None, ("float32", "bfloat16")),
    ("scalar_256M", (256 * 1024 * 1024,), None, ("float32", "bfloat16")),
    ("dim0_8192x8192", (8192, 8192), 0, ("float32", "float16", "bfloat16")),
    ("dim0_16384x16384", (16384, 16384), 0, ("float32", "bfloat16")),
    ("dim0_4096x16384", (4096, 16384), 0, ("bfloat16",)),
    ("dim0_4096x1024", (4096, 1024), 0, ("float32", "bfloat16")),
    # 128 MB in 16-bit over dim 0 at other row strides (bytes): 16512 and 16400 (not a power of two), 8 KB, 64 KB
    ("dim0_stride_8192x8256", (8192, 8256), 0, ("float32", "bfloat16")),
    ("dim0_stride_8192x8200", (8192, 8200), 0, ("bfloat16",)),
    ("dim0_stride_16384x4096", (16384, 4096), 0, ("float32", "bfloat16")),
    ("dim0_stride_2048x32768", (2048, 32768), 0, ("bfloat16",)),
    ("dim0_odd_2047x2053", (2047, 2053), 0, ("float32", "bfloat16")),  # rows not 16-byte aligned
    ("dim0_odd_8191x8193", (8191, 8193), 0, ("float32", "bfloat16")),
]
REDUCE_CONFIGS = [
    ("planned", {}),
    ("unroll8", {"REDUCE_UNROLL": 8}),
    ("rounds1", {"REDUCE_MIN_ROUNDS": 1}),
    ("rounds2", {"REDUCE_MIN_ROUNDS": 2}),
    ("rounds8", {"REDUCE_MIN_ROUNDS": 8}),
    ("tpr32", {"REDUCE_MAX_TPR": 32}),
    ("unroll8_tpr32", {"REDUCE_UNROLL": 8, "REDUCE_MAX_TPR": 32}),
    ("waves1", {"REDUCE_WAVES": 1}),
    ("waves8", {"REDUCE_WAVES": 8}),
    ("waves64", {"REDUCE_WAVES": 64}),  # about a block per task up to 16896 blocks
    # one contiguous run per output: rows_dense (planned) against the general rows kernel, 4 / 8 vectors a thread
    # (the unroll and tpr configs above apply to the rows kernel only)
    ("dense_before", {"REDUCE_MIN_ROUNDS": 2, "REDUCE_WAVES": 2}),  # rows_dense's plan before the 19th session
    ("rows_kernel", {"REDUCE_DENSE_ROWS": 0}),
    ("no_aligned", {"REDUCE_ALIGNED": 0}),  # rows_dense where rows_aligned is planned
    # rows_aligned: 8 / 4 vectors a lane per round in every dtype (planned: 32 elements, 8 in float32, 4 in 16-bit;
    # before the thirty-fourth session 8 in every dtype)
    ("aligned_u8", {"REDUCE_ALIGNED_UNROLL": 8}),
    ("aligned_u4", {"REDUCE_ALIGNED_UNROLL": 4}),
    ("rows_kernel_unroll8", {"REDUCE_DENSE_ROWS": 0, "REDUCE_UNROLL": 8}),
    # split rows / scalars at half a resident grid, one, two (the plan before the seventh session)
    ("half_grid", {"REDUCE_SPLIT_ROUNDS": 1 << 30}),
    ("one_grid", {"REDUCE_SPLIT_QUARTERS": 4, "REDUCE_SPLIT_ROUNDS": 1 << 30}),
    ("splits_2grids", {"REDUCE_SPLIT_ROUNDS": 1}),
    ("columns_one_grid", {"REDUCE_COLUMN_QUARTERS": 4}),  # planned for 16-bit
    ("columns_two_grids", {"REDUCE_COLUMN_QUARTERS": 8}),  # planned for float32
    ("columns_four_grids", {"REDUCE_COLUMN_QUARTERS": 16}),
    # sums over dim 0: a tile's splits merged in a cluster (columns_cluster, planned where it fills half the
    # GPU) or by a finishing kernel (the split); cluster size cap; clusters however few blocks they make
    ("no_column_cluster", {"REDUCE_COLUMN_CLUSTER": 0}),
    ("column_cluster8", {"REDUCE_COLUMN_CLUSTER_MAX": 8}),
    ("column_cluster4", {"REDUCE_COLUMN_CLUSTER_MAX": 4}),
    ("column_cluster_all", {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1}),
    ("column_cluster_all_tx8", {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1, "REDUCE_COLUMN_TX": 8}),
    ("column_cluster_all_tx16", {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1, "REDUCE_COLUMN_TX": 16}),
    ("column_cluster_tx4", {"REDUCE_COLUMN_CLUSTER_TX": 4}),  # 64-byte tiles in 16-bit, 16 in float32
    ("column_cluster_tx16", {"REDUCE_COLUMN_CLUSTER_TX": 16}),
    ("column_cluster_all_max4", {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1, "REDUCE_COLUMN_CLUSTER_MAX": 4}),
    ("column_cluster_all_tx8_max4", {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1, "REDUCE_COLUMN_TX": 8,
                                     "REDUCE_COLUMN_CLUSTER_MAX": 4}),
    ("column_cluster_all_tx16_max4", {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS": 1, "REDUCE_COLUMN_TX": 16,
                                      "REDUCE_COLUMN_CLUSTER_MAX": 4}),
    # sums over dim 0, tiles of whole aligned vectors: the row loop with no per-row checks (add_whole_rows,
    # planned) or the general loop (before the thirty-fifth session)
    ("columns_general", {"REDUCE_COLUMN_WHOLE": 0}),
    ("columns_whole", {"REDUCE_COLUMN_WHOLE": 1}),
    ("split_tx8", {"REDUCE_COLUMN_CLUSTER": 0, "REDUCE_COLUMN_TX": 8}),
    ("split_tx16", {"REDUCE_COLUMN_CLUSTER": 0, "REDUCE_COLUMN_TX": 16}),
    # sums over dim 0: tile width (threads across the columns) and task order
    ("columns_splits_first", {"REDUCE_COLUMN_ORDER": 0}),  # the order before the eighth session
    ("columns_tx64", {"REDUCE_COLUMN_TX": 64}),
    ("columns_tx128", {"REDUCE_COLUMN_TX": 128}),
    ("columns_tx256", {"REDUCE_COLUMN_TX": 256}),
    ("columns_tx256_one_grid", {"REDUCE_COLUMN_TX": 256, "REDUCE_COLUMN_QUARTERS": 4}),
    # split columns aimed at whole waves of the blocks the registers allow, in whole rounds of loads
    # (planned), or at grids of 8 blocks per SM (before the sixteenth session; quarters 4 / 8 as planned then)
    ("columns_fit0", {"REDUCE_COLUMN_FIT": 0}),
    ("columns_fit_q6", {"REDUCE_COLUMN_QUARTERS": 6}),
    # unaligned rows (odd widths): element loads (before session 21), shifted vectors in every dtype
    ("columns_elements", {"REDUCE_COLUMN_SHIFTED": 0}),
    ("columns_shifted_all", {"REDUCE_COLUMN_SHIFTED": 2}),
    # split sums: the finishing kernel launched after the first ends (before the fifteenth session); a warp
    # per row adding the partials (before the eighteenth)
    ("late_finish", {"REDUCE_EARLY_FINISH": 0}),
    ("finish_warp", {"REDUCE_FINISH_THREADS": 32}),
    # short rows: the rows kernel where rows_short is planned (the plan before rows_short), 2 rows per lane
    # group, a grid of 2 resident grids striding over the rows instead of a block per task
    ("old_rows", {"REDUCE_SHORT_ROWS": 0}),
    ("short_2rows", {"REDUCE_SHORT_ROWS": 2}),
    ("short_waves2", {"REDUCE_SHORT_WAVES": 2}),
    ("short_2rows_waves2", {"REDUCE_SHORT_ROWS": 2, "REDUCE_SHORT_WAVES": 2}),
]

# copy: (name, shape of a contiguous tensor x, the permutation of x that is the source, dtypes);
# out is a contiguous tensor of the source's shape
COPY_CASES = [
    ("transpose_8192x8192", (8192, 8192), (1, 0), ("float32", "float16", "bfloat16")),
    ("odd_16384x12289", (12289, 16384), (1, 0), ("float16",)),  # odd out rows: transpose_vec_shift
    ("odd_8192x8191", (8191, 8192), (1, 0), ("float32", "bfloat16")),
    ("large_16384x16384", (16384, 16384), (1, 0), ("bfloat16",)),
    ("batched_32x2048x1024", (32, 1024, 2048), (0, 2, 1), ("float32", "bfloat16")),  # the inner two swapped
    ("permute_1024x512x64", (64, 1024, 512), (1, 2, 0), ("bfloat16",)),  # narrow: tiles half used in 16-bit
    ("contiguous_1M", (1 << 20,), (0,), ("float32", "bfloat16")),  # memcpy
    ("odd_1000003", (1000003,), (0,), ("float32", "float16", "bfloat16")),  # memcpy of bytes not whole 16-byte words
    ("odd_4M+1", ((4 << 20) + 1,), (0,), ("float32", "bfloat16")),
    ("odd_64M+1", ((64 << 20) + 1,), (0,), ("float16",)),
]
COPY_CONFIGS = [
    ("planned", {}),
    ("odd_memcpy", {"COPY_ODD_KERNEL": 0}),  # cudaMemcpyAsync where the bytes are not whole 16-byte words
    ("old_transpose", {"COPY_TRANSPOSE_VEC": 0}),  # transpose_tiled for every transpose (before transpose_vec)
    ("vec_16bit_only", {"COPY_TRANSPOSE_VEC": 1}),  # float32 on transpose_tiled
    ("no_shift", {"COPY_TRANSPOSE_VEC": 2}),  # odd out rows on transpose_tiled (before transpose_vec_shift was planned)
]

# vector_add: (name, a's shape, b's shape (None: a's), dtypes)
ADD_CASES = [
    ("tiny_4096", (4096,), None, ("float32", "float16", "bfloat16")),
    ("64K", (65536,), None, ("float32", "bfloat16")),
    ("256K", (262144,), None, ("float32", "bfloat16")),
    ("1M", (1 << 20,), None, ("float32", "float16", "bfloat16")),
    ("odd_1000003", (1000003,), None, ("float32", "float16", "bfloat16")),
    ("4M", (4 << 20,), None, ("float32", "bfloat16")),
    ("16M", (16 << 20,), None, ("float32", "bfloat16")),
    ("64M", (64 << 20,), None, ("float32", "bfloat16")),
    ("256M", (256 << 20,), None, ("float32", "bfloat16")),
    ("bias_4096x1024", (4096, 1024), (1024,), ("float32", "bfloat16")),  # b broadcast: rows / flat
    ("bias_2047x2053", (2047, 2053), (2053,), ("float32", "bfloat16")),
    ("bias_16384x4096", (16384, 4096), (4096,), ("float32", "float16", "bfloat16")),
    ("bias_16384x12289", (16384, 12289), (12289,), ("float32", "bfloat16")),
    ("column_16384x4096", (16384, 4096), (16384, 1), ("float32", "bfloat16")),
    ("short_4Mx3", (4 << 20, 3), (3,), ("float32", "bfloat16")),  # rows under 64: flat (strided told)
    ("short_1Mx16", (1 << 20, 16), (16,), ("float32", "bfloat16")),
    ("short_4Mx2", (4 << 20, 2), (2,), ("float32", "bfloat16")),
    ("short_column_4Mx3", (4 << 20, 3), (4 << 20, 1), ("float32", "bfloat16")),  # b one value per row
]
# (the eighteenth session's vectors-per-thread knob, 1 / 2 / 4, measured within 0.1-0.3 us everywhere and was
# removed: docs/data/nvidia-h200-2026-12-04a-add-dense-unroll-ab.txt)
ADD_CONFIGS = [
    ("planned", {}),
    ("flat", {"ELEMENTWISE_FLAT": 1}),  # the flat kernel wherever it applies (out contiguous, b broadcast)
    ("no_flat", {"ELEMENTWISE_FLAT": 0}),  # rows / strided (as before the twenty-eighth session)
]


def set_config(values: dict) -> None:
    for key in [k for k in os.environ if k.startswith("OPRT_TUNE_")]:
        del os.environ[key]
    for key, value in values.items():
        os.environ["OPRT_TUNE_" + key] = str(value)
    DESCRIPTOR_CACHE.clear()  # descriptors read the overrides when created


def jobs(cases, configs, interleave: bool):
    """(config, values, case, dtype) in run order: every case under one
    configuration before the next, or (interleave) every configuration of a
    case back to back, so a drift over the run (clocks, the first cases of a
    process running slow) falls on all of them alike."""
    if interleave:
        return [(c, v, case, d) for case in cases for d in case[-1] for c, v in configs]
    return [(c, v, case, d) for c, v in configs for case in cases for d in case[-1]]


def run(op: str, cases, configs, timing: TimingConfig, ceiling_tbps: float, interleave: bool = False) -> None:
    torch_us: dict = {}
    print(f"{'config':14s} {'case':20s} {'dtype':9s} {'variant':16s} {'us':>9s} {'TB/s':>6s} {'%ceil':>6s} "
          f"{'vs torch':>8s}  ok", flush=True)
    for config, values, (name, shape, dim, _), dtype_name in jobs(cases, configs, interleave):
        set_config(values)
        dtype = getattr(torch, dtype_name)
        gen = torch.Generator(device="cuda").manual_seed(1)
        x = torch.randn(shape, device="cuda", dtype=dtype, generator=gen)
        if op == "add":
            y = torch.randn(dim or shape, device="cuda", dtype=dtype, generator=gen)
            out = torch.full_like(x, float("nan"))
            prepared = oprt.prepare_vector_add(out, x, y, backend="nvidia")
            reference_out = torch.empty_like(out)
            reference = lambda: torch.add(x, y, out=reference_out)  # noqa: E731
            nbytes = (2 * x.numel() + y.numel()) * x.element_size()
        elif op == "copy":
            src = x.permute(dim)
            out = torch.full(src.shape, float("nan"), device="cuda", dtype=dtype)
            prepared = oprt.prepare_copy(out, src, backend="nvidia")
            reference_out = torch.empty_like(out)
            reference = lambda: reference_out.copy_(src)  # noqa: E731
            nbytes = 2 * x.numel() * x.element_size()
        elif op == "softmax":
            out = torch.full_like(x, float("nan"))
            prepared = oprt.prepare_softmax(out, x, dim, backend="nvidia")
            reference = lambda: torch.softmax(x, dim)  # noqa: E731
            nbytes = 2 * x.numel() * x.element_size()
        else:
            keep = tuple(s for i, s in enumerate(shape) if dim is not None and i != dim % len(shape))
            out = torch.full(keep, float("nan"), device="cuda", dtype=dtype)
            prepared = oprt.prepare_reduce_sum(out, x, dim, backend="nvidia")
            reference = (lambda: torch.sum(x, dim)) if dim is not None else (lambda: torch.sum(x))  # noqa: E731
            nbytes = x.numel() * x.element_size() + out.numel() * out.element_size()
        prepared.run()
        torch.cuda.synchronize()
        if op == "add":
            want = x + y
            ok = torch.equal(out, want)
        elif op == "copy":
            want = src.contiguous()  # torch's copy; compared bit for bit (NaN payloads too)
            bits = torch.int32 if dtype == torch.float32 else torch.int16
            ok = torch.equal(out.view(bits), want.view(bits))
        elif op == "softmax":
            want = torch.softmax(x.double(), dim)
            tol = 1e-5 if dtype == torch.float32 else 1e-2
            ok = torch.allclose(out.double(), want, rtol=tol, atol=1e-6)
        else:
            want = x.double().sum(dim) if dim is not None else x.double().sum()
            tol = 1e-4 if dtype == torch.float32 else 2e-2
            scale = x.double().abs().sum(dim) if dim is not None else x.double().abs().sum()
            ok = bool(((out.double() - want).abs() <= tol * scale + 1e-3).all())
        key = (name, dtype_name)
        fns = {"ours": prepared.run}
        if key not in torch_us:
            fns["torch"] = reference
        t = measure(fns, "cuda", timing)
        if key not in torch_us:
            torch_us[key] = t["torch"].median_us
        us = t["ours"].median_us
        tbps = nbytes / us / 1e6
        print(f"{config:14s} {name:20s} {dtype_name:9s} {prepared.variant:16s} {us:9.1f} {tbps:6.2f} "
              f"{100 * tbps / ceiling_tbps:6.0f} {torch_us[key] / us:7.2f}x  {'ok' if ok else 'BAD'}",
              flush=True)
        del x, out, prepared, want
        if op == "copy":
            del src, reference_out
        if op == "add":
            del y, reference_out


def copy_ceiling(timing: TimingConfig) -> float:
    a = torch.empty(1 << 28, device="cuda", dtype=torch.float32).normal_()
    b = torch.empty_like(a)
    us = measure({"copy": lambda: b.copy_(a)}, "cuda", timing)["copy"].median_us
    return 2 * a.numel() * 4 / us / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("softmax", "reduce_sum", "copy", "add"))
    parser.add_argument("--min-time", type=float, default=0.02)
    parser.add_argument("--configs", nargs="*",
                        help="only these configurations (by name), in this order (a name may repeat)")
    parser.add_argument("--cases", nargs="*", help="only cases whose name starts with one of these")
    parser.add_argument("--dtypes", nargs="*", help="only these dtypes (of each case's)")
    parser.add_argument("--interleave", action="store_true",
                        help="run every configuration of a case back to back (default: all cases of one, then the next)")
    args = parser.parse_args()
    timing = TimingConfig(min_time=args.min_time, max_reps=100)
    ceiling = copy_ceiling(timing)
    print(f"copy ceiling {ceiling:.3f} TB/s (1 GiB copy_, read + write)", flush=True)
    def chosen(configs):  # the table's order, or --configs's (repeats allowed: A B A B)
        if not args.configs:
            return configs
        table = dict(configs)
        return [(name, table[name]) for name in args.configs if name in table]

    def cases(table):
        picked = [c for c in table if not args.cases or c[0].startswith(tuple(args.cases))]
        if args.dtypes:
            picked = [(*c[:-1], tuple(d for d in c[-1] if d in args.dtypes)) for c in picked]
        return [c for c in picked if c[-1]]

    for op, case_table, config_table in (("softmax", SOFTMAX_CASES, SOFTMAX_CONFIGS),
                                         ("reduce_sum", REDUCE_CASES, REDUCE_CONFIGS),
                                         ("copy", COPY_CASES, COPY_CONFIGS), ("add", ADD_CASES, ADD_CONFIGS)):
        if args.only in (None, op):
            run(op, cases(case_table), chosen(config_table), timing, ceiling, args.interleave)


if __name__ == "__main__":
    main()
