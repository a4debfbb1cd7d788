// The softmax family over a dim that is not the contiguous one (columns,
// strided, columns_cluster): per-column stats, their merge, the write.
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_COLUMNS_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_COLUMNS_CUH_

#include "../bulk_copy.cuh"
#include "../column_task.cuh"
#include "../offset_calc.cuh"
#include "math.cuh"

namespace oprt::nvidia {
namespace {

// Merges each group's `splits` partial stats in a fixed order (a warp per
// (group, column), each lane's share compensated, then a shuffle tree) and
// leaves the result in the group's split-0 slot.
__global__ void __launch_bounds__(256)
combine_stats_kernel(Stats* partials, int64_t groups, int64_t splits, int64_t width) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  for (int64_t w = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; w < groups * width; w += warps) {
    const int64_t g = w / width, c = w - g * width;
    Stats* p = partials + g * splits * width + c;
    LongStats share;
    for (int64_t j = lane; j < splits; j += 32) share.merge(p[j * width]);
    const Stats st = warp_merge(share.value());
    __syncwarp();
    if (lane == 0) p[0] = st;
  }
}

// ---- columns: the normalized dim is not the contiguous one ------------------------
// Tiles of TX*VEC columns; TY threads walk the normalized dim. Pass 1 writes
// per-(tile, split) column stats, pass 2 merges a column's splits and writes.
constexpr int kColumnsThreads = 256;

struct ColumnsArgs {
  int64_t columns, col_tiles, planes, length, splits, split_len;
  int64_t src_col_stride, out_col_stride;  // along the columns
  int64_t src_stride, out_stride;          // along the normalized dim
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

constexpr int kColumnsUnroll = 4;  // rows of the normalized dim in flight per thread
constexpr int kColumnsFold = 4;    // rounds between folds of a thread's stats into shared memory

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
  __shared__ Stats part[kColumnsThreads * VEC];     // each thread's folded stats
  __shared__ float part_comp[kColumnsThreads * VEC];  // their sums' compensations
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t width = int64_t{TX} * VEC;
  const int64_t tasks = args.planes * args.col_tiles * args.splits;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const auto [tile_task, split, plane, tile] = column_task(task, args.splits, args.col_tiles);
    int64_t offsets[2];
    planes.get(static_cast<Index>(plane), offsets);
    const int64_t col0 = tile * width + int64_t{tx} * VEC;
    const T* base = src + offsets[1] + col0 * args.src_col_stride;
    Stats* slot = part + (ty * TX + tx) * VEC;  // this thread's own
    float* comp = part_comp + (ty * TX + tx) * VEC;
    Stats st[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) st[e] = slot[e] = {-INFINITY, 0.0f}, comp[e] = 0.0f;
    // Every kColumnsFold rounds the sums are added into the thread's slot,
    // compensated (long_sum.cuh), the max kept in st: a column's chain of
    // adds stays within kColumnsFold rounds, whatever its length. The
    // slot's max is never above st's (st's max runs over every row the slot
    // holds), so the slot alone is rescaled, and only when the max moved.
    // (Through volatile pointers: one column after another, so the fold
    // holds few registers beside the row loop's.)
    const auto fold = [&] {
      volatile float* v_slot = &slot[0].m;  // (m, s) pairs
      volatile float* v_comp = comp;
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const float m = v_slot[2 * e];
        float sum = v_slot[2 * e + 1], c = v_comp[e];
        if (m != st[e].m) sum = rescale(sum, m, st[e].m), c = rescale(c, m, st[e].m);
        compensated_add(sum, c, st[e].s);
        v_slot[2 * e] = st[e].m, v_slot[2 * e + 1] = sum, v_comp[e] = c, st[e].s = 0.0f;
      }
    };
    const int64_t l1 = min(args.length, (split + 1) * args.split_len);
    if (col0 < args.columns) {
      int round = 0;
      for (int64_t l = split * args.split_len + ty; l < l1; l += int64_t{TY} * kColumnsUnroll) {
        Raw16 raw[kColumnsUnroll];
        load_column_rows(raw, base, l, l1, TY, col0, args);
        // One update per column per round, over its kColumnsUnroll rows: the
        // running sum is rescaled once per round instead of once per element
        // (1.25 exps per element instead of 2). Rows past l1 count as -inf,
        // which adds 0.
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
        if (++round % kColumnsFold == 0) fold();
      }
    }
    fold();
#pragma unroll
    for (int e = 0; e < VEC; ++e) st[e] = slot[e] = {slot[e].m, slot[e].s - comp[e]};
    // The TY threads' stats of each column merged as a tree, in a fixed
    // order (TY is a power of 2).
    for (int half = TY / 2; half >= 1; half /= 2) {
      __syncthreads();
      if (ty < half)
#pragma unroll
        for (int e = 0; e < VEC; ++e) slot[e] = st[e] = merge(st[e], slot[half * TX * VEC + e]);
    }
    if (ty == 0) {
      Stats* out_slot = args.partials + (tile_task * args.splits + split) * width + int64_t{tx} * VEC;
#pragma unroll
      for (int e = 0; e < VEC; ++e) out_slot[e] = st[e];
    }
    __syncthreads();
  }
}

template <class E, class T, class Index>
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
    RowOf<E> k[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) k[e] = E::row(stats[e]);  // merged by combine_stats_kernel
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
        for (int e = 0; e < VEC; ++e) x[e] = E::out(k[e], x[e]);
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

// ---- columns_cluster: each column tile read once --------------------------------
// A cluster of C blocks per tile of TX * VEC columns (TX <= 32 threads across
// it, 16 bytes each): block `rank` copies rows [rank * chunk, +chunk) of the
// tile into shared memory (cp.async: every load in flight, no registers
// held), computes their per-column (max, sum), the C blocks merge their
// results through distributed shared memory in rank order, and each writes
// its rows from shared memory. One read and one write of the tensor, where
// the columns kernels read it twice. Takes 16-byte aligned rows only.
struct ClusterColumnsArgs {
  int64_t columns, col_tiles, length, chunk;  // chunk: rows per block
  int64_t src_stride, out_stride;             // along the normalized dim
  int tx;                                     // threads across a tile (<= 32, divides the block)
};
constexpr int kColumnsWarps = kColumnsThreads / 32;

// Dynamic shared memory of a columns_cluster block: its rows, then a Stats
// per (warp, tile column).
template <class T>
constexpr size_t columns_cluster_smem(int64_t chunk, int tx) {
  return static_cast<size_t>(chunk * tx) * sizeof(Raw16) + size_t{kColumnsWarps} * tx * kVec16<T> * sizeof(Stats);
}

template <class E, class T, int C, class Index>
__global__ void __launch_bounds__(kColumnsThreads)
softmax_columns_cluster_kernel(T* out, const T* src, OffsetCalc<2, Index> planes, ClusterColumnsArgs a) {
  constexpr int VEC = kVec16<T>;
  using Row = RowOf<E>;
  extern __shared__ Raw16 cache[];                 // [chunk][TX]
  __shared__ Stats block_stats[kColumnsThreads];   // this block's rows, per tile column
  __shared__ Row final_rows[kColumnsThreads];      // the epilogue's constants per tile column
  cg::cluster_group cluster = cg::this_cluster();
  const int TX = a.tx, TY = kColumnsThreads / TX, width = TX * VEC;
  const int tx = threadIdx.x % TX, ty = threadIdx.x / TX, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Stats* part = reinterpret_cast<Stats*>(cache + a.chunk * TX);  // [warp][tile column]
  const int64_t tile_task = blockIdx.x / C;
  const int64_t plane = tile_task / a.col_tiles, tile = tile_task - plane * a.col_tiles;
  int64_t offsets[2];
  planes.get(static_cast<Index>(plane), offsets);
  const int64_t col0 = tile * width + int64_t{tx} * VEC;
  const int64_t row0 = int64_t{static_cast<int>(cluster.block_rank())} * a.chunk;
  const int rows = static_cast<int>(max(int64_t{0}, min(a.chunk, a.length - row0)));
  const int valid = static_cast<int>(min(max(a.columns - col0, int64_t{0}), int64_t{VEC}));  // columns of this vector

  if (valid > 0) {
    const T* in = src + offsets[1] + row0 * a.src_stride + col0;
    for (int r = ty; r < rows; r += TY)
      copy16_to_shared_async(&cache[r * TX + tx], in + r * a.src_stride, valid * sizeof(T));
  }
  wait_all_async_copies();  // a thread reads back only its own copies: no barrier
  const int own_rows = valid > 0 ? rows : 0;  // (threads past the last column copied nothing)

  // (max, sum) of this thread's rows, column by column: the max first, then
  // sum exp(x - max) with no rescaling (shared memory is cheap to read twice)
  Stats st[VEC];
  float m[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) m[e] = -INFINITY;
#pragma unroll 4
  for (int r = ty; r < own_rows; r += TY) {
    float x[VEC];
    raw_to_floats<T>(cache[r * TX + tx], x);
#pragma unroll
    for (int e = 0; e < VEC; ++e) m[e] = fmaxf(m[e], x[e]);
  }
  float s[VEC] = {};
#pragma unroll 4
  for (int r = ty; r < own_rows; r += TY) {
    float x[VEC];
    raw_to_floats<T>(cache[r * TX + tx], x);
#pragma unroll
    for (int e = 0; e < VEC; ++e) s[e] += exp_or_zero(x[e], m[e]);
  }
#pragma unroll
  for (int e = 0; e < VEC; ++e) st[e] = {m[e], s[e]};
  // merge: the lanes of a warp holding the same columns, the warps, the blocks
  for (int mask = TX; mask < 32; mask *= 2)
#pragma unroll
    for (int e = 0; e < VEC; ++e)
      st[e] = merge(st[e], Stats{__shfl_xor_sync(0xffffffffu, st[e].m, mask), __shfl_xor_sync(0xffffffffu, st[e].s, mask)});
  if (lane < TX)
#pragma unroll
    for (int e = 0; e < VEC; ++e) part[warp * width + tx * VEC + e] = st[e];
  __syncthreads();
  const int t = threadIdx.x;
  if (t < width) {
    Stats b = part[t];
    for (int w = 1; w < kColumnsWarps; ++w) b = merge(b, part[w * width + t]);
    block_stats[t] = b;
  }
  cluster.sync();  // every block's block_stats visible to the cluster
  if (t < width) {
    Stats c = *cluster.map_shared_rank(&block_stats[t], 0);
#pragma unroll
    for (int q = 1; q < C; ++q) c = merge(c, *cluster.map_shared_rank(&block_stats[t], q));
    final_rows[t] = E::row(c);
  }
  cluster.sync();  // no block leaves while another reads its block_stats; final_rows visible

  if (valid == 0) return;
  Row k[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) k[e] = final_rows[tx * VEC + e];
  T* o = out + offsets[0] + row0 * a.out_stride + col0;
#pragma unroll 4
  for (int r = ty; r < rows; r += TY) {
    float x[VEC];
    raw_to_floats<T>(cache[r * TX + tx], x);
#pragma unroll
    for (int e = 0; e < VEC; ++e) x[e] = E::out(k[e], x[e]);
    T* dst = o + r * a.out_stride;
    if (valid == VEC) {
      store_floats<VEC>(dst, x);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        if (e < valid) dst[e] = from_float<T>(x[e]);
    }
  }
}

}  // namespace
}  // namespace oprt::nvidia

#endif
