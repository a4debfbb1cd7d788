// The kernels of the softmax family's two-input layer where the dim is not
// contiguous (columns, strided and their _split forms); the layer, its
// variants and their plan: row_sum.cuh.
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROW_SUM_COLUMNS_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROW_SUM_COLUMNS_CUH_

#include "../column_task.cuh"
#include "row_sum_rows.cuh"

namespace oprt::nvidia {
namespace {

constexpr int kRowSumColumnThreads = 256;  // columns blocks: TX x TY

// ---- columns: the dim is not contiguous ---------------------------------------------
struct RowSumStrides {
  int64_t out, a, b;  // element strides of out, a, b
};

// A block covers a tile of TX neighbouring columns (the rows' innermost
// dim, so a warp's loads of one dim index are coalesced where it is
// contiguous) and splits the dim [l0, l1) of its task over TY slices; the
// slices' sums are combined in shared memory. Where the tiles alone leave
// SMs idle, the dim is split over blocks too (columns_split): pass 1 writes
// each (tile, split)'s column sums to the workspace, pass 2 adds a column's
// splits and writes its slice.
struct RowSumColumnsArgs {
  int64_t columns, col_tiles, planes, length, splits, split_len;
  RowSumStrides col;  // along the columns
  RowSumStrides dim;  // along the summed dim
  float* partials;    // [plane * col_tiles + tile][split][TX]
};

constexpr int kColumnUnroll = 4;  // dim indices whose loads a thread issues before using them

// This thread's column of task t (its pointers at dim index 0), and
// whether it lies within the columns.
template <class T>
struct ColumnAt {
  bool valid;
  T* q;
  const T* a;
  const T* b;
};
template <class T, class Index>
__device__ __forceinline__ ColumnAt<T> column_at(T* out, const T* a, const T* b, const OffsetCalc<3, Index>& planes,
                                                 const RowSumColumnsArgs& args, const ColumnTask& t) {
  const int64_t col = t.tile * blockDim.x + threadIdx.x;
  const bool valid = col < args.columns;
  const int64_t at = valid ? col : 0;
  int64_t offsets[3];
  planes.get(static_cast<Index>(t.plane), offsets);
  return {valid, out + offsets[0] + at * args.col.out, a + offsets[1] + at * args.col.a,
          b + offsets[2] + at * args.col.b};
}

// c's outputs at dim indices first, first + step, ... < n, last first (the
// sum pass read them last), kColumnUnroll loads issued before any store.
template <class E, class T>
__device__ __forceinline__ void column_write(const ColumnAt<T>& c, const RowSumStrides& st, int64_t first, int step,
                                             int64_t n, float s) {
  if (first >= n) return;
  for (int64_t l = first + (n - 1 - first) / step * step; l >= first; l -= int64_t{kColumnUnroll} * step) {
    float x[kColumnUnroll], y[kColumnUnroll];
#pragma unroll
    for (int u = 0; u < kColumnUnroll; ++u) {
      const int64_t lu = l - int64_t{u} * step;
      if (lu >= first) x[u] = to_float(c.a[lu * st.a]), y[u] = to_float(c.b[lu * st.b]);
    }
#pragma unroll
    for (int u = 0; u < kColumnUnroll; ++u) {
      const int64_t lu = l - int64_t{u} * step;
      if (lu >= first) c.q[lu * st.out] = from_float<T>(E::out(x[u], y[u], s));
    }
  }
}

// columns (kSplit false): each tile's sums, then its outputs. columns_split
// pass 1 (kSplit): each (tile, split)'s column sums into the workspace.
template <class E, class T, class Index, bool kSplit>
__global__ void __launch_bounds__(kRowSumColumnThreads)
row_sum_columns_kernel(T* out, const T* a, const T* b, OffsetCalc<3, Index> planes, RowSumColumnsArgs args) {
  __shared__ float part[kRowSumColumnThreads];
  if constexpr (kSplit) allow_early_launch();
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t tasks = args.planes * args.col_tiles * args.splits;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const ColumnTask t = column_task(task, args.splits, args.col_tiles);
    const ColumnAt<T> c = column_at(out, a, b, planes, args, t);
    const int64_t l0 = t.split * args.split_len, l1 = min(args.length, l0 + args.split_len);
    part[ty * TX + tx] = c.valid ? row_term_sum<E>(c.a, args.dim.a, c.b, args.dim.b, l0 + ty, TY, l1) : 0.0f;
    __syncthreads();
    if (ty == 0) {  // the slices of column tx, in a fixed order
      LongSum total;
      for (int y = 0; y < TY; ++y) total.add(part[y * TX + tx]);
      if (kSplit && c.valid) args.partials[task * TX + tx] = total.value();
      if (!kSplit) part[tx] = total.value();
    }
    if constexpr (!kSplit) {
      __syncthreads();
      if (c.valid) column_write<E>(c, args.dim, l0 + ty, TY, l1, part[tx]);
    }
    __syncthreads();  // part is the next task's
  }
}

// columns_split pass 2: a column's split sums added (compensated, in a
// fixed order: every block of the tile gets the same), its slice written;
// tasks last to first.
template <class E, class T, class Index>
__global__ void __launch_bounds__(kRowSumColumnThreads)
row_sum_columns_write_kernel(T* out, const T* a, const T* b, OffsetCalc<3, Index> planes, RowSumColumnsArgs args) {
  wait_for_prior_grid();
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t tasks = args.planes * args.col_tiles * args.splits;
  for (int64_t i = blockIdx.x; i < tasks; i += gridDim.x) {
    const ColumnTask t = column_task(tasks - 1 - i, args.splits, args.col_tiles);
    const ColumnAt<T> c = column_at(out, a, b, planes, args, t);
    if (!c.valid) continue;  // (no barriers here)
    const float* part = args.partials + t.tile_task * args.splits * TX + tx;
    LongSum total;
    for (int64_t j = 0; j < args.splits; ++j) total.add(part[j * TX]);
    const int64_t l0 = t.split * args.split_len, l1 = min(args.length, l0 + args.split_len);
    column_write<E>(c, args.dim, l0 + ty, TY, l1, total.value());
  }
}

}  // namespace
}  // namespace oprt::nvidia

#endif
