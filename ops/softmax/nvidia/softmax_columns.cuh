// Private to softmax_nvidia.cu: softmax over a dim that is not the
// contiguous one (columns, strided): per-column stats, their merge, the write.
#ifndef OPRT_SOFTMAX_NVIDIA_COLUMNS_CUH_
#define OPRT_SOFTMAX_NVIDIA_COLUMNS_CUH_

#include "../../common/nvidia/column_task.cuh"
#include "../../common/nvidia/offset_calc.cuh"
#include "softmax_math.cuh"

namespace oprt::nvidia {
namespace {

// Merges each group's `splits` partial stats in a fixed order (a warp per
// (group, column)) and leaves the result in the group's split-0 slot.
__global__ void __launch_bounds__(256)
combine_stats_kernel(Stats* partials, int64_t groups, int64_t splits, int64_t width) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  for (int64_t w = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; w < groups * width; w += warps) {
    const int64_t g = w / width, c = w - g * width;
    Stats* p = partials + g * splits * width + c;
    Stats st{-INFINITY, 0.0f};
    for (int64_t j = lane; j < splits; j += 32) st = merge(st, p[j * width]);
    st = warp_merge(st);
    __syncwarp();
    if (lane == 0) p[0] = st;
  }
}


// ---- columns: the softmax dim is not the contiguous one ---------------------------
// Tiles of TX*VEC columns; TY threads walk the softmax dim. Pass 1 writes
// per-(tile, split) column stats, pass 2 merges a column's splits and writes.
constexpr int kColumnsThreads = 256;

struct ColumnsArgs {
  int64_t columns, col_tiles, planes, length, splits, split_len;
  int64_t src_col_stride, out_col_stride;  // along the columns
  int64_t src_stride, out_stride;          // along the softmax dim
  Stats* partials;                         // [plane * col_tiles + tile][split][TX * VEC]
};

// One vector of VEC columns at p (padded with -inf past the last column).
template <class T>
__device__ __forceinline__ Raw16 load_columns(const T* p, int64_t col0, const ColumnsArgs& a) {
  constexpr int VEC = kVec16<T>;
  if (a.src_col_stride == 1 && col0 + VEC <= a.columns && aligned16(p)) return load_raw(p);
  Vec<T, VEC> v;
#pragma unroll
  for (int e = 0; e < VEC; ++e) v.v[e] = col0 + e < a.columns ? p[e * a.src_col_stride] : from_float<T>(-INFINITY);
  return to_raw(v);
}

constexpr int kColumnsUnroll = 4;  // rows of the softmax dim in flight per thread

// The vectors of rows l, l + TY, ... (kColumnsUnroll rows, those before l1)
// of the columns at p, every load issued before any is used.
template <class T>
__device__ __forceinline__ void load_column_rows(Raw16 (&raw)[kColumnsUnroll], const T* p, int64_t l, int64_t l1,
                                                 int TY, int64_t col0, const ColumnsArgs& args) {
#pragma unroll
  for (int u = 0; u < kColumnsUnroll; ++u) {
    const int64_t lu = l + int64_t{u} * TY;
    if (lu < l1) raw[u] = load_columns(p + lu * args.src_stride, col0, args);
  }
}

template <class T, class Index>
__global__ void __launch_bounds__(kColumnsThreads)
softmax_columns_stats_kernel(const T* src, OffsetCalc<2, Index> planes, ColumnsArgs args) {
  constexpr int VEC = kVec16<T>;
  __shared__ Stats part[kColumnsThreads * VEC];
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t width = int64_t{TX} * VEC;
  const int64_t tasks = args.planes * args.col_tiles * args.splits;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const auto [tile_task, split, plane, tile] = column_task(task, args.splits, args.col_tiles);
    int64_t offsets[2];
    planes.get(static_cast<Index>(plane), offsets);
    const int64_t col0 = tile * width + int64_t{tx} * VEC;
    const T* base = src + offsets[1] + col0 * args.src_col_stride;
    Stats st[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) st[e] = {-INFINITY, 0.0f};
    const int64_t l1 = min(args.length, (split + 1) * args.split_len);
    if (col0 < args.columns) {
      for (int64_t l = split * args.split_len + ty; l < l1; l += int64_t{TY} * kColumnsUnroll) {
        Raw16 raw[kColumnsUnroll];
        load_column_rows(raw, base, l, l1, TY, col0, args);
        // One update per column per round, over its kColumnsUnroll rows: the
        // running sum is rescaled once per round instead of once per element
        // (an exp each: 2 exps per element before, 1.25 now). Rows past l1
        // count as -inf, which adds 0.
        float x[kColumnsUnroll][VEC];
#pragma unroll
        for (int u = 0; u < kColumnsUnroll; ++u) {
          if (l + int64_t{u} * TY < l1) {
            raw_to_floats<T>(raw[u], x[u]);
          } else {
#pragma unroll
            for (int e = 0; e < VEC; ++e) x[u][e] = -INFINITY;
          }
        }
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          float rows[kColumnsUnroll];
#pragma unroll
          for (int u = 0; u < kColumnsUnroll; ++u) rows[u] = x[u][e];
          update(st[e], rows);
        }
      }
    }
#pragma unroll
    for (int e = 0; e < VEC; ++e) part[(ty * TX + tx) * VEC + e] = st[e];
    __syncthreads();
    if (ty == 0) {
      for (int y = 1; y < TY; ++y)
#pragma unroll
        for (int e = 0; e < VEC; ++e) st[e] = merge(st[e], part[(y * TX + tx) * VEC + e]);
      Stats* slot = args.partials + (tile_task * args.splits + split) * width + int64_t{tx} * VEC;
#pragma unroll
      for (int e = 0; e < VEC; ++e) slot[e] = st[e];
    }
    __syncthreads();
  }
}

template <class T, class Index>
__global__ void __launch_bounds__(kColumnsThreads)
softmax_columns_write_kernel(T* out, const T* src, OffsetCalc<2, Index> planes, ColumnsArgs args) {
  constexpr int VEC = kVec16<T>;
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t width = int64_t{TX} * VEC;
  const int64_t tasks = args.planes * args.col_tiles * args.splits;
  for (int64_t i = blockIdx.x; i < tasks; i += gridDim.x) {
    const int64_t task = tasks - 1 - i;  // reverse order: see "Two-pass kernels"
    const auto [tile_task, split, plane, tile] = column_task(task, args.splits, args.col_tiles);
    const int64_t col0 = tile * width + int64_t{tx} * VEC;
    if (col0 >= args.columns) continue;
    const Stats* stats = args.partials + tile_task * args.splits * width + int64_t{tx} * VEC;
    float m[VEC], r[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) {  // merged by combine_stats_kernel
      m[e] = stats[e].m;
      r[e] = 1.0f / stats[e].s;
    }
    int64_t offsets[2];
    planes.get(static_cast<Index>(plane), offsets);
    const T* in = src + offsets[1] + col0 * args.src_col_stride;
    T* o = out + offsets[0] + col0 * args.out_col_stride;
    const int64_t l1 = min(args.length, (split + 1) * args.split_len);
    for (int64_t l = split * args.split_len + ty; l < l1; l += int64_t{TY} * kColumnsUnroll) {
      Raw16 raw[kColumnsUnroll];
      load_column_rows(raw, in, l, l1, TY, col0, args);
#pragma unroll
      for (int u = 0; u < kColumnsUnroll; ++u) {
        const int64_t lu = l + int64_t{u} * TY;
        if (lu >= l1) break;
        float x[VEC];
        raw_to_floats<T>(raw[u], x);
#pragma unroll
        for (int e = 0; e < VEC; ++e) x[e] = exp_minus(x[e], m[e]) * r[e];
        T* dst = o + lu * args.out_stride;
        if (args.out_col_stride == 1 && col0 + VEC <= args.columns && aligned16(dst)) {
          store_floats<VEC>(dst, x);
        } else {
#pragma unroll
          for (int e = 0; e < VEC; ++e)
            if (col0 + e < args.columns) dst[e * args.out_col_stride] = from_float<T>(x[e]);
        }
      }
    }
  }
}

}  // namespace
}  // namespace oprt::nvidia

#endif
