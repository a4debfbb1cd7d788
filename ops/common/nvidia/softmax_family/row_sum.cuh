// The softmax family's two-input ops on NVIDIA GPUs (softmax_backward,
// log_softmax_backward: one layer, an epilogue apart): out = E::out(a, b, s)
// with s the row's sum of E::term(a, b) along the dim, in float, rounded
// once on store. The backend-neutral plan (common/softmax_plan.h) gives the
// dim's length, each tensor's stride along it and the other dims coalesced.
//
// The one-input variants (plan.cuh) are built around one input's loads and
// a running (max, sum) pair: rows held in registers or shared memory,
// bulk copies of one source, the columns' (max, sum) partials. A second
// input there would add registers and traffic to the forward kernels, so
// the two-input ops plan a subset of their own, sharing the forward's
// chunk walk (visit_chunk, long_rows.cuh), which covers every layout:
//   rows_warp  the dim contiguous in all three tensors, rows of up to 128:
//            a group of G threads per row (a power of two up to a warp,
//            about a 16-byte vector a lane), each summing its vectors
//            (elements where a and b are not aligned alike), the group's
//            sums combined by shuffles; then each lane writes its part,
//            read again (from L1)
//   rows_block  longer contiguous rows, a block per row: 16-byte loads of
//            a and b where the row's a and b start equally far from a
//            16-byte boundary (element loads otherwise), the sum combined
//            over the block; the write pass walks the row backwards, so it
//            starts on what L1 and L2 still hold
//   rows_held  rows_block's rows of up to 4096 16-byte vectors: each
//            thread holds its (up to 4) vectors of a and b in registers
//            from the sum to the write, so the row is read once (where a
//            and b are not aligned alike, rows_block's passes)
//   rows_split  the same rows when they are too few to give every SM two
//            blocks: each row cut into chunks over blocks, two launches;
//            pass 1 writes each chunk's sum to the workspace, pass 2
//            (launched early, sm_90) adds its row's chunk sums and writes
//            its chunk, tasks last to first, each chunk backwards (what
//            pass 1 read last is likeliest still in L2)
//   columns  any other layout: a block per tile of up to 32 neighbouring
//            rows (out's innermost row dim: a warp's loads coalesced) by
//            256 / 32 slices of the dim, the slices' sums combined in
//            shared memory, then each thread writes its slice (backwards)
//   columns_split  the same where the tiles leave SMs idle: the dim split
//            over blocks too, two launches; pass 1 writes each (tile,
//            split)'s column sums to the workspace, pass 2 adds a
//            column's and writes its slice
//   columns_vector / columns_vector_split  the same with a 16-byte vector
//            of neighbouring columns a thread, where the columns are
//            contiguous and whole vectors (a warp's load of a dim index
//            then 512 bytes, not 32 elements)
//   strided / strided_split  the columns kernels where the rows'
//            innermost dim is not contiguous in every tensor
// The kernels live in row_sum_rows.cuh (contiguous rows) and
// row_sum_columns.cuh (the rest); this file plans and launches them.
// Every sum that runs long is compensated (long_sum.cuh): a thread adds
// a round of its loads (or kSumChunk elements) at a time into a
// compensated total, split chunks' sums likewise, so a long row's error
// grows with the round, not its length. Every block of a row combines
// its partials in the same order: bitwise the same s.
//
// An op supplies an epilogue E:
//   __device__ static float term(float a, float b);          summed over the row
//   __device__ static float out(float a, float b, float s);  each output
//   static constexpr bool kTermReadsB = false;  (optional) term ignores b:
//            the sum passes skip b's loads
// NaN and inf reach the outputs through the arithmetic, as in torch's
// backward kernels.
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROW_SUM_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROW_SUM_CUH_

#include <algorithm>
#include <memory>

#include "../../descriptor.h"
#include "../../softmax_plan.h"
#include "../../tuning.h"
#include "../launch.cuh"
#include "row_sum_columns.cuh"
#include "row_sum_rows.cuh"

namespace oprt::nvidia {
namespace {

// ---- plan ----------------------------------------------------------------------------
enum class RowSumKind { kEmpty, kRows, kSplit, kColumns };

// The plan of a two-input op, the base of its descriptor (which adds its
// kName; see softmax_backward_nvidia.cu).
struct RowSumPlan : oprt_descriptor {
  explicit RowSumPlan(uint64_t tag) : oprt_descriptor(tag) {}
  RowSumKind kind = RowSumKind::kRows;
  int32_t dtype = 0;
  int64_t length = 1, nrows = 0;
  RowSumStrides strides{1, 1, 1};
  StridedLayout<3> rows;  // rows: every other dim; columns: the planes (operand 0 = out, 1 = a, 2 = b)
  int group = 0;          // rows_warp: threads per row (<= 32); 0: rows_block, `block` threads per row
  bool held = false;      // rows_block as rows_held: a row's inputs held in registers
  int block = 256;
  int64_t splits = 1, chunk = 0;  // rows_split, columns: chunks per row (of the dim), elements per chunk
  int tx = 32, ty = 8;            // columns: threads across a tile, slices of the dim
  int vec = 1;                    // columns: neighbouring columns a thread takes (a 16-byte vector, or 1)
  int64_t columns = 1, col_tiles = 1, planes = 1;
  RowSumStrides col_strides{1, 1, 1};  // columns: along the rows' innermost dim
};

// Contiguous rows: rows_warp up to 128 elements (a quarter of the row per
// lane, up to a warp); longer rows a block each: rows_held up to
// kMaxHeld vectors (OPRT_TUNE_ROW_SUM_HELD_VECTORS: fewer), up to
// kRowSumHeld vectors a thread, else rows_block (256 to 1024 threads,
// about a round of kRowSumUnroll vectors each), or rows_split where fewer
// rows than two per SM leave SMs idle and the rows hold two rounds of a
// split block's loads or more: about 4 blocks per SM in all, no chunk
// shorter than one such round (OPRT_TUNE_ROW_SUM_SPLITS: the chunks per
// row, 1: rows_block).
constexpr int64_t kMaxHeld = int64_t{1024} * kRowSumHeld;

inline void plan_row_sum_rows(RowSumPlan& d) {
  d.kind = RowSumKind::kRows;
  const int64_t quarter = ceil_div(d.length, 4);
  const int vec = 16 / static_cast<int>(find_dtype(d.dtype)->size);
  if (quarter <= 32) {  // (lanes enough for a 16-byte vector each, where a and b take them)
    d.group = static_cast<int>(ceil_pow2(std::min(quarter, ceil_div(d.length, vec))));
    d.block = 256;
    d.variant = "rows_warp";
    return;
  }
  const int64_t vectors = ceil_div(d.length, vec), sms = current_device_info().sm_count;
  const int64_t round = int64_t{kRowSumSplitThreads} * kRowSumUnroll * vec;
  int64_t planned = 1;
  if (d.nrows < 2 * sms) planned = std::min(ceil_div(4 * sms, d.nrows), d.length / round);
  const int64_t splits = std::clamp<int64_t>(tuned("ROW_SUM_SPLITS", planned), 1, vectors);
  if (splits > 1) {
    d.kind = RowSumKind::kSplit;
    d.chunk = ceil_div(ceil_div(d.length, splits), vec) * vec;  // chunks start on a row's 16-byte boundaries
    d.splits = ceil_div(d.length, d.chunk);
    d.workspace_bytes = static_cast<size_t>(d.nrows * d.splits) * sizeof(float);
    d.variant = "rows_split";
    return;
  }
  d.group = 0;
  d.held = vectors <= std::min<int64_t>(tuned("ROW_SUM_HELD_VECTORS", kMaxHeld), kMaxHeld);
  if (d.held) {
    d.block = static_cast<int>(std::clamp<int64_t>(ceil_pow2(ceil_div(vectors, kRowSumHeld)), 256, 1024));
    d.variant = "rows_held";
    return;
  }
  d.block = static_cast<int>(std::clamp<int64_t>(floor_pow2(ceil_div(vectors, kRowSumUnroll)), 256, 1024));
  d.variant = "rows_block";
}

// Any other layout: tiles of up to 32 threads across the columns (the
// rows' innermost dim) by 256 / TX slices of the dim; the dim split over
// blocks (columns_split) for about 8 blocks per SM, each thread at least
// 16 elements of its column per split (OPRT_TUNE_ROW_SUM_COLUMN_SPLITS: the
// splits, up to one element per thread). A thread takes a 16-byte vector
// of neighbouring columns ("columns_vector") where the columns are
// contiguous in all three tensors, a whole number of vectors, and every
// plane and dim index starts a vector (given 16-byte aligned bases, checked
// at execute; OPRT_TUNE_ROW_SUM_COLUMN_VECTORS=0: one column a thread).
// "strided" where the columns are not contiguous in every tensor (the same
// kernels; a warp's loads then spread out).
inline int64_t row_sum_column_tx(int64_t lanes) { return std::min<int64_t>(32, ceil_pow2(lanes)); }

inline void plan_row_sum_columns(RowSumPlan& d, const StridedLayout<3>& r) {
  d.kind = RowSumKind::kColumns;
  d.columns = r.inner_size();
  d.col_strides = {r.inner_stride(0), r.inner_stride(1), r.inner_stride(2)};
  const bool contiguous = d.col_strides.out == 1 && d.col_strides.a == 1 && d.col_strides.b == 1;
  d.rows = outer_dims(r);
  d.planes = d.rows.numel();
  const int element = static_cast<int>(find_dtype(d.dtype)->size), vec = 16 / element;
  const bool dim_aligned = (d.strides.out * element) % 16 == 0 && (d.strides.a * element) % 16 == 0 &&
                           (d.strides.b * element) % 16 == 0;
  d.vec = contiguous && d.columns % vec == 0 && dim_aligned && strides_aligned16(d.rows, element) &&
                  tuned("ROW_SUM_COLUMN_VECTORS", 1) != 0
              ? vec
              : 1;
  d.tx = static_cast<int>(row_sum_column_tx(d.columns / d.vec));
  d.ty = kRowSumColumnThreads / d.tx;
  d.col_tiles = ceil_div(d.columns / d.vec, d.tx);
  const int64_t tiles = d.planes * d.col_tiles, sms = current_device_info().sm_count;
  const int64_t planned = std::min(ceil_div(8 * sms, tiles), d.length / (int64_t{d.ty} * 16));
  d.splits = std::clamp<int64_t>(tuned("ROW_SUM_COLUMN_SPLITS", planned), 1, std::max<int64_t>(1, d.length / d.ty));
  d.chunk = ceil_div(d.length, d.splits);
  d.splits = ceil_div(d.length, d.chunk);
  d.variant = !contiguous ? "strided" : d.vec > 1 ? "columns_vector" : "columns";
  if (d.splits == 1) return;
  // (the element form, should the bases not be aligned, needs no more)
  d.workspace_bytes = static_cast<size_t>(tiles * d.splits * d.tx * d.vec) * sizeof(float);
  d.variant += "_split";
}

// The descriptor D (a RowSumPlan) for out = op(a, b) along dim: validated,
// planned (the epilogue does not change the plan).
template <class D>
D* create_row_sum_family(const oprt_tensor_view_t* out, const oprt_tensor_view_t* a, const oprt_tensor_view_t* b,
                         int32_t dim, const char* const (&names)[3]) {
  const AlongDimProblem<3> p = plan_along_dim<3>({out, a, b}, names, dim);
  require_nvidia_dtype(p.t[1], names[1]);
  auto d = std::make_unique<D>();
  d->dtype = p.t[0].dtype;
  d->length = p.length;
  d->strides = {p.stride[0], p.stride[1], p.stride[2]};
  d->rows = p.rows;
  d->nrows = p.rows.numel();
  if (p.t[0].numel == 0) {
    d->kind = RowSumKind::kEmpty;
    d->variant = "empty";
    return d.release();
  }
  const bool contiguous = d->length == 1 || (p.stride[0] == 1 && p.stride[1] == 1 && p.stride[2] == 1);
  if (contiguous) {
    plan_row_sum_rows(*d);
    return d.release();
  }
  plan_row_sum_columns(*d, p.rows);
  return d.release();
}

// ---- execute -------------------------------------------------------------------------
// The columns kernels with `tx` threads across tiles of tx * VEC columns.
template <class E, class T, class Index, int VEC>
void launch_row_sum_columns_as(const RowSumPlan& d, int tx, int64_t col_tiles, void* workspace, T* out, const T* a,
                               const T* b, cudaStream_t stream) {
  const OffsetCalc<3, Index> planes(d.rows);
  const RowSumColumnsArgs args{d.columns, col_tiles,     d.planes,  d.length,
                               d.splits,  d.chunk,       d.col_strides, d.strides, static_cast<float*>(workspace)};
  const dim3 block(tx, kRowSumColumnThreads / tx);
  const unsigned grid = grid_for(d.planes * col_tiles * d.splits, 2048 / kRowSumColumnThreads, 4);
  if (d.splits == 1) {
    row_sum_columns_kernel<E, T, Index, false, VEC><<<grid, block, 0, stream>>>(out, a, b, planes, args);
    return check_launch("row_sum_columns_kernel");
  }
  row_sum_columns_kernel<E, T, Index, true, VEC><<<grid, block, 0, stream>>>(out, a, b, planes, args);
  check_launch("row_sum_columns_kernel");
  launch_early_if(true, row_sum_columns_write_kernel<E, T, Index, VEC>, grid, block, 0, stream, out, a, b, planes,
                  args);
}

// columns_vector where the three bases are 16-byte aligned, else a column a
// thread (the plan's splits; its own tiles).
template <class E, class T, class Index>
void launch_row_sum_columns(const RowSumPlan& d, void* workspace, T* out, const T* a, const T* b,
                            cudaStream_t stream) {
  if (d.vec > 1 && aligned16(out) && aligned16(a) && aligned16(b))
    return launch_row_sum_columns_as<E, T, Index, kVec16<T>>(d, d.tx, d.col_tiles, workspace, out, a, b, stream);
  const int tx = static_cast<int>(row_sum_column_tx(d.columns));
  launch_row_sum_columns_as<E, T, Index, 1>(d, tx, ceil_div(d.columns, tx), workspace, out, a, b, stream);
}

template <class E, class T, class Index>
void launch_row_sum(const RowSumPlan& d, void* workspace, T* out, const T* a, const T* b, cudaStream_t stream) {
  const OffsetCalc<3, Index> rows(d.rows);
  if (d.kind == RowSumKind::kColumns) return launch_row_sum_columns<E, T, Index>(d, workspace, out, a, b, stream);
  if (d.kind == RowSumKind::kSplit) {
    const RowSumSplitArgs args{d.nrows, d.length, d.splits, d.chunk, static_cast<float*>(workspace)};
    const unsigned grid = grid_one_shot(d.nrows * d.splits);
    row_sum_split_sum_kernel<E, T, Index><<<grid, kRowSumSplitThreads, 0, stream>>>(a, b, rows, args);
    check_launch("row_sum_split_sum_kernel");
    return launch_early_if(true, row_sum_split_write_kernel<E, T, Index>, grid, kRowSumSplitThreads, 0, stream, out,
                           a, b, rows, args);
  }
  if (d.group == 0) {
    const unsigned grid = grid_for(d.nrows, std::max(1, 2048 / d.block), 4);
    return visit_pow2<256, 1024>(d.block, "rows_block: threads per row", [&](auto block) {
      constexpr int kBlock = decltype(block)::value;
      if (d.held)
        row_sum_block_kernel<E, T, Index, kBlock, true><<<grid, kBlock, 0, stream>>>(out, a, b, rows, d.nrows,
                                                                                      d.length);
      else
        row_sum_block_kernel<E, T, Index, kBlock, false><<<grid, kBlock, 0, stream>>>(out, a, b, rows, d.nrows,
                                                                                       d.length);
      check_launch("row_sum_block_kernel");
    });
  }
  const unsigned grid = grid_for(ceil_div(d.nrows, d.block / d.group), 2048 / d.block, 4);
  visit_pow2<1, 32>(d.group, "rows_warp: threads per row", [&](auto group) {
    row_sum_rows_kernel<E, T, decltype(group)::value, Index><<<grid, d.block, 0, stream>>>(out, a, b, rows, d.nrows,
                                                                                           d.length);
    check_launch("row_sum_rows_kernel");
  });
}

// Runs the plan d of epilogue E: the body of an op's execute.
template <class E>
void execute_row_sum_family(const RowSumPlan& d, void* workspace, void* out, const void* a, const void* b,
                            void* stream_handle, const char* const (&names)[3]) {
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_handle);
  const int64_t numel = d.nrows * d.length;
  require_data(out, names[0], numel);
  require_data(a, names[1], numel);
  require_data(b, names[2], numel);
  if (d.kind == RowSumKind::kEmpty) return;
  StreamDeviceGuard device(stream);
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    dispatch_index(d.nrows, [&](auto index) {
      launch_row_sum<E, T, decltype(index)>(d, workspace, static_cast<T*>(out), static_cast<const T*>(a),
                                            static_cast<const T*>(b), stream);
    });
  });
}

}  // namespace
}  // namespace oprt::nvidia

#endif
