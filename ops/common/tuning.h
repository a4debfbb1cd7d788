// Overrides of planned launch choices, so that tests can reach kernels the
// planner keeps for other shapes: with OPRT_TUNE_<NAME>=<integer> in the
// environment, tuned("<NAME>", planned) returns that integer instead of
// `planned`. Read when a descriptor is created; unset in normal use.
//
// Every knob, each kept because a test sets it. Tests: cuda = the GPU tests
// under ops/ (a variant case name of ops/common/nvidia/test_along_dim_nvidia.py,
// test_elementwise_nvidia.py, ops/copy/nvidia/test_copy_nvidia.py or
// ops/reduce_sum/nvidia/test_reduce_sum_nvidia.py, or a test function there),
// emu = a case of tests/emulation/<op>_harness.cc (tests/test_nvidia_emulated.py),
// plan = the plan tests in ops/copy/nvidia/ and ops/common/nvidia/. The TileLang
// backend reads OPRT_TUNE_SOFTMAX_COLUMN_CLUSTER=0 as well (tuned_off, in
// python/operator_runtime/_internal/tilelang_device.py).
//
//   NAME                            overrides
//   CPU_STREAM_BYTES                bytes above which dense CPU outputs use streaming stores
//                                     test: ops/common/cpu/test_elementwise_cpu.py (0: always)
//   COPY_ODD_KERNEL                 0: odd-byte dense copies on cudaMemcpyAsync
//                                     test: cuda copy-odd-memcpy-told; plan; emu contiguous-odd-memcpy
//   COPY_TRANSPOSE_VEC              3 planned, 2 no _shift, 1 16-bit only, 0 tiled
//                                     test: cuda copy-transpose-odd-told-tiled; plan; emu transpose-tiled-only
//   ELEMENTWISE_FLAT                1: flat wherever it applies, 0: never
//                                     test: cuda add-flat-*; plan; emu *-flat, *-rows
//   REDUCE_ALIGNED                  0: rows_dense, not rows_aligned
//                                     test: cuda sum-rows-dense, sum-rows-dense-split
//   REDUCE_ALIGNED_UNROLL           rows_aligned vectors a lane per round (4, 8)
//                                     test: cuda sum-rows-unroll4*, sum-rows-unroll8*
//   REDUCE_COLUMN_CLUSTER           0: split, not columns_cluster; 2: any rows
//                                     test: cuda sum-columns-cluster2; emu columns-whole-split
//   REDUCE_COLUMN_CLUSTER_MAX       largest columns_cluster (1-16)
//                                     test: cuda sum-columns-cluster8; emu accuracy-columns-*-chains
//   REDUCE_COLUMN_CLUSTER_MIN_BLOCKSfewest blocks of a columns_cluster grid
//                                     test: cuda sum-columns-cluster*; emu accuracy-columns-*-chains
//   REDUCE_COLUMN_CLUSTER_TX        threads across a columns_cluster tile
//                                     test: cuda sum-columns-cluster-shifted; emu accuracy-columns-*-chains
//   REDUCE_COLUMN_FIT               0: split columns aim at 8 blocks per SM
//                                     test: emu tuned-columns-unfit
//   REDUCE_COLUMN_ORDER             0: column tasks numbered splits fastest
//                                     test: emu tuned-columns-splits-fastest
//   REDUCE_COLUMN_SHIFTED           0: element loads, 2: shifted in every dtype
//                                     test: cuda sum-columns-shifted-*; emu tuned-columns-float32-shifted
//   REDUCE_COLUMN_TX                most threads across a columns tile
//                                     test: emu tuned-columns-narrow-tiles
//   REDUCE_COLUMN_WHOLE             0: the general row loop, not columns_whole
//                                     test: cuda test_sum_columns_whole_rows_match_general_loop
//   REDUCE_DENSE_ROWS               0: rows, not rows_dense
//                                     test: cuda sum-rows-dense-off; emu tuned-rows-*
//   REDUCE_EARLY_FINISH             0: finishing kernel launched the plain way
//                                     test: emu tuned-late-finish
//   REDUCE_FINISH_THREADS           threads per row adding split partials
//                                     test: emu tuned-finish-threads
//   REDUCE_MAX_TPR                  most threads per output row
//                                     test: cuda sum-rows-split-groups*
//   REDUCE_MIN_ROUNDS               rows: rounds of loads a thread past a warp
//                                     test: emu tuned-wide-groups-loop*
//   REDUCE_SHORT_ROWS               0: no rows_short, 2: 2 rows per lane group
//                                     test: cuda sum-rows-short-off, -2-rows-per-group; emu tuned-short-pairs
//   REDUCE_SHORT_WAVES              rows_short as a grid-stride grid of N waves
//                                     test: cuda sum-rows-short-strided-grid; emu tuned-short-waves
//   REDUCE_UNROLL                   rows: 4 or 8 vectors in flight a thread
//                                     test: emu tuned-rows-unroll-8, tuned-split-unroll-4
//   REDUCE_WAVES                    rows: resident grids in the grid
//                                     test: emu tuned-wide-groups-loop*
//   ROW_SUM_COLUMN_SPLITS           splits of a softmax_backward-family columns tile's dim over blocks
//                                     test: cuda columns, strided-split; emu *-split-told, *-split
//   ROW_SUM_COLUMN_VECTORS          0: a column a thread, not a 16-byte vector of columns
//                                     test: cuda columns, columns-split
//   ROW_SUM_HELD_VECTORS            longest softmax_backward-family row (16-byte vectors) held in registers
//                                     test: cuda rows-block*; emu block, block-wide-held
//   ROW_SUM_SPLITS                  chunks per contiguous softmax_backward-family row (1: rows_block)
//                                     test: cuda rows-block-told, rows-split-told; emu block-wide, split-*
//   SOFTMAX_CLUSTER_MAX             largest rows_cluster (1: none)
//                                     test: emu long-resident*, long-split*
//   SOFTMAX_COLUMN_CLUSTER          0: columns, not columns_cluster
//                                     test: cuda softmax-columns
//   SOFTMAX_COLUMN_CLUSTER_TX       threads across a columns_cluster tile
//                                     test: cuda softmax-columns-cluster-128-byte-tiles
//   SOFTMAX_COLUMN_SPLITS           most splits of the columns dim over blocks
//                                     test: emu accuracy-columns-long-chains
//   SOFTMAX_DENSE                   0: the general rows kernel on dense rows
//                                     test: cuda softmax-rows-block-general, test_many_row_softmax_special_values
//   SOFTMAX_FLAT                    0: dense odd rows in the shifted form
//                                     test: cuda softmax-rows-block-dense-odd-shifted, test_odd_row_softmax_edge_values
//   SOFTMAX_RESIDENT                0: rows_split2, not rows_resident
//                                     test: cuda softmax-rows-split*, test_long_row_softmax_special_values; emu
//   SOFTMAX_RESIDENT_CACHE          shared-memory vectors a rows_resident block uses
//                                     test: cuda softmax-rows-resident*-partly-cached, *-rest-reread
//   SOFTMAX_RESIDENT_COPIES         0: bulk copies, 1: rows_resident_copies
//                                     test: cuda softmax-rows-resident-copies-*; emu long-resident-copies
//   SOFTMAX_SHARED                  0: no rows_shared
//                                     test: cuda softmax-rows-cluster*, -twice*, -split*; emu long-*
//   SOFTMAX_SHARED_KB               largest rows_shared slice per block, KiB
//                                     test: cuda softmax-rows-shared-one-block, test_shared_row_softmax_special_values
//   SOFTMAX_SHARED_ONE_KB           largest row one rows_shared block takes, KiB
//                                     test: cuda softmax-rows-shared-large-clusters
//   SOFTMAX_SLOTS                   2/4/8 vectors a thread in register rows
//                                     test: cuda softmax-rows-stream*
//   SOFTMAX_SPLIT_LAUNCHES          1: the cooperative rows_split
//                                     test: cuda softmax-rows-split-cooperative; emu long-split
//   SOFTMAX_STREAM                  0: rows_block, not rows_stream
//                                     test: cuda test_many_row_softmax_special_values
//   SOFTMAX_STREAM_BELOW            stream below this many rows_block blocks/SM
//                                     test: cuda softmax-rows-stream*; emu stream*
//   SOFTMAX_STREAM_BLOCKS           most rows_stream blocks per SM
//                                     test: emu stream-bfloat16
//   SOFTMAX_STREAM_BUFFERS          rows in shared memory a rows_stream block
//                                     test: cuda softmax-rows-stream-3-buffers; emu stream-buffers
//   SOFTMAX_TWICE_BLOCKS            rows_twice blocks per SM
//                                     test: cuda softmax-rows-twice-one-block-per-sm
//   SOFTMAX_TWICE_CACHE_KB          rows_twice's row cache in shared memory, KB
//                                     test: cuda softmax-rows-twice-*cache*, test_many_long_row_softmax_special_values

#ifndef OPRT_COMMON_TUNING_H_
#define OPRT_COMMON_TUNING_H_

#include <cstdint>
#include <cstdlib>
#include <string>

namespace oprt {

inline int64_t tuned(const char* name, int64_t planned) {
  const char* value = std::getenv(("OPRT_TUNE_" + std::string(name)).c_str());
  if (value == nullptr || *value == '\0') return planned;
  char* end = nullptr;
  const long long v = std::strtoll(value, &end, 10);
  return *end == '\0' ? static_cast<int64_t>(v) : planned;
}

}  // namespace oprt

#endif
