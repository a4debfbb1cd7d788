// The kernels of the softmax family's two-input layer where the dim is not
// contiguous (columns, columns_vector, strided and their _split forms); the layer, its
// variants and their plan: row_sum.cuh.
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROW_SUM_COLUMNS_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROW_SUM_COLUMNS_CUH_

#include <type_traits>

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

// This thread's column of task t, or its first of VEC neighbouring ones
// (its pointers at dim index 0), and whether it lies within the columns.
template <class T>
struct ColumnAt {
  bool valid;
  T* q;
  const T* a;
  const T* b;
};
template <int VEC, class T, class Index>
__device__ __forceinline__ ColumnAt<T> column_at(T* out, const T* a, const T* b, const OffsetCalc<3, Index>& planes,
                                                 const RowSumColumnsArgs& args, const ColumnTask& t) {
  const int64_t col = (t.tile * blockDim.x + threadIdx.x) * VEC;
  const bool valid = col < args.columns;
  const int64_t at = valid ? col : 0;
  int64_t offsets[3];
  planes.get(static_cast<Index>(t.plane), offsets);
  return {valid, out + offsets[0] + at * args.col.out, a + offsets[1] + at * args.col.a,
          b + offsets[2] + at * args.col.b};
}

// The vector forms (VEC > 1: a lane's 16-byte vector of VEC neighbouring
// columns, contiguous in a, b and out and aligned alike): a warp's load of
// one dim index is 32 vectors, where one column a lane loads only 32
// elements (64 bytes in 16-bit). kVectorUnroll dim indices' loads of both
// inputs go out before their terms; each column's terms are added in a
// plain float for kSumChunk indices, the chunks compensated.
constexpr int kVectorUnroll = 2;

template <class E, class T, int VEC>
__device__ __forceinline__ void column_vector_sums(float (&sums)[VEC], const ColumnAt<T>& c, const RowSumStrides& st,
                                                   int64_t first, int step, int64_t n) {
  constexpr int U = kVectorUnroll;
  constexpr bool kB = TermReadsB<E>::value;
  LongSum total[VEC];
  for (int64_t l = first; l < n;) {
    float part[VEC] = {};
    for (int r = 0; r < kSumChunk / U && l < n; ++r, l += int64_t{U} * step) {
      Raw16 ra[U], rb[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t lu = l + int64_t{u} * step;
        ra[u] = rb[u] = Raw16{};
        if (lu < n) {
          ra[u] = load_raw(c.a + lu * st.a);
          if (kB) rb[u] = load_raw(c.b + lu * st.b);
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (l + int64_t{u} * step >= n) continue;
        float x[VEC], y[VEC] = {};
        raw_to_floats_widened<T>(ra[u], x);
        if (kB) raw_to_floats_widened<T>(rb[u], y);
#pragma unroll
        for (int e = 0; e < VEC; ++e) part[e] += E::term(x[e], y[e]);
      }
    }
#pragma unroll
    for (int e = 0; e < VEC; ++e) total[e].add(part[e]);
  }
#pragma unroll
  for (int e = 0; e < VEC; ++e) sums[e] = total[e].value();
}

// A thread's sums over its column(s), element or vector form.
template <class E, class T, int VEC>
__device__ __forceinline__ void column_sums(float (&sums)[VEC], const ColumnAt<T>& c, const RowSumStrides& st,
                                            int64_t first, int step, int64_t n) {
  if constexpr (VEC == 1) {
    sums[0] = row_term_sum<E>(c.a, st.a, c.b, st.b, first, step, n);
  } else {
    column_vector_sums<E, T, VEC>(sums, c, st, first, step, n);
  }
}
// What a thread loads of its column(s) at one dim index: an element, or a
// 16-byte vector of VEC neighbouring columns (VEC > 1).
template <class T, int VEC>
using ColumnSlot = std::conditional_t<VEC == 1, T, Raw16>;

// c's outputs at dim indices first, first + step, ... < n, last first (the
// sum pass read them last), the loads of U indices issued before any store
// (kColumnUnroll elements, or kVectorUnroll vectors). s: each column's sum.
template <class E, class T, int VEC>
__device__ __forceinline__ void column_write(const ColumnAt<T>& c, const RowSumStrides& st, int64_t first, int step,
                                             int64_t n, const float (&s)[VEC]) {
  constexpr int U = VEC == 1 ? kColumnUnroll : kVectorUnroll;
  const auto load = [](const T* p) {
    if constexpr (VEC == 1) return *p;
    else return load_raw(p);
  };
  const auto to_floats = [](const ColumnSlot<T, VEC>& v, float (&x)[VEC]) {
    if constexpr (VEC == 1) x[0] = to_float(v);
    else raw_to_floats_widened<T>(v, x);
  };
  if (first >= n) return;
  for (int64_t l = first + (n - 1 - first) / step * step; l >= first; l -= int64_t{U} * step) {
    ColumnSlot<T, VEC> va[U], vb[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t lu = l - int64_t{u} * step;
      if (lu >= first) va[u] = load(c.a + lu * st.a), vb[u] = load(c.b + lu * st.b);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t lu = l - int64_t{u} * step;
      if (lu < first) continue;
      float x[VEC], y[VEC];
      to_floats(va[u], x);
      to_floats(vb[u], y);
#pragma unroll
      for (int e = 0; e < VEC; ++e) x[e] = E::out(x[e], y[e], s[e]);
      if constexpr (VEC == 1) c.q[lu * st.out] = from_float<T>(x[0]);
      else store_floats<VEC>(c.q + lu * st.out, x);
    }
  }
}

// columns (kSplit false): each tile's sums, then its outputs. columns_split
// pass 1 (kSplit): each (tile, split)'s column sums into the workspace.
template <class E, class T, class Index, bool kSplit, int VEC>
__global__ void __launch_bounds__(kRowSumColumnThreads)
row_sum_columns_kernel(T* out, const T* a, const T* b, OffsetCalc<3, Index> planes, RowSumColumnsArgs args) {
  __shared__ float part[kRowSumColumnThreads * VEC];  // [ty][tx][VEC]
  if constexpr (kSplit) allow_early_launch();
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t tasks = args.planes * args.col_tiles * args.splits;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const ColumnTask t = column_task(task, args.splits, args.col_tiles);
    const ColumnAt<T> c = column_at<VEC>(out, a, b, planes, args, t);
    const int64_t l0 = t.split * args.split_len, l1 = min(args.length, l0 + args.split_len);
    float sums[VEC] = {};
    if (c.valid) column_sums<E, T, VEC>(sums, c, args.dim, l0 + ty, TY, l1);
#pragma unroll
    for (int e = 0; e < VEC; ++e) part[(ty * TX + tx) * VEC + e] = sums[e];
    __syncthreads();
    if (ty == 0) {  // the slices of each column, in a fixed order
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        LongSum total;
        for (int y = 0; y < TY; ++y) total.add(part[(y * TX + tx) * VEC + e]);
        if (kSplit && c.valid) args.partials[(task * TX + tx) * VEC + e] = total.value();
        if (!kSplit) part[tx * VEC + e] = total.value();
      }
    }
    if constexpr (!kSplit) {
      __syncthreads();
#pragma unroll
      for (int e = 0; e < VEC; ++e) sums[e] = part[tx * VEC + e];
      if (c.valid) column_write<E, T, VEC>(c, args.dim, l0 + ty, TY, l1, sums);
    }
    __syncthreads();  // part is the next task's
  }
}

// columns_split pass 2: a column's split sums added (compensated, in a
// fixed order: every block of the tile gets the same), its slice written;
// tasks last to first.
template <class E, class T, class Index, int VEC>
__global__ void __launch_bounds__(kRowSumColumnThreads)
row_sum_columns_write_kernel(T* out, const T* a, const T* b, OffsetCalc<3, Index> planes, RowSumColumnsArgs args) {
  wait_for_prior_grid();
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t tasks = args.planes * args.col_tiles * args.splits;
  for (int64_t i = blockIdx.x; i < tasks; i += gridDim.x) {
    const ColumnTask t = column_task(tasks - 1 - i, args.splits, args.col_tiles);
    const ColumnAt<T> c = column_at<VEC>(out, a, b, planes, args, t);
    if (!c.valid) continue;  // (no barriers here)
    const float* part = args.partials + (t.tile_task * args.splits * TX + tx) * VEC;
    float sums[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      LongSum total;
      for (int64_t j = 0; j < args.splits; ++j) total.add(part[j * TX * VEC + e]);
      sums[e] = total.value();
    }
    const int64_t l0 = t.split * args.split_len, l1 = min(args.length, l0 + args.split_len);
    column_write<E, T, VEC>(c, args.dim, l0 + ty, TY, l1, sums);
  }
}

}  // namespace
}  // namespace oprt::nvidia

#endif
