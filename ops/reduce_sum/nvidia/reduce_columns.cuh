// Private to reduce_sum_nvidia.cu: the kernels of sums over a non-last dim
// (columns, columns_shifted, columns_cluster<C>) and the kernel that adds a
// split column's partials. The plan that picks among them is in
// reduce_sum_nvidia.cu.
#ifndef OPRT_REDUCE_SUM_NVIDIA_COLUMNS_CUH_
#define OPRT_REDUCE_SUM_NVIDIA_COLUMNS_CUH_

#include <cooperative_groups.h>

#include "../../common/nvidia/column_task.cuh"
#include "../../common/nvidia/cuda_types.cuh"
#include "../../common/nvidia/group_reduce.cuh"
#include "../../common/nvidia/launch.cuh"
#include "../../common/nvidia/long_sum.cuh"
#include "../../common/nvidia/offset_calc.cuh"

namespace oprt::nvidia {
namespace {

constexpr int kColumnsThreads = 256;  // threads per block
constexpr int kColumnUnroll = 4;      // rows of the tile in flight per thread
constexpr int kColumnFold = 4;        // rounds a thread adds in registers between folds (see add_round)
constexpr int kColumnCarry = 16;      // folds a thread's slot takes before its compensated carry (see add_round)


// ---- columns ----------------------------------------------------------------
struct ColumnsArgs {
  int64_t columns, col_tiles, planes, reduced, splits, split_len;
  int64_t out_stride;  // out's stride along the columns
  int64_t reduced_stride;  // src stride of the reduced index when it is one dim (else 0: use the calc)
  bool vectors_ok;     // every row of every tile is 16-byte aligned
  bool tiles_fastest;  // task order (column_task; tests: OPRT_TUNE_REDUCE_COLUMN_ORDER)
  float* partials;     // splits > 1, no cluster: [tile][split][tx * VEC]
  int64_t src_first, src_end;  // shifted: src's elements lie in [src + src_first, src + src_end)
  double scale;        // the size of the broadcast reduced dims the plan dropped (1: none)
};

// A column's sum times the broadcast count (ColumnsArgs::scale): the product
// in double, rounded once (adding the copies one by one drifted linearly).
__device__ __forceinline__ float scaled(float sum, double scale) { return static_cast<float>(sum * scale); }

// Adds one round of a thread's loads (kColumnUnroll rows, zeros where a row
// is past the range) to its column sums. After every kColumnFold rounds the
// loops fold the sums into the thread's own slot of shared memory, and
// after every kColumnCarry folds carry the slot into a compensated sum
// beside it (after_round, and final_fold at the end): a thread's serial
// chains are at most kColumnUnroll * kColumnFold and kColumnCarry adds,
// whatever the rows, and the carries lose no more than two roundings
// (long_sum.cuh), with no register held for the levels and one test per
// fold in the row loop. The fold points depend on the round count only,
// the same in add_whole_rows and the general loop (bitwise the same sums).
template <class T, bool kWidened = false>
__device__ __forceinline__ void add_round(float (&acc)[kVec16<T>], const Raw16 (&raw)[kColumnUnroll]) {
  constexpr int VEC = kVec16<T>;
#pragma unroll
  for (int u = 0; u < kColumnUnroll; ++u) {
    float x[VEC];
    if constexpr (kWidened) raw_to_floats_widened<T>(raw[u], x);
    else raw_to_floats<T>(raw[u], x);
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[e] += x[e];
  }
}

// A thread's slot: its folded sums at `total` (a row of the block's
// kColumnsThreads * VEC floats), the carried sums one such row on, their
// compensations two rows on.
template <int VEC>
__device__ __forceinline__ float* carried_sums(float* total) { return total + kColumnsThreads * VEC; }

// (Not unrolled: shared memory alone, one column at a time, so the row
// loop's registers stay as they were.)
template <int VEC>
__device__ __forceinline__ void carry_folds(float* total) {
  float* sum = carried_sums<VEC>(total);
  float* comp = sum + kColumnsThreads * VEC;
#pragma unroll 1
  for (int e = 0; e < VEC; ++e) compensated_add(sum[e], comp[e], total[e]), total[e] = 0.0f;
}

// After round number `round` (from 1): folds every kColumnFold rounds,
// carries every kColumnCarry folds.
template <int VEC>
__device__ __forceinline__ void after_round(float (&acc)[VEC], float* total, unsigned round) {
  if (round % kColumnFold != 0) return;
#pragma unroll
  for (int e = 0; e < VEC; ++e) total[e] += acc[e], acc[e] = 0.0f;
  if (round % (kColumnFold * kColumnCarry) == 0) carry_folds<VEC>(total);
}

// The last fold and carry: leaves the thread's whole sums at `total`.
template <int VEC>
__device__ __forceinline__ void final_fold(float (&acc)[VEC], float* total) {
#pragma unroll
  for (int e = 0; e < VEC; ++e) total[e] += acc[e], acc[e] = 0.0f;
  carry_folds<VEC>(total);
  const float* sum = carried_sums<VEC>(total);
#pragma unroll 1
  for (int e = 0; e < VEC; ++e) total[e] = sum[e] - sum[kColumnsThreads * VEC + e];
}

// The 16-byte aligned vector at a, or where it reaches outside src's
// elements [first, end), the part inside it (zeros elsewhere): the shifted
// loads never read outside src's memory.
template <class T>
__device__ __forceinline__ Raw16 load_raw_within(const T* a, const T* first, const T* end) {
  constexpr int VEC = kVec16<T>;
  if (a >= first && a + VEC <= end) return load_raw(a);
  Vec<T, VEC> v;
#pragma unroll
  for (int e = 0; e < VEC; ++e) v.v[e] = a + e >= first && a + e < end ? a[e] : from_float<T>(0.0f);
  return to_raw(v);
}

// columns_cluster: the C blocks of a cluster hold a tile's C splits, each
// block's column sums in `sums` (shared memory, `width` floats). Block
// `rank` adds the C sums of its share of the tile's columns in rank order
// through distributed shared memory and writes them: a fixed order, no
// workspace, no second kernel.
template <class T>
__device__ __forceinline__ void write_cluster_sums(T* out, const float* sums, int64_t width, int64_t col0,
                                                   int64_t columns, int64_t out_offset, int64_t out_stride,
                                                   double scale) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every block's sums written
  const int64_t ranks = cluster.num_blocks(), share = ceil_div(width, ranks);
  const int64_t first = cluster.block_rank() * share, last = min(width, first + share);
  const int threads = blockDim.x * blockDim.y;
  for (int64_t j = first + threadIdx.y * blockDim.x + threadIdx.x; j < last; j += threads) {
    float acc = *cluster.map_shared_rank(sums + j, 0);
    for (int r = 1; r < ranks; ++r) acc += *cluster.map_shared_rank(sums + j, r);
    if (col0 + j < columns) out[out_offset + (col0 + j) * out_stride] = from_float<T>(scaled(acc, scale));
  }
  cluster.sync();  // no block leaves while another reads its sums
}

// The row loop of a thread whose VEC columns lie inside the rows, 16-byte
// aligned, with one reduced dim of `stride` elements: no per-row checks but
// in the last part round, kColumnUnroll loads in flight. p is the thread's
// first row; it takes `rows` rows TY apart, in the rounds of the general
// loop (the same sums, bitwise).
template <class T>
__device__ __forceinline__ void add_whole_rows(float (&acc)[kVec16<T>], float* total, const T* p, int64_t stride,
                                               int64_t rows, int TY) {
  constexpr int U = kColumnUnroll;
  const int64_t jump = int64_t{TY} * stride;
  unsigned round = 0;
  int64_t k = 0;
  for (; k + U <= rows; k += U, p += U * jump) {
    Raw16 raw[U];  // all loads first (converted after: see Raw16)
#pragma unroll
    for (int u = 0; u < U; ++u) raw[u] = load_raw(p + u * jump);
    add_round<T, true>(acc, raw);
    after_round(acc, total, ++round);
  }
  if (k < rows) {  // the last part round
    Raw16 raw[U];
#pragma unroll
    for (int u = 0; u < U; ++u) raw[u] = k + u < rows ? load_raw(p + u * jump) : Raw16{};
    add_round<T, true>(acc, raw);
  }
  final_fold(acc, total);
}

// kShifted: rows not 16-byte aligned (odd widths, a misaligned base). Each
// lane loads the aligned vector under its first column; its neighbour's
// (one shuffle, the segment's last lane loads it) completes its 16 bytes,
// shifted into place: vector loads where one would otherwise read each
// element. The rounds are the same for every thread, as the shuffles need.
// kCluster: the splits of a tile are the blocks of a cluster (columns_cluster),
// a block per task.
// kWhole (never with kShifted): the row loop is add_whole_rows; launched
// where every tile's columns are whole vectors inside the rows, 16-byte
// aligned, and the reduced index is one dim (args.reduced_stride).
// 16-bit kernels without shifts are held to 64 registers (4 blocks per SM;
// the folds took them to 76 without spilling once held).
template <class T, class Index, bool kShifted, bool kCluster, bool kWhole = false>
__global__ void __launch_bounds__(kColumnsThreads, kCluster && !kShifted ? 5 : !kShifted && sizeof(T) == 2 ? 4 : 1)
reduce_columns_kernel(T* out, const T* src, OffsetCalc<2, Index> planes, OffsetCalc<1, Index> reduced,
                      ColumnsArgs args) {
  constexpr int VEC = kVec16<T>;
  // folded, carried, compensations (carried_sums); held as 16-byte words so a
  // thread's slot takes 16-byte shared accesses (as plain floats nvcc used 4-byte ones)
  __shared__ Raw16 partial_words[3 * kColumnsThreads * VEC / 4];
  float* const partial = reinterpret_cast<float*>(partial_words);
  allow_early_launch();
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int64_t width = int64_t{TX} * VEC;  // columns per tile
  const int64_t tasks = args.planes * args.col_tiles * args.splits;
  const int64_t tile_tasks = args.tiles_fastest ? args.planes * args.col_tiles : 0;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const auto [tile_task, split, plane, tile] = column_task(task, args.splits, args.col_tiles, tile_tasks);
    int64_t offsets[2];
    planes.get(static_cast<Index>(plane), offsets);
    const int64_t col0 = tile * width + int64_t{tx} * VEC;
    const T* base = src + offsets[1] + col0;
    const bool full = args.vectors_ok && col0 + VEC <= args.columns;
    float* total = partial + (ty * TX + tx) * VEC;  // this thread's own slot: its folded sums (see add_round)
    float* carried = carried_sums<VEC>(total);
    float acc[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[e] = total[e] = carried[e] = carried[kColumnsThreads * VEC + e] = 0.0f;
    const int64_t r0 = split * args.split_len, r1 = min(args.reduced, r0 + args.split_len);
    auto row_offset = [&](int64_t r) {
      if (args.reduced_stride != 0) return r * args.reduced_stride;
      int64_t o[1];
      reduced.get(static_cast<Index>(r), o);
      return o[0];
    };
    const int64_t step = int64_t{TY} * kColumnUnroll;
    if constexpr (kWhole) {
      const int64_t rows = r1 - r0 > ty ? (r1 - r0 - ty + TY - 1) / TY : 0;
      add_whole_rows<T>(acc, total, base + (r0 + ty) * args.reduced_stride, args.reduced_stride, rows, TY);
    } else {  // (keep the braces: with `else for (...)` nvcc 13.0 dropped the unrolled loop after this one)
      unsigned round = 0;
      for (int64_t r = kShifted ? r0 : r0 + ty; r < r1; r += step) {
        Raw16 raw[kColumnUnroll];  // all loads first (converted after: see Raw16)
        if constexpr (kShifted) {
          const int segment = TX < 32 ? TX : 32;  // lanes of a warp along the same row (TX is a power of 2)
          const bool segment_last = tx % segment == segment - 1;
          const T* first = src + args.src_first;
          const T* end = src + args.src_end;
          Raw16 lo[kColumnUnroll], hi[kColumnUnroll];
          uint32_t shift[kColumnUnroll];
#pragma unroll
          for (int u = 0; u < kColumnUnroll; ++u) {
            const int64_t ru = r + ty + int64_t{u} * TY;
            lo[u] = hi[u] = Raw16{};  // all-zero bits are 0.0 in every dtype
            shift[u] = 0;
            if (ru >= r1) continue;  // (the same for the whole segment of TX lanes)
            const T* p = base + row_offset(ru);
            shift[u] = static_cast<uint32_t>(misalignment16(p));
            const T* a = p - shift[u] / sizeof(T);
            lo[u] = load_raw_within(a, first, end);
            if (segment_last && shift[u] != 0) hi[u] = load_raw_within(a + VEC, first, end);
          }
#pragma unroll
          for (int u = 0; u < kColumnUnroll; ++u) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const uint32_t next = __shfl_down_sync(0xffffffffu, lo[u].w[i], 1, segment);
              if (!segment_last) hi[u].w[i] = next;
            }
            raw[u] = shifted_window<T>(lo[u], hi[u], shift[u]);
          }
        } else {
#pragma unroll
          for (int u = 0; u < kColumnUnroll; ++u) {
            const int64_t ru = r + int64_t{u} * TY;
            raw[u] = Raw16{};  // all-zero bits are 0.0 in every dtype
            if (ru >= r1 || col0 >= args.columns) continue;
            const T* p = base + row_offset(ru);
            if (full) {
              raw[u] = load_raw(p);
            } else {
              Vec<T, VEC> v;
#pragma unroll
              for (int e = 0; e < VEC; ++e) v.v[e] = col0 + e < args.columns ? p[e] : from_float<T>(0.0f);
              raw[u] = to_raw(v);
            }
          }
        }
        add_round<T>(acc, raw);
        after_round(acc, total, ++round);
      }
      final_fold(acc, total);
    }
    // Combine the TY sums of each column as a tree, in a fixed order (TY is
    // a power of 2): log2(TY) adds in every column's chain.
    for (int half = TY / 2; half >= 1; half /= 2) {
      __syncthreads();
      if (ty < half)
#pragma unroll
        for (int e = 0; e < VEC; ++e) total[e] += partial[((ty + half) * TX + tx) * VEC + e];
    }
    if (ty == 0 && !kCluster) {  // (kCluster: the sums stay in row 0 of partial, this thread's own slot)
      if (args.splits > 1) {
        float* slot = args.partials + (tile_task * args.splits + split) * width + int64_t{tx} * VEC;
#pragma unroll
        for (int e = 0; e < VEC; ++e) slot[e] = total[e];
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e)
          if (col0 + e < args.columns)
            out[offsets[0] + (col0 + e) * args.out_stride] = from_float<T>(scaled(total[e], args.scale));
      }
    }
    if constexpr (kCluster)  // (a block per task: every block of the cluster gets here once)
      write_cluster_sums(out, partial, width, tile * width, args.columns, offsets[0], args.out_stride, args.scale);
    __syncthreads();
  }
}

// The columns kernel of a launch: shifted loads, the whole-rows loop, or
// the general loop.
template <class T, class Index, bool kCluster>
auto columns_kernel(bool shifted, bool whole) {
  if (shifted) return reduce_columns_kernel<T, Index, true, kCluster>;
  if (whole) return reduce_columns_kernel<T, Index, false, kCluster, true>;
  return reduce_columns_kernel<T, Index, false, kCluster>;
}

// Lets every cluster kernel of columns_kernel run in clusters past the portable size.
template <class T, class Index>
void allow_large_column_clusters() {
  allow_large_clusters<reduce_columns_kernel<T, Index, true, true>>();
  allow_large_clusters<reduce_columns_kernel<T, Index, false, true>>();
  allow_large_clusters<reduce_columns_kernel<T, Index, false, true, true>>();
}

// Adds each column's `splits` partials in a fixed order: a warp per output,
// each lane's share compensated (long_sum.cuh), then a shuffle tree.
template <class T, class Index>
__global__ void finish_columns_kernel(T* out, const float* partials, OffsetCalc<2, Index> planes, ColumnsArgs args,
                                      int64_t width) {
  wait_for_prior_grid();
  const int lane = threadIdx.x % 32;
  const int64_t outputs = args.planes * args.columns, warps = int64_t{gridDim.x} * blockDim.x / 32;
  for (int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; i < outputs; i += warps) {
    const int64_t plane = i / args.columns, c = i - plane * args.columns;
    const int64_t tile = c / width, within = c - tile * width;
    const float* p = partials + ((plane * args.col_tiles + tile) * args.splits) * width + within;
    LongSum sum;
    for (int64_t j = lane; j < args.splits; j += 32) sum.add(p[j * width]);
    const float acc = group_allreduce<32>(sum.value(), SumOp{}, nullptr);
    if (lane == 0) {
      int64_t offsets[2];
      planes.get(static_cast<Index>(plane), offsets);
      out[offsets[0] + c * args.out_stride] = from_float<T>(scaled(acc, args.scale));
    }
  }
}

}  // namespace
}  // namespace oprt::nvidia

#endif  // OPRT_REDUCE_SUM_NVIDIA_COLUMNS_CUH_
