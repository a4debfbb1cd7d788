// reduce_sum on NVIDIA GPUs. The plan (reduce_sum_plan.h) splits src's dims
// into kept dims (one output each) and reduced dims. Variants:
//   rows      the reduced elements of an output are contiguous runs: a group
//             of TPR threads per output (TPR from the run length: 1 thread
//             for tiny rows up to 256 for long ones), 16-byte vectors, a
//             scalar head per run that aligns them, 4 vectors in flight
//   columns   the outputs are contiguous in src (a sum over a non-last dim):
//             threads along the outputs with vectors, the reduced dim spread
//             over the block's other axis and combined in shared memory;
//             columns_shifted: 16-bit rows not 16-byte aligned (odd
//             widths), the vectors loaded aligned and shifted into place
//             across lanes; columns_whole: tiles of whole 16-byte vectors
//             and one reduced dim, a row loop with no per-row checks (a
//             misaligned base at execute runs `columns`); reduced dims of
//             stride 0 (broadcast) are dropped and each sum scaled by their
//             size at the output, one rounding (unbroadcast_dims)
//   rows_dense  `rows` where every output is one contiguous run: a leaner
//             kernel with 8 vectors in flight per thread
//   rows_aligned  `rows_dense` where the kept dims are at most one and the
//             rows 16-byte aligned and whole rounds (split: pieces of whole
//             rounds): no head, tail or per-load bound (a misaligned base at
//             execute runs `rows_dense`)
//   rows_short  short rows (at most 32 lanes of 2 vectors), 16-byte aligned
//             and whole vectors long: the fewest lanes that take a row in
//             one round, no head, no loop, a block per task (a misaligned
//             base at execute runs `rows`)
//   strided   neither: the rows kernel with scalar strided loads
//   zeros     nothing to reduce: out = 0;   empty: no outputs
// With too few outputs to fill the GPU, each output's range is split over
// several blocks ("_split"): partial sums go to the workspace and a second
// kernel adds them in a fixed order; column sums on sm_90 may instead make a
// tile's splits the blocks of a thread block cluster ("_cluster<C>"), merged
// in rank order through distributed shared memory. No atomics anywhere, so a given input
// gives bitwise the same output on every run. On sm_90 the second kernel is
// launched early (programmatic dependent launch, launch.cuh) and waits on
// the GPU for the first, which hides the launch gap between them.
// This file holds the descriptor, the plan and the launches; the kernels are
// in reduce_rows.cuh (rows, rows_dense, rows_aligned, rows_short, the split rows' finish)
// and reduce_columns.cuh (columns*, the split columns' finish).
#include "../reduce_sum_api.h"

#include <algorithm>
#include <string>

#include "../../common/descriptor.h"
#include "../../common/tuning.h"
#include "../../common/nvidia/cuda_types.cuh"
#include "../../common/nvidia/launch.cuh"
#include "../../common/nvidia/offset_calc.cuh"
#include "../reduce_sum_plan.h"
#include "reduce_columns.cuh"
#include "reduce_rows.cuh"

namespace oprt::nvidia {
namespace {

// (kernel shapes: kUnroll, kRowsBlock, kShortVectors in reduce_rows.cuh; kColumnsThreads, kColumnUnroll in
// reduce_columns.cuh)
constexpr int kMinRounds = 4;       // rows: rounds of loads per thread once a row takes more than a warp
constexpr int kSplitRounds = 16;    // split rows: rounds of 8 loads per thread to aim at
constexpr int kDenseMinRounds = 2;  // rows_dense: rounds per thread where a row is not whole rounds of the widest group

enum class Kind { kEmpty, kZeros, kRows, kColumns };

struct ReduceSumNvidia : oprt_descriptor {
  static constexpr const char* kName = "reduce_sum/nvidia";
  ReduceSumNvidia() : oprt_descriptor(descriptor_tag(kName)) {}
  Kind kind = Kind::kRows;
  int32_t dtype = 0;
  StridedLayout<2> kept;         // operand 0 = out, 1 = src
  StridedLayout<1> run_outer;    // rows: the reduced dims outside the innermost (src strides)
  StridedLayout<1> reduced;      // columns: every reduced dim (src strides)
  StridedLayout<2> plane_layout; // columns: kept without its innermost (column) dim
  bool rows_aligned = false;     // columns: every reduced and plane stride is a multiple of 16 bytes
  bool tiles_fastest = false;    // columns: task order (see ColumnsArgs)
  bool shifted = false;          // columns: unaligned rows take shifted vector loads (see the plan)
  int64_t src_first = 0, src_end = 0;  // columns: the range of src's element offsets, [first, end)
  int64_t rows = 0;              // outputs
  int64_t runs = 1, run_length = 0, run_stride = 1;
  int tpr = 1;                   // rows: threads per output
  int unroll = kUnroll;          // rows: vectors in flight per thread
  int waves = 2;                 // rows: resident grids of blocks in the grid
  int short_lanes = 0;           // rows_short: lanes per row (0: not planned)
  int short_rows_per_group = 1;  // rows_short: rows a group of lanes takes at a time (1 or 2)
  int aligned_tpr = 0;           // rows_aligned: lanes per task (0: not planned)
  int aligned_unroll = kDenseUnroll;  // rows_aligned (where planned): vectors a lane loads per round (4 or 8)
  int short_waves = 0;           // rows_short: resident grids in a grid-stride grid (0: a block per task)
  int tx = 32, ty = 8;           // columns: block shape
  int64_t columns = 0, col_tiles = 0, planes = 0, reduced_numel = 0;
  int64_t splits = 1, split_len = 0;
  double scale = 1;              // columns: the size of the broadcast reduced dims dropped from `reduced`
  bool clustered = false;        // columns_cluster: a tile's splits are the blocks of one cluster
  bool whole = false;            // columns: the whole-rows loop (add_whole_rows) where src is aligned (final tx)
  bool early_finish = true;      // split: launch the finishing kernel early (tests: OPRT_TUNE_REDUCE_EARLY_FINISH=0)
  bool dense_rows = false;       // rows: one contiguous run per output, reduce_dense_rows_kernel
  int finish_threads = 32;       // split rows: threads per row in finish_rows_kernel
};

// ---- zeros ------------------------------------------------------------------
template <class T, class Index>
__global__ void zeros_kernel(T* out, OffsetCalc<2, Index> kept, int64_t count) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t offsets[2];
    kept.get(static_cast<Index>(i), offsets);
    out[offsets[0]] = from_float<T>(0.0f);
  }
}

// ---- planning -----------------------------------------------------------------
StridedLayout<1> src_dims(const StridedLayout<2>& reduced, int count) {  // the first `count` dims, src strides
  StridedLayout<1> l;
  for (int d = 0; d < count; ++d) {
    const int64_t strides[1] = {reduced.strides[0][d]};
    l.push_dim(reduced.shape[d], strides);
  }
  return l;
}

// The reduced dims with a nonzero src stride (src strides), and in *scale
// the product of the sizes of the others: a broadcast (stride-0) dim adds
// each value `size` times, which the columns kernels do once, as one
// rounded product at the output (a 2^36-element broadcast sum read one
// element per column, not 2^36 in a serial chain).
StridedLayout<1> unbroadcast_dims(const StridedLayout<2>& reduced, double* scale) {
  StridedLayout<1> l;
  *scale = 1;
  for (int d = 0; d < reduced.ndim; ++d) {
    const int64_t strides[1] = {reduced.strides[0][d]};
    if (strides[0] == 0) *scale *= static_cast<double>(reduced.shape[d]);
    else l.push_dim(reduced.shape[d], strides);
  }
  return l;
}

// The whole-rows loop (add_whole_rows, no per-row checks) applies: tiles
// of tx threads whole aligned vectors, one reduced dim. Fewer instructions
// per load than the general loop, same order of adds (the tests compare the
// two bit for bit through OPRT_TUNE_REDUCE_COLUMN_WHOLE=0).
bool whole_rows_apply(const ReduceSumNvidia& d, int64_t tx, int vec) {
  return tuned("REDUCE_COLUMN_WHOLE", 1) != 0 && d.rows_aligned && d.reduced.ndim == 1 && d.columns % (tx * vec) == 0;
}

// columns_cluster: a split sum over columns whose C splits of a tile are
// the blocks of a thread block cluster, merged through distributed shared
// memory (write_cluster_sums) instead of a workspace and a second kernel.
// Tiles 8 threads (128 bytes) wide; C the largest power of two, at most 16,
// that keeps tiles * C blocks within one resident grid; planned where that
// grid is at least a quarter full (else the split's more, smaller blocks
// and its finishing kernel) and rows take vector loads (16-byte aligned
// strides), sm_90: no workspace round trip and no second kernel. Rows off
// 16-byte steps stay split: they ran slower in clusters that fill the GPU.
// Knobs (tests): OPRT_TUNE_REDUCE_COLUMN_CLUSTER (0: off, 2: any rows),
// _CLUSTER_TX (tile width in threads), _CLUSTER_MAX (1-16),
// _CLUSTER_MIN_BLOCKS (fewest blocks; planned a quarter of the grid).
void plan_column_cluster(ReduceSumNvidia* d, int vec) {
  const DeviceInfo& info = current_device_info();
  const int64_t mode = tuned("REDUCE_COLUMN_CLUSTER", 1);
  if (d->splits <= 1 || info.cc_major < 9 || mode == 0 || (mode == 1 && !d->rows_aligned)) return;
  const int64_t tile_threads = floor_pow2(tuned("REDUCE_COLUMN_CLUSTER_TX", 8));
  const int tx = static_cast<int>(std::min<int64_t>(d->tx, std::clamp<int64_t>(tile_threads, 1, kColumnsThreads)));
  const int ty = kColumnsThreads / tx;
  const int64_t col_tiles = ceil_div(d->columns, int64_t{tx} * vec), tiles = d->planes * col_tiles;
  const int64_t most =
      std::clamp<int64_t>(tuned("REDUCE_COLUMN_CLUSTER_MAX", kLargestCluster), 1, kLargestCluster);
  const int64_t rows_per_round = int64_t{ty} * kColumnUnroll;
  const bool whole = whole_rows_apply(*d, tx, vec);
  int64_t c = 0;
  dispatch_dtype(d->dtype, [&](auto type) {
    dispatch_index(std::max(d->rows * d->reduced_numel, d->rows), [&](auto index) {  // as execute does
      using T = decltype(type);
      using Index = decltype(index);
      const auto aligned = columns_kernel<T, Index, true>(false, whole);
      const auto shifted = columns_kernel<T, Index, true>(true, false);
      const bool planned_shifted = !d->rows_aligned && d->shifted;  // (a misaligned base at execute may shift)
      const int per_sm = resident_blocks_per_sm(planned_shifted ? shifted : aligned, kColumnsThreads);
      const int64_t resident = int64_t{info.sm_count} * std::max(1, per_sm);
      c = floor_pow2(std::min({most, resident / tiles, ceil_div(d->reduced_numel, rows_per_round)}));
      if (c < 2 || tiles * c < tuned("REDUCE_COLUMN_CLUSTER_MIN_BLOCKS", resident / 4)) {
        c = 0;
        return;
      }
      allow_large_column_clusters<T, Index>();
      for (; c >= 2; c /= 2)
        if (resident_clusters(aligned, c, kColumnsThreads, 0) > 0 &&
            resident_clusters(shifted, c, kColumnsThreads, 0) > 0)
          break;
    });
  });
  if (c < 2) return;
  d->clustered = true;
  d->tiles_fastest = false;  // tasks split fastest: a cluster's C consecutive blocks are one tile's splits
  d->tx = tx;
  d->ty = ty;
  d->col_tiles = col_tiles;
  d->splits = c;
  d->split_len = ceil_div(ceil_div(d->reduced_numel, c), rows_per_round) * rows_per_round;
  d->workspace_bytes = 0;
}

// Threads that can be resident at once: the grid the split aims to fill.
int64_t resident_threads() { return int64_t{current_device_info().sm_count} * 2048; }

// columns: the outputs contiguous in src (a sum over a non-last dim).
void plan_columns(ReduceSumNvidia* d, const ReduceSumProblem& p, int element_size) {
  const StridedLayout<2>& kept = d->kept;
  const StridedLayout<2>& reduced = p.layout.reduced;
  const int vec = 16 / element_size;
  // columns: tile = TX threads x VEC columns; TY threads down the reduced dims.
  d->kind = Kind::kColumns;
  d->variant = "columns";
  d->columns = kept.inner_size();
  const int64_t max_tx = std::clamp<int64_t>(floor_pow2(tuned("REDUCE_COLUMN_TX", 32)), 1, kColumnsThreads);
  d->tx = static_cast<int>(std::min<int64_t>(max_tx, floor_pow2(ceil_div(d->columns, vec) * 2 - 1)));
  // Blocks that run together take the same split of neighbouring tiles, so
  // they read whole rows between them (tests: OPRT_TUNE_REDUCE_COLUMN_ORDER=0
  // numbers the splits fastest).
  d->tiles_fastest = tuned("REDUCE_COLUMN_ORDER", 1) != 0;
  d->ty = kColumnsThreads / d->tx;
  d->col_tiles = ceil_div(d->columns, int64_t{d->tx} * vec);
  d->planes = d->rows / d->columns;
  d->reduced = unbroadcast_dims(reduced, &d->scale);
  d->reduced_numel = d->reduced.numel();
  d->plane_layout = outer_dims(kept);
  // Column tiles start at multiples of VEC, so rows are 16-byte aligned
  // everywhere when the base is (checked at execute) and these strides are.
  d->rows_aligned =
      strides_aligned16(d->reduced, 0, element_size) && strides_aligned16(d->plane_layout, 1, element_size);
  // Shifted loads for 16-bit only: a float32 row vector is 4 element
  // loads, which run faster than the shifted kernel's 60-70 registers and
  // extra instructions. OPRT_TUNE_REDUCE_COLUMN_SHIFTED (tests): 0 none, 2
  // every dtype.
  const int64_t shifted = tuned("REDUCE_COLUMN_SHIFTED", 1);
  d->shifted = shifted == 2 || (shifted == 1 && element_size < 4);
  if (!d->rows_aligned && d->shifted) d->variant = "columns_shifted";
  d->src_end = 1;  // [src_first, src_end): the element offsets src's view reaches
  for (int k = 0; k < p.src.ndim; ++k)
    (p.src.strides[k] < 0 ? d->src_first : d->src_end) += (p.src.shape[k] - 1) * p.src.strides[k];
  const int64_t tiles = d->planes * d->col_tiles;
  // Splits: whole waves of the blocks an SM holds (its registers allow 5
  // of 256 threads), 2 for float32 and 1 for 16-bit, whose tiles are twice
  // as many columns wide; each split whole rounds of the block's loads
  // (TY x kColumnUnroll rows). Aiming at 8 blocks per SM left a partial
  // last wave; OPRT_TUNE_REDUCE_COLUMN_FIT=0 (tests) aims there.
  const bool fit = tuned("REDUCE_COLUMN_FIT", 1) != 0;
  int64_t per_sm = 2048 / kColumnsThreads;
  if (fit) {
    dispatch_dtype(d->dtype, [&](auto type) {
      dispatch_index(std::max(d->rows * d->reduced_numel, d->rows), [&](auto index) {
        using T = decltype(type);
        using Index = decltype(index);
        per_sm = resident_blocks_per_sm(
            columns_kernel<T, Index, false>(!d->rows_aligned && d->shifted, whole_rows_apply(*d, d->tx, vec)),
            kColumnsThreads);
      });
    });
  }
  const int64_t planned_quarters = element_size == 4 ? 8 : 4;
  const int64_t target_blocks = current_device_info().sm_count * std::max<int64_t>(1, per_sm) * planned_quarters / 4;
  const int64_t min_rows_per_split = int64_t{d->ty} * kColumnUnroll * 4;
  const int64_t max_splits = std::max<int64_t>(1, d->reduced_numel / min_rows_per_split);
  d->splits = std::min(max_splits, fit ? std::max<int64_t>(1, target_blocks / tiles) : ceil_div(target_blocks, tiles));
  d->split_len = ceil_div(d->reduced_numel, d->splits);
  const int64_t round_rows = int64_t{d->ty} * kColumnUnroll;
  if (fit) d->split_len = ceil_div(d->split_len, round_rows) * round_rows;  // (fewer splits, never more)
  d->splits = ceil_div(d->reduced_numel, d->split_len);
  plan_column_cluster(d, vec);  // (may narrow the tiles: tx)
  d->whole = whole_rows_apply(*d, d->tx, vec);
  if (d->whole) d->variant = "columns_whole";
  if (d->clustered) {
    d->variant += "_cluster" + std::to_string(d->splits);
  } else if (d->splits > 1) {
    d->variant += "_split";
    d->workspace_bytes = static_cast<size_t>(tiles * d->splits * d->tx * vec) * sizeof(float);
  }
}

// rows (or strided): each output's reduced elements in runs along the
// innermost reduced dim.
void plan_rows(ReduceSumNvidia* d, const ReduceSumProblem& p, int element_size) {
  const StridedLayout<2>& kept = d->kept;
  const StridedLayout<2>& reduced = p.layout.reduced;
  const int vec = 16 / element_size;
  const bool rows_contiguous = reduced.inner_stride(0) == 1;
  d->kind = Kind::kRows;
  d->variant = rows_contiguous ? "rows" : "strided";
  d->run_length = reduced.inner_size();
  d->run_stride = reduced.inner_stride(0);
  d->run_outer = src_dims(reduced, reduced.ndim - 1);
  d->runs = d->run_outer.numel();
  const int64_t per_run = rows_contiguous ? d->run_length / vec : d->run_length;  // loads per run
  // Threads per output: one round of kUnroll loads each covers the run, but
  // past a warp each thread gets kMinRounds rounds: a wide group doing a
  // single round spends most of its time in the group reduction with no
  // loads in flight.
  // rows_dense (reduce_dense_rows_kernel): one contiguous run per output,
  // 8 vectors a round; 2 rounds past a warp ran faster than 4
  // (tests: OPRT_TUNE_REDUCE_DENSE_ROWS=0 runs `rows` instead). A run that
  // is whole rounds of the widest group takes 1 round, and the grid a block
  // per task; rows of 1.5 such rounds keep 2, which ran faster there.
  d->dense_rows = rows_contiguous && d->runs == 1 && tuned("REDUCE_DENSE_ROWS", 1) != 0;
  d->unroll = d->dense_rows ? kDenseUnroll : tuned("REDUCE_UNROLL", kUnroll) == 8 ? 8 : kUnroll;
  d->waves = static_cast<int>(std::clamp<int64_t>(tuned("REDUCE_WAVES", d->dense_rows ? 64 : 2), 1, 64));
  const int64_t one_round = std::max<int64_t>(1, per_run / d->unroll);
  const int64_t widest = std::clamp<int64_t>(floor_pow2(one_round), 1, kRowsBlock);
  const int64_t planned_rounds = !d->dense_rows                        ? kMinRounds
                                 : per_run % (widest * d->unroll) == 0 ? 1
                                                                       : kDenseMinRounds;
  const int64_t min_rounds = std::max<int64_t>(1, tuned("REDUCE_MIN_ROUNDS", planned_rounds));
  const int64_t tpr = std::min<int64_t>(one_round, std::max<int64_t>(32, one_round / min_rounds));
  d->tpr = static_cast<int>(std::clamp<int64_t>(floor_pow2(tpr), 1, tuned("REDUCE_MAX_TPR", kRowsBlock)));
  // Split when the outputs cannot fill half a resident grid of threads and
  // each piece still gets at least kMinRounds rounds of loads per thread.
  // Then aim at about kSplitRounds rounds of 8 loads per thread, with
  // between half a grid and two of threads: a fixed half grid slowed the
  // largest split sums, a fixed two grids the smaller ones.
  const int64_t row_threads = d->rows * d->tpr;
  const int64_t fewest = ceil_div(resident_threads() / 2, row_threads);
  if (fewest > 1) {
    const int64_t most = std::max(fewest, ceil_div(resident_threads() * 2, row_threads));
    const int64_t want =
        std::clamp(ceil_div(per_run * d->runs, int64_t{d->tpr} * 8 * kSplitRounds), fewest, most);
    const int64_t units = d->runs == 1 ? d->run_length : d->runs;
    const int64_t min_unit = d->runs == 1 ? int64_t{d->tpr} * (rows_contiguous ? vec : 1) * d->unroll * min_rounds : 1;
    d->splits = std::max<int64_t>(1, std::min(want, units / min_unit));
    d->split_len = ceil_div(units, d->splits);
    if (d->runs == 1 && rows_contiguous) d->split_len = ceil_div(d->split_len, vec) * vec;
    d->splits = ceil_div(units, d->split_len);
  }
  // Split contiguous runs: 8 vectors in flight per thread (faster on long
  // split sums; rows that do not split gained nothing).
  if (d->splits > 1 && d->runs == 1 && rows_contiguous && !d->dense_rows)
    d->unroll = tuned("REDUCE_UNROLL", 8) == 4 ? 4 : 8;
  // rows_aligned (reduce_aligned_rows_kernel): rows_dense where the kept
  // dims are at most one and every row 16-byte aligned (the base checked at
  // execute, else rows_dense runs with the same splits); unsplit, the rows
  // must be whole rounds of at least 32 lanes, split, each piece is made
  // whole rounds of the planned lanes (tests: OPRT_TUNE_REDUCE_ALIGNED=0).
  // A lane loads 32 elements a round: 8 vectors in float32, 4 in 16-bit,
  // which then takes twice the lanes of rows_dense's 8 vectors: more loads
  // in flight per row, faster on 16-bit rows of every size.
  // OPRT_TUNE_REDUCE_ALIGNED_UNROLL (tests): 4 or 8 vectors in every dtype.
  const int unroll = d->aligned_unroll = static_cast<int>(
      floor_pow2(std::clamp<int64_t>(tuned("REDUCE_ALIGNED_UNROLL", 32 / vec), 4, kDenseUnroll)));
  const int64_t row_vectors = d->run_length / vec;
  if (d->dense_rows && d->kept.ndim <= 1 && d->run_length % vec == 0 && strides_aligned16(kept, 1, element_size) &&
      tuned("REDUCE_ALIGNED", 1) != 0) {
    if (d->splits <= 1) {
      const int64_t lane_vectors = row_vectors % unroll == 0 ? row_vectors / unroll : 0;
      const int64_t lanes = std::min<int64_t>(kRowsBlock, lane_vectors & -lane_vectors);  // its largest 2^k divisor
      if (lanes >= 32 && row_vectors <= INT32_MAX / 2) d->aligned_tpr = static_cast<int>(lanes);
    } else if (d->tpr >= 32) {
      const int64_t round = int64_t{d->tpr} * unroll;
      const int64_t piece = ceil_div(ceil_div(row_vectors, d->splits), round) * round;
      if (piece <= INT32_MAX / 2) {
        d->aligned_tpr = d->tpr;
        d->split_len = piece * vec;  // rows_dense's split of the same pieces, should the base not be aligned
        d->splits = ceil_div(row_vectors, piece);
      }
    }
  }
  if (d->splits <= 1) {
    d->splits = 1;
    d->split_len = d->runs == 1 ? d->run_length : d->runs;
  } else {
    d->variant += "_split";
    d->workspace_bytes = static_cast<size_t>(d->rows * d->splits) * sizeof(float);
    const int64_t finish = tuned("REDUCE_FINISH_THREADS", ceil_pow2(ceil_div(d->splits, 4)));
    d->finish_threads = static_cast<int>(std::clamp<int64_t>(ceil_pow2(finish), 32, kFinishThreads));
  }
  if (d->dense_rows) d->variant = d->splits > 1 ? "rows_dense_split" : "rows_dense";
  if (d->aligned_tpr > 0) d->variant = d->splits > 1 ? "rows_aligned_split" : "rows_aligned";
  // rows_short (reduce_short_rows_kernel): one contiguous run per output, at
  // most a warp of kShortVectors vectors a lane, whole vectors long, every
  // row 16-byte aligned given an aligned base (checked at execute, else the
  // rows kernel planned above runs). OPRT_TUNE_REDUCE_SHORT_ROWS (tests): 0
  // runs `rows` instead, 2 gives every lane group 2 rows at a time.
  const int64_t short_form = tuned("REDUCE_SHORT_ROWS", 1);
  if (short_form > 0 && rows_contiguous && d->runs == 1 && d->splits == 1 && d->run_length % vec == 0 &&
      row_vectors <= 32 * kShortVectors && strides_aligned16(kept, 1, element_size)) {
    d->variant = "rows_short";
    d->short_lanes = static_cast<int>(ceil_pow2(ceil_div(row_vectors, kShortVectors)));
    d->short_rows_per_group = short_form == 2 ? 2 : 1;
    d->short_waves = static_cast<int>(std::clamp<int64_t>(tuned("REDUCE_SHORT_WAVES", 0), 0, 64));
  }
}

ReduceSumNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, const int32_t* dims,
                        int32_t num_dims, int32_t keepdim) {
  ReduceSumProblem p = plan_reduce_sum(out, src, dims, num_dims, keepdim);
  require_nvidia_dtype(p.src, "src");
  auto* d = new ReduceSumNvidia;
  d->dtype = p.src.dtype;
  d->early_finish = tuned("REDUCE_EARLY_FINISH", 1) != 0;
  d->kept = p.layout.kept;
  d->rows = p.layout.kept_numel();
  d->reduced_numel = p.layout.reduced_numel();
  const int element_size = p.src.element_size();
  if (d->rows == 0) {
    d->kind = Kind::kEmpty;
    d->variant = "empty";
    return d;
  }
  if (d->reduced_numel == 0) {
    d->kind = Kind::kZeros;
    d->variant = "zeros";
    return d;
  }
  // Columns where the outputs are contiguous in src and the reduced elements are not.
  if (p.layout.reduced.inner_stride(0) != 1 && d->kept.inner_stride(1) == 1 && d->kept.inner_size() > 1)
    plan_columns(d, p, element_size);
  else
    plan_rows(d, p, element_size);
  return d;
}

// ---- launch -------------------------------------------------------------------
// The kernel that adds a split's partials (kFinishThreads a block): launched
// early where the device allows it (see the file comment).
template <class... Params, class... Args>
void launch_finish(const ReduceSumNvidia& d, void (*kernel)(Params...), unsigned grid, cudaStream_t stream,
                   Args... args) {
  launch_early_if(d.early_finish, kernel, grid, kFinishThreads, 0, stream, args...);
}

// Threads per row in finish_rows_kernel: enough that each adds at most 4
// partials, 32 to kFinishThreads (tests: OPRT_TUNE_REDUCE_FINISH_THREADS).
template <class T, class Index>
void launch_finish_rows(const ReduceSumNvidia& d, T* out, const float* partials, cudaStream_t stream) {
  visit_pow2<32, kFinishThreads>(d.finish_threads, "reduce_sum: finishing threads per row", [&](auto f) {
    constexpr int F = decltype(f)::value;
    launch_finish(d, finish_rows_kernel<T, F, Index>, grid_for(ceil_div(d.rows, kFinishThreads / F), 8, 1), stream,
                  out, partials, OffsetCalc<2, Index>(d.kept), d.rows, d.splits);
  });
}

template <class T, int TPR, int U, class Index>
void launch_rows_tpr(const ReduceSumNvidia& d, T* out, const T* src, float* partials, cudaStream_t stream) {
  constexpr int block = kRowsBlock;
  const int groups = block / TPR;
  const RowsArgs args{d.rows, d.runs, d.run_length, d.run_stride, d.splits, d.split_len, partials};
  const unsigned grid = grid_for(ceil_div(d.rows * d.splits, groups), 2048 / block, d.waves);
  reduce_rows_kernel<T, TPR, U, Index><<<grid, block, 0, stream>>>(out, src, OffsetCalc<2, Index>(d.kept),
                                                                    OffsetCalc<1, Index>(d.run_outer), args);
  check_launch("reduce_rows_kernel");
  if (d.splits > 1)
    launch_finish_rows<T, Index>(d, out, partials, stream);
}

template <class T, int U, class Index>
void launch_rows_unrolled(const ReduceSumNvidia& d, T* out, const T* src, float* partials, cudaStream_t stream) {
  visit_pow2<1, kRowsBlock>(d.tpr, "reduce_sum rows: threads per output", [&](auto tpr) {
    launch_rows_tpr<T, tpr.value, U, Index>(d, out, src, partials, stream);
  });
}

// The kept dims' strides where they are at most one (no kept dims: a
// single row, at offset 0 with the layout's zero strides).
RowStrides row_strides_of(const ReduceSumNvidia& d) {
  return {d.kept.ndim <= 1, d.kept.strides[0][0], d.kept.strides[1][0]};
}

template <class T, class Index>
void launch_dense_rows(const ReduceSumNvidia& d, T* out, const T* src, float* partials, cudaStream_t stream) {
  const DenseRowsArgs args{d.rows, d.run_length, d.splits, d.split_len, partials};
  const RowStrides row_strides = row_strides_of(d);
  visit_pow2<1, kRowsBlock>(d.tpr, "reduce_sum rows_dense: threads per output", [&](auto tpr) {
    constexpr int TPR = decltype(tpr)::value;
    const unsigned grid = grid_for(ceil_div(d.rows * d.splits, kRowsBlock / TPR), 2048 / kRowsBlock, d.waves);
    reduce_dense_rows_kernel<T, TPR, Index><<<grid, kRowsBlock, 0, stream>>>(out, src, OffsetCalc<2, Index>(d.kept),
                                                                             row_strides, args);
    check_launch("reduce_dense_rows_kernel");
  });
  if (d.splits > 1)
    launch_finish_rows<T, Index>(d, out, partials, stream);
}

template <class T, class Index>
void launch_aligned_rows(const ReduceSumNvidia& d, T* out, const T* src, float* partials, cudaStream_t stream) {
  constexpr int VEC = kVec16<T>;
  const RowStrides strides = row_strides_of(d);
  const AlignedRowsArgs args{d.rows,   strides.out, strides.src, d.splits, static_cast<int>(d.split_len / VEC),
                             d.run_length / VEC, partials};
  visit_pow2<32, kRowsBlock>(d.aligned_tpr, "reduce_sum rows_aligned: lanes per task", [&](auto tpr) {
    visit_pow2<4, kDenseUnroll>(d.aligned_unroll, "reduce_sum rows_aligned: vectors per lane", [&](auto unroll) {
      constexpr int TPR = decltype(tpr)::value, U = decltype(unroll)::value;
      const unsigned grid = grid_for(ceil_div(d.rows * d.splits, kRowsBlock / TPR), 2048 / kRowsBlock, d.waves);
      reduce_aligned_rows_kernel<T, TPR, U><<<grid, kRowsBlock, 0, stream>>>(out, src, args);
      check_launch("reduce_aligned_rows_kernel");
    });
  });
  if (d.splits > 1)
    launch_finish_rows<T, Index>(d, out, partials, stream);
}

template <class T, int LANES, int ROWS, class Index>
void launch_short_rows_shape(const ReduceSumNvidia& d, T* out, const T* src, cudaStream_t stream) {
  const int64_t blocks = ceil_div(d.rows, kRowsBlock / LANES * ROWS);
  const unsigned grid =
      d.short_waves > 0 ? grid_for(blocks, 2048 / kRowsBlock, d.short_waves) : grid_one_shot(blocks);
  const RowStrides row_strides = row_strides_of(d);
  reduce_short_rows_kernel<T, LANES, ROWS, Index><<<grid, kRowsBlock, 0, stream>>>(
      out, src, OffsetCalc<2, Index>(d.kept), row_strides, d.rows, static_cast<int>(d.run_length / kVec16<T>));
  check_launch("reduce_short_rows_kernel");
}

template <class T, int ROWS, class Index>
void launch_short_rows_lanes(const ReduceSumNvidia& d, T* out, const T* src, cudaStream_t stream) {
  visit_pow2<1, 32>(d.short_lanes, "reduce_sum rows_short: lanes per row", [&](auto lanes) {
    launch_short_rows_shape<T, lanes.value, ROWS, Index>(d, out, src, stream);
  });
}

template <class T, class Index>
void launch_rows(const ReduceSumNvidia& d, T* out, const T* src, float* partials, cudaStream_t stream) {
  if (d.short_lanes > 0 && aligned16(src)) {
    if (d.short_rows_per_group == 2) return launch_short_rows_lanes<T, 2, Index>(d, out, src, stream);
    return launch_short_rows_lanes<T, 1, Index>(d, out, src, stream);
  }
  if (d.aligned_tpr > 0 && aligned16(src)) return launch_aligned_rows<T, Index>(d, out, src, partials, stream);
  if (d.dense_rows) return launch_dense_rows<T, Index>(d, out, src, partials, stream);
  if (d.unroll == 8) return launch_rows_unrolled<T, 8, Index>(d, out, src, partials, stream);
  return launch_rows_unrolled<T, kUnroll, Index>(d, out, src, partials, stream);
}

template <class T, class Index>
void launch_columns(const ReduceSumNvidia& d, T* out, const T* src, float* partials, cudaStream_t stream) {
  constexpr int VEC = kVec16<T>;
  ColumnsArgs args{};
  args.columns = d.columns;
  args.col_tiles = d.col_tiles;
  args.planes = d.planes;
  args.reduced = d.reduced_numel;
  args.splits = d.splits;
  args.split_len = d.split_len;
  args.out_stride = d.kept.inner_stride(0);
  args.reduced_stride = d.reduced.ndim == 1 ? d.reduced.strides[0][0] : 0;
  args.vectors_ok = d.rows_aligned && aligned16(src);
  args.tiles_fastest = d.tiles_fastest;
  args.partials = partials;
  args.scale = d.scale;
  const int64_t tasks = d.planes * d.col_tiles * d.splits;
  const dim3 block(d.tx, d.ty);
  args.src_first = d.src_first;
  args.src_end = d.src_end;
  const OffsetCalc<2, Index> planes(d.plane_layout);
  const OffsetCalc<1, Index> reduced(d.reduced);
  const bool shifted = !args.vectors_ok && d.shifted;
  const bool whole = args.vectors_ok && d.whole;
  if (d.clustered) {  // a block per task, a tile's splits one cluster
    allow_large_column_clusters<T, Index>();  // on this device (the descriptor may be another's)
    launch_with(cluster_attribute(static_cast<unsigned>(d.splits)), columns_kernel<T, Index, true>(shifted, whole),
                static_cast<unsigned>(tasks), block, 0, stream, out, src, planes, reduced, args);
  } else {
    const unsigned grid = grid_for(tasks, 2048 / kColumnsThreads, 2);
    const auto kernel = columns_kernel<T, Index, false>(shifted, whole);
    kernel<<<grid, block, 0, stream>>>(out, src, planes, reduced, args);
  }
  check_launch("reduce_columns_kernel");
  if (d.splits > 1 && !d.clustered)
    launch_finish(d, finish_columns_kernel<T, Index>, grid_for(ceil_div(d.rows, 8), 8, 2), stream, out, partials,
                  OffsetCalc<2, Index>(d.plane_layout), args, int64_t{d.tx} * VEC);
}

void execute(const ReduceSumNvidia& d, void* workspace, void* out, const void* src, void* stream_handle) {
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_handle);
  require_data(out, "out", d.rows);
  require_data(src, "src", d.rows * d.reduced_numel);
  if (d.kind == Kind::kEmpty) return;
  StreamDeviceGuard device(stream);
  auto* partials = static_cast<float*>(workspace);
  const int64_t largest = std::max({d.rows * d.reduced_numel, d.rows, d.runs});
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    dispatch_index(largest, [&](auto index) {
      using Index = decltype(index);
      T* o = static_cast<T*>(out);
      const T* s = static_cast<const T*>(src);
      if (d.kind == Kind::kZeros) {
        zeros_kernel<T, Index><<<grid_for(ceil_div(d.rows, 256), 8, 2), 256, 0, stream>>>(
            o, OffsetCalc<2, Index>(d.kept), d.rows);
        check_launch("zeros_kernel");
      } else if (d.kind == Kind::kColumns) {
        launch_columns<T, Index>(d, o, s, partials, stream);
      } else {
        launch_rows<T, Index>(d, o, s, partials, stream);
      }
    });
  });
}

}  // namespace
}  // namespace oprt::nvidia

OPRT_DEFINE_OP(reduce_sum, nvidia, oprt::nvidia::ReduceSumNvidia, oprt::nvidia::create, oprt::nvidia::execute)
