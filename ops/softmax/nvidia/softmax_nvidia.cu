// softmax on NVIDIA GPUs, computed in float, rounded once on store. The
// plan (softmax_plan.h) gives the softmax dim (length, strides) and the other
// dims coalesced ("rows"). Variants:
//   rows_warp / rows_block  src contiguous along the dim and the row fits in
//            registers (up to 16K float32 / 32K 16-bit elements): a group of
//            threads per row (a few lanes of a warp, or a whole block) reads
//            the row once into registers, in its own dtype, and keeps it
//            through max, sum and scale, writes it once. exp(x - max) stays
//            in float registers too where they hold it (float32, and 16-bit
//            rows up to 16K); longer 16-bit rows recompute it on the way out
//   rows_cluster<C>  rows up to 8x longer: a cluster of C blocks per row,
//            each holding a slice in registers; the blocks exchange their
//            max and sum through distributed shared memory
//   rows_split  longer rows still: one cooperative kernel; pass 1 computes
//            (max, sum) per chunk into the workspace, a grid-wide barrier,
//            pass 2 merges a row's chunks and writes, reading in reverse
//   columns  the dim is not the contiguous one (e.g. dim 0): threads along
//            the contiguous dim, an online (max, sum) per column down the
//            softmax dim, split over blocks through the workspace
//   strided  the columns kernels with scalar loads, for any other layout
// Special values follow torch: a row holding NaN or +inf, or all -inf, is NaN.
#include "softmax_nvidia.h"

#include <cooperative_groups.h>
#include <cuda/ptx>

#include <algorithm>
#include <string>
#include <type_traits>

#include "../../common/descriptor.h"
#include "../../common/tuning.h"
#include "../../common/nvidia/column_task.cuh"
#include "../../common/nvidia/cuda_types.cuh"
#include "../../common/nvidia/group_reduce.cuh"
#include "../../common/nvidia/launch.cuh"
#include "../../common/nvidia/offset_calc.cuh"
#include "../softmax_plan.h"

namespace oprt::nvidia {
namespace {

namespace cg = cooperative_groups;

constexpr float kLog2e = 1.4426950408889634f;
// exp(x - m) as one MUFU.EX2: exp2f() adds a range check and two multiplies
// around it to produce denormal results (4 instructions), and the 16-bit
// rows kernels issue two exps per element. Flushing results below 2^-126 to
// zero changes only outputs under 1e-38.
__device__ __forceinline__ float exp_minus(float x, float m) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"((x - m) * kLog2e));
  return y;
}

// Running (max, sum of exp(x - max)). An element of -inf adds 0 even while
// the max is still -inf, so leading -infs do not poison the sum with NaN.
struct Stats {
  float m, s;
};
__device__ __forceinline__ float rescale(float s, float m_old, float m_new) {
  return s == 0.0f ? 0.0f : s * exp_minus(m_old, m_new);
}
__device__ __forceinline__ float exp_or_zero(float x, float m) { return x == -INFINITY ? 0.0f : exp_minus(x, m); }
__device__ __forceinline__ Stats merge(Stats a, Stats b) {
  const float m = fmaxf(a.m, b.m);
  return {m, rescale(a.s, a.m, m) + rescale(b.s, b.m, m)};
}
template <int N>
__device__ __forceinline__ void update(Stats& st, const float (&x)[N]) {
  float m = st.m;
#pragma unroll
  for (int e = 0; e < N; ++e) m = fmaxf(m, x[e]);
  float s = rescale(st.s, st.m, m);
#pragma unroll
  for (int e = 0; e < N; ++e) s += exp_or_zero(x[e], m);
  st = {m, s};
}
// Max and sum of N values (a power of two) as trees: independent
// instructions, where a running max or sum is a chain of N dependent ones.
template <int N>
__device__ __forceinline__ float tree_max(float (&v)[N]) {
#pragma unroll
  for (int width = N / 2; width >= 1; width /= 2)
#pragma unroll
    for (int e = 0; e < width; ++e) v[e] = fmaxf(v[e], v[e + width]);
  return v[0];
}
template <int N>
__device__ __forceinline__ float tree_sum(float (&v)[N]) {
#pragma unroll
  for (int width = N / 2; width >= 1; width /= 2)
#pragma unroll
    for (int e = 0; e < width; ++e) v[e] += v[e + width];
  return v[0];
}
// update() over U loaded vectors at once (vector u counts when ok[u]): one
// rescale per round and short dependency chains. Written because Nsight
// Compute showed the long-row stats pass latency-bound; on the H200 it ran
// the same as one update per vector (the latency is elsewhere). Converts
// each vector twice rather than hold U * VEC floats in registers.
template <class T, int U>
__device__ __forceinline__ void update_round(Stats& st, const Raw16 (&raw)[U], const bool (&ok)[U]) {
  constexpr int VEC = kVec16<T>;
  float mu[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    float y[VEC];
    raw_to_floats<T>(raw[u], y);
    mu[u] = ok[u] ? tree_max(y) : -INFINITY;
  }
  const float m = fmaxf(st.m, tree_max(mu));
  float acc[VEC] = {};
  const auto accumulate = [&](auto term) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!ok[u]) continue;
      float y[VEC];
      raw_to_floats<T>(raw[u], y);
#pragma unroll
      for (int e = 0; e < VEC; ++e) acc[e] += term(y[e]);
    }
  };
  if (m == -INFINITY)  // every counted element is -inf (adds 0) or NaN (must reach the sum)
    accumulate([](float v) { return v == -INFINITY ? 0.0f : v; });
  else  // exp(-inf - m) is 0 for any m > -inf: no per-element test (2 instructions fewer)
    accumulate([m](float v) { return exp_minus(v, m); });
  st = {m, rescale(st.s, st.m, m) + tree_sum(acc)};
}
__device__ __forceinline__ Stats warp_merge(Stats v) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask /= 2)
    v = merge(v, Stats{__shfl_xor_sync(0xffffffffu, v.m, mask), __shfl_xor_sync(0xffffffffu, v.s, mask)});
  return v;
}
// Whole-block merge in a fixed order; every thread gets the result.
__device__ __forceinline__ Stats block_merge(Stats v, Stats* slots) {
  v = warp_merge(v);
  const int warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) slots[threadIdx.x / 32] = v;
  __syncthreads();
  v = slots[0];
  for (int w = 1; w < warps; ++w) v = merge(v, slots[w]);
  __syncthreads();
  return v;
}

template <class T>
__device__ __forceinline__ bool aligned16(const T* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

// ---- rows in registers ----------------------------------------------------------
// G threads per row (G = 0: the whole block, or with C > 1 a cluster of C
// blocks, each holding a contiguous slice of the row). Thread `lane` holds
// vector slots lane, lane + G, ... of its slice; slot k covers row elements
// k*VEC - shift .., where shift (when enabled) puts the slots on 16-byte
// boundaries.
// Threads per block for a row: 512, so a thread may use 128 registers and
// keeps its 8 vectors (32 or 64 elements) without spilling; float32 rows
// with 4 vectors a thread take up to 1024 (63 registers, 32 warps per SM).
template <class T, int NV>
__host__ __device__ constexpr int max_row_block() {
  return std::is_same_v<T, float> && NV == 4 ? 1024 : 512;
}

template <int C, class Op>
__device__ __forceinline__ float cluster_allreduce(float v, Op op, float* slot) {
  if constexpr (C == 1) {
    return v;
  } else {
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) *slot = v;
    cluster.sync();
    v = *cluster.map_shared_rank(slot, 0);
#pragma unroll
    for (int r = 1; r < C; ++r) v = op(v, *cluster.map_shared_rank(slot, r));
    return v;
  }
}

// Softmax of one row whose slots are in registers (slot j of this thread at
// row element (j * tpr + lane) * VEC - hs, -inf padded), written to q. Every
// thread of the block calls it together; after_max() runs once the max is
// combined, which for a whole-block group is past a barrier that every
// thread reaches after using its slots' source.
template <class T, int G, int NV, int C, class AfterMax>
__device__ __forceinline__ void softmax_row_in_registers(const Raw16 (&raw)[NV], T* q, int64_t length,
                                                         int64_t out_stride, int tpr, int lane, int64_t hs,
                                                         bool valid, float* slots, float* cluster_max,
                                                         float* cluster_sum, AfterMax after_max) {
  constexpr int VEC = kVec16<T>;
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    float x[VEC];
    raw_to_floats<T>(raw[j], x);
#pragma unroll
    for (int e = 0; e < VEC; ++e) m = fmaxf(m, x[e]);
  }
  // Blocks of up to 1024 threads combine their 32 warps by a shuffle tree.
  constexpr bool kTree = max_row_block<T, NV>() > 512;
  m = G ? group_allreduce<(G ? G : 1)>(m, MaxOp{}, slots) : block_allreduce<kTree>(m, MaxOp{}, slots);
  m = cluster_allreduce<C>(m, MaxOp{}, cluster_max);
  after_max();
  // exp(x - max) is kept in float registers when they hold it (float32,
  // or 16-bit with at most 4 slots); 8 slots of 16-bit keep only the
  // input and recompute exp on the way out (two MUFU.EX2 per element).
  constexpr bool kKeepExp = std::is_same_v<T, float> || NV <= 4;
  float kept[kKeepExp ? NV : 1][VEC];
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    float x[VEC];
    raw_to_floats<T>(raw[j], x);
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      x[e] = exp_minus(x[e], m);
      s += x[e];
      if constexpr (kKeepExp) kept[j][e] = x[e];
    }
  }
  s = G ? group_allreduce<(G ? G : 1)>(s, SumOp{}, slots) : block_allreduce<kTree>(s, SumOp{}, slots);
  // The cluster's second sync also tells every block that the others are
  // done reading cluster_max, so the next row may overwrite it.
  s = cluster_allreduce<C>(s, SumOp{}, cluster_sum);
  const float r = 1.0f / s;
  if (!valid) return;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int64_t v0 = (int64_t{j} * tpr + lane) * VEC - hs;
    float x[VEC];
    if constexpr (kKeepExp) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) x[e] = kept[j][e] * r;
    } else {
      raw_to_floats<T>(raw[j], x);
#pragma unroll
      for (int e = 0; e < VEC; ++e) x[e] = exp_minus(x[e], m) * r;
    }
    if (v0 >= 0 && v0 + VEC <= length && out_stride == 1 && aligned16(q + v0)) {
      store_floats<VEC>(q + v0, x);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        if (v0 + e >= 0 && v0 + e < length) q[(v0 + e) * out_stride] = from_float<T>(x[e]);
    }
  }
}

// MB: resident blocks per SM the compiler must allow (a register cap).
template <class T, int G, int NV, int C, class Index, int MB = 1>
__global__ void __launch_bounds__(G ? 256 : max_row_block<T, NV>(), MB > 1 ? MB : 0)
softmax_rows_kernel(T* out, const T* src, OffsetCalc<2, Index> rows, int64_t nrows, int64_t length,
                    int64_t out_stride, bool shift) {
  constexpr int VEC = kVec16<T>;
  __shared__ float slots[kMaxWarps];
  __shared__ float cluster_max, cluster_sum;  // read by the cluster's other blocks
  const int tpr = G ? G : blockDim.x;
  const int groups = blockDim.x / tpr, group = threadIdx.x / tpr;
  const int rank = C > 1 ? static_cast<int>(blockIdx.x % C) : 0;
  const int lane = threadIdx.x % tpr + rank * tpr * NV;  // first slot of this thread
  const int64_t first = C > 1 ? blockIdx.x / C : int64_t{blockIdx.x} * groups;
  const int64_t step = C > 1 ? gridDim.x / C : int64_t{gridDim.x} * groups;
  for (int64_t base = first; base < nrows; base += step) {
    const int64_t row = base + group;
    const bool valid = row < nrows;
    int64_t offsets[2] = {0, 0};
    if (valid) rows.get(static_cast<Index>(row), offsets);
    const T* p = src + offsets[1];
    T* q = out + offsets[0];
    const int64_t hs = (valid && shift) ? (reinterpret_cast<uintptr_t>(p) & 15) / sizeof(T) : 0;
    // The row is loaded into registers in its own dtype (16-bit rows hold
    // twice the elements per register).
    Raw16 raw[NV];  // see Raw16: every load in flight before any is used
    const T padding = from_float<T>(-INFINITY);  // contributes exp(-inf) = 0
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int64_t v0 = (int64_t{j} * tpr + lane) * VEC - hs;
      if (valid && v0 >= 0 && v0 + VEC <= length && aligned16(p + v0)) {
        raw[j] = load_raw(p + v0);
      } else {
        Vec<T, VEC> v;
#pragma unroll
        for (int e = 0; e < VEC; ++e) v.v[e] = valid && v0 + e >= 0 && v0 + e < length ? p[v0 + e] : padding;
        raw[j] = to_raw(v);
      }
    }
    softmax_row_in_registers<T, G, NV, C>(raw, q, length, out_stride, tpr, lane, hs, valid, slots, &cluster_max,
                                          &cluster_sum, [] {});
  }
  if constexpr (C > 1) cg::this_cluster().sync();  // keep cluster_sum alive until all have read it
}

// ---- rows streamed through shared memory ------------------------------------------
// The rows_block plan, for many rows that start 16-byte aligned and are whole
// vectors long: a resident grid of blocks, each taking every gridDim.x-th row.
// Thread 0 keeps the block's next rows in flight as bulk asynchronous copies
// (TMA) into `buffers` row-sized shared-memory buffers, so reading does not
// stop while the block combines and writes a row: in rows_block a block has
// no loads in flight from its row's last load until the next row starts.
// The threads copy their slots from shared memory into registers and go on
// exactly as rows_block does.
constexpr int kMaxStreamBuffers = 4;

template <class T, int NV, class Index, int MB = 1>
__global__ void __launch_bounds__(max_row_block<T, NV>(), MB > 1 ? MB : 0)
softmax_stream_kernel(T* out, const T* src, OffsetCalc<2, Index> rows, int64_t nrows, int64_t length,
                      int64_t out_stride, int buffers) {
#if __CUDA_ARCH__ >= 900
  constexpr int VEC = kVec16<T>;
  extern __shared__ Raw16 row_buffers[];        // buffers x row_vectors
  __shared__ uint64_t landed[kMaxStreamBuffers];  // one mbarrier per buffer
  __shared__ float slots[kMaxWarps];
  const int64_t row_vectors = length / VEC;
  const auto issue = [&](int64_t row, int b) {
    int64_t offsets[2];
    rows.get(static_cast<Index>(row), offsets);
    const uint32_t bytes = static_cast<uint32_t>(row_vectors * sizeof(Raw16));
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                         &landed[b], bytes);
    cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, row_buffers + b * row_vectors,
                             src + offsets[1], bytes, &landed[b]);
  };
  if (threadIdx.x == 0) {
    for (int b = 0; b < buffers; ++b) cuda::ptx::mbarrier_init(&landed[b], 1);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the barriers, as the copy engine sees them
    for (int b = 0; b < buffers; ++b)
      if (blockIdx.x + int64_t{b} * gridDim.x < nrows) issue(blockIdx.x + int64_t{b} * gridDim.x, b);
  }
  __syncthreads();  // no thread waits on a barrier before it is initialized
  Raw16 padding;
  {
    Vec<T, VEC> v;
#pragma unroll
    for (int e = 0; e < VEC; ++e) v.v[e] = from_float<T>(-INFINITY);  // contributes exp(-inf) = 0
    padding = to_raw(v);
  }
  int b = 0;
  uint32_t parity = 0;  // of buffer b's barrier phase
  for (int64_t row = blockIdx.x; row < nrows; row += gridDim.x) {
    while (!cuda::ptx::mbarrier_try_wait_parity(&landed[b], parity)) {
    }
    const Raw16* buffer = row_buffers + b * row_vectors;
    Raw16 raw[NV];
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int64_t v = int64_t{j} * blockDim.x + threadIdx.x;
      raw[j] = v < row_vectors ? buffer[v] : padding;
    }
    int64_t offsets[2];
    rows.get(static_cast<Index>(row), offsets);
    // The max's block reduction holds barriers that every thread reaches
    // after copying its slots out of the buffer: thread 0 may refill it.
    const auto refill = [&] {
      const int64_t next = row + int64_t{buffers} * gridDim.x;
      if (threadIdx.x == 0 && next < nrows) {
        cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the threads' reads before the copy's writes
        issue(next, b);
      }
    };
    softmax_row_in_registers<T, 0, NV, 1>(raw, out + offsets[0], length, out_stride, blockDim.x, threadIdx.x, 0,
                                          true, slots, nullptr, nullptr, refill);
    if (++b == buffers) {
      b = 0;
      parity ^= 1;
    }
  }
#else
  __trap();  // planned only on sm_90 and newer
#endif
}

// ---- long rows, split over blocks -------------------------------------------------
// Two-pass kernels read src twice. The second pass walks the data in
// reverse: it starts on what the first pass read last, which is still in L2
// (60 MiB on the H200), so an input that fits in L2 is read from DRAM once.
struct SplitArgs {
  int64_t nrows, length, out_stride, splits, chunk;
  Stats* partials;  // [row][split]
};

// Visits row elements [c0, c1) of p: the aligned vectors a round at a time
// (U per thread, all loaded before round(raw, ok, at) sees them: vector u is
// there when ok[u], at element at[u]) and the scalar ends one by one;
// kReverse walks the rounds last to first.
template <bool kReverse, int U, class T, class Round, class Scalar>
__device__ __forceinline__ void visit_chunk(const T* p, int64_t c0, int64_t c1, Round&& round, Scalar&& scalar) {
  constexpr int VEC = kVec16<T>;
  const int64_t head = min(c1 - c0, elements_to_alignment(p + c0));
  const int64_t a = c0 + head, vectors = (c1 - a) / VEC, tail = a + vectors * VEC;
  for (int64_t i = c0 + threadIdx.x; i < a; i += blockDim.x) scalar(i);
  for (int64_t i = tail + threadIdx.x; i < c1; i += blockDim.x) scalar(i);
  const int64_t step = int64_t{blockDim.x} * U, rounds = ceil_div(vectors, step);
  for (int64_t k = 0; k < rounds; ++k) {
    const int64_t v = (kReverse ? rounds - 1 - k : k) * step + threadIdx.x;
    Raw16 raw[U];
    bool ok[U];
    int64_t at[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t vu = v + int64_t{u} * blockDim.x;
      ok[u] = vu < vectors;
      at[u] = a + vu * VEC;
      if (ok[u]) raw[u] = load_raw(p + at[u]);
    }
    round(raw, ok, at);
  }
}

// Writes exp(x - m) * r for the vector `raw` of row elements i.. of q.
template <class T>
__device__ __forceinline__ void write_scaled(T* q, int64_t i, const Raw16& raw, float m, float r, int64_t out_stride) {
  constexpr int VEC = kVec16<T>;
  float x[VEC];
  raw_to_floats<T>(raw, x);
#pragma unroll
  for (int e = 0; e < VEC; ++e) x[e] = exp_minus(x[e], m) * r;
  if (out_stride == 1 && aligned16(q + i)) {
    store_floats<VEC>(q + i, x);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) q[(i + e) * out_stride] = from_float<T>(x[e]);
  }
}

// One cooperative kernel (all blocks resident): block b owns a contiguous
// range of (row, split) tasks. Pass 1 writes each task's (max, sum) to the
// workspace; after a grid-wide barrier, pass 2 walks the same tasks in
// reverse, merges its row's stats (once per row it meets, in a fixed order,
// so every block of a row gets bitwise the same result) and writes.
// Replaces a stats kernel, a one-block-per-row combine kernel and a write
// kernel (Nsight Compute: the combine alone was 5.8 of 41 us on 4 x 4M bf16).
constexpr int kSplitThreads = 256;

// U: vectors in flight per thread. 4 runs at 3 blocks per SM (80
// registers: at 4 blocks, 64 registers, the float16 kernel spilled and ran
// 6% slower on the H200); 8 (an A/B candidate, OPRT_TUNE_SOFTMAX_SPLIT_UNROLL)
// at 2 (128 registers).
template <int U>
constexpr int split_min_blocks() {
  return U == 4 ? 3 : 2;
}

template <class T, class Index, int U>
__global__ void __launch_bounds__(kSplitThreads, split_min_blocks<U>())
softmax_split_kernel(T* out, const T* src, OffsetCalc<2, Index> rows, SplitArgs args) {
  __shared__ Stats slots[kMaxWarps];
  const int64_t tasks = args.nrows * args.splits;
  const int64_t t0 = tasks * blockIdx.x / gridDim.x, t1 = tasks * (blockIdx.x + 1) / gridDim.x;
  for (int64_t task = t0; task < t1; ++task) {
    const int64_t row = task / args.splits, split = task - row * args.splits;
    int64_t offsets[2];
    rows.get(static_cast<Index>(row), offsets);
    const T* p = src + offsets[1];
    const int64_t c0 = split * args.chunk, c1 = min(args.length, c0 + args.chunk);
    Stats st{-INFINITY, 0.0f};
    visit_chunk<false, U>(
        p, c0, c1,
        [&](const Raw16 (&raw)[U], const bool (&ok)[U], const int64_t (&)[U]) {
          update_round<T>(st, raw, ok);
        },
        [&](int64_t i) {
          const float x[1] = {to_float(p[i])};
          update(st, x);
        });
    st = block_merge(st, slots);
    if (threadIdx.x == 0) args.partials[task] = st;
  }
  cg::this_grid().sync();
  int64_t merged_row = -1;
  float m = 0.0f, r = 0.0f;
  for (int64_t task = t1 - 1; task >= t0; --task) {
    const int64_t row = task / args.splits, split = task - row * args.splits;
    if (row != merged_row) {  // the same for the whole block: block_merge may sync
      const Stats* part = args.partials + row * args.splits;
      Stats st{-INFINITY, 0.0f};
      for (int64_t j = threadIdx.x; j < args.splits; j += blockDim.x) st = merge(st, part[j]);
      st = block_merge(st, slots);
      m = st.m;
      r = 1.0f / st.s;
      merged_row = row;
    }
    int64_t offsets[2];
    rows.get(static_cast<Index>(row), offsets);
    const T* p = src + offsets[1];
    T* q = out + offsets[0];
    const int64_t c0 = split * args.chunk, c1 = min(args.length, c0 + args.chunk);
    visit_chunk<true, U>(
        p, c0, c1,
        [&](const Raw16 (&raw)[U], const bool (&ok)[U], const int64_t (&at)[U]) {
#pragma unroll
          for (int u = 0; u < U; ++u)
            if (ok[u]) write_scaled<T>(q, at[u], raw[u], m, r, args.out_stride);
        },
        [&](int64_t i) { q[i * args.out_stride] = from_float<T>(exp_minus(to_float(p[i]), m) * r); });
  }
}

// ---- few long rows, held in shared memory ------------------------------------------
// No more (row, split) tasks than SMs: a cooperative grid of one 512-thread
// block per SM, one task per block. One thread issues bulk asynchronous
// copies (TMA, no registers; `ahead` of them in flight, so they land in
// order) of the chunk's first vectors into shared memory, up to ~224 KB; the
// threads read the rest of the chunk with ordinary loads, then take (max,
// sum) over the copies as they land. After the grid barrier the rest is read
// again (first, while L2 still holds it) and the shared copy is scaled and
// written: src leaves DRAM once wherever the chunk fits in shared memory,
// where rows_split reads it twice (the second time from L2 when it fits).
constexpr int kResidentThreads = 512;
constexpr int kResidentUnroll = 4;
constexpr int kPieceVectors = kResidentThreads * kResidentUnroll;  // one bulk copy: 32 KB, a round per thread
constexpr int kMaxPieces = 8;                                      // 256 KB: more than any SM holds

template <class T, class Index>
__global__ void __launch_bounds__(kResidentThreads, 1)
softmax_resident_kernel(T* out, const T* src, OffsetCalc<2, Index> rows, SplitArgs args, int64_t cache_vectors,
                        int ahead) {
#if __CUDA_ARCH__ >= 900
  constexpr int VEC = kVec16<T>, U = kResidentUnroll;
  extern __shared__ Raw16 cache[];
  __shared__ uint64_t landed[kMaxPieces];  // one mbarrier per bulk copy
  __shared__ Stats slots[kMaxWarps];
  const int64_t task = blockIdx.x;
  const bool active = task < args.nrows * args.splits;
  const int64_t row = active ? task / args.splits : 0, split = task - row * args.splits;
  int64_t offsets[2] = {0, 0};
  if (active) rows.get(static_cast<Index>(row), offsets);
  const T* p = src + offsets[1];
  T* q = out + offsets[0];
  const int64_t c0 = active ? split * args.chunk : 0, c1 = active ? min(args.length, c0 + args.chunk) : 0;
  const int64_t a = c0 + min(c1 - c0, elements_to_alignment(p + c0));  // first aligned element
  const int64_t cached = min((c1 - a) / VEC, cache_vectors);           // vectors from a on, in `cache`
  const int64_t rest = a + cached * VEC;                               // read from global memory
  const int pieces = static_cast<int>(ceil_div(cached, kPieceVectors));
  // Thread 0 keeps `ahead` pieces in flight: piece k lands before the later
  // ones compete for bandwidth, so the stats of k overlap their loads. Each
  // piece has its own shared memory and barrier (nothing is reused).
  const auto issue = [&](int k) {
    const int64_t v0 = int64_t{k} * kPieceVectors;
    const uint32_t bytes = static_cast<uint32_t>(min(int64_t{kPieceVectors}, cached - v0) * sizeof(Raw16));
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                         &landed[k], bytes);
    cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, cache + v0, p + a + v0 * VEC, bytes,
                             &landed[k]);
  };
  if (threadIdx.x == 0) {
    for (int k = 0; k < pieces; ++k) cuda::ptx::mbarrier_init(&landed[k], 1);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the barriers, as the copy engine sees them
    for (int k = 0; k < min(pieces, ahead); ++k) issue(k);
  }
  __syncthreads();  // no thread waits on a barrier before it is initialized
  Stats st{-INFINITY, 0.0f};
  const auto stats_scalar = [&](int64_t i) {
    const float x[1] = {to_float(p[i])};
    update(st, x);
  };
  for (int64_t i = c0 + threadIdx.x; i < a; i += blockDim.x) stats_scalar(i);
  visit_chunk<false, U>(
      p, rest, c1,
      [&](const Raw16 (&raw)[U], const bool (&ok)[U], const int64_t (&)[U]) { update_round<T>(st, raw, ok); },
      stats_scalar);
  for (int k = 0; k < pieces; ++k) {
    while (!cuda::ptx::mbarrier_try_wait_parity(&landed[k], 0)) {
    }
    if (threadIdx.x == 0 && k + ahead < pieces) issue(k + ahead);
    Raw16 raw[U];
    bool ok[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = int64_t{k} * kPieceVectors + u * kResidentThreads + threadIdx.x;
      ok[u] = v < cached;
      if (ok[u]) raw[u] = cache[v];
    }
    update_round<T>(st, raw, ok);
  }
  st = block_merge(st, slots);
  if (active && threadIdx.x == 0) args.partials[task] = st;
  cg::this_grid().sync();
  if (!active) return;
  const Stats* part = args.partials + row * args.splits;
  st = {-INFINITY, 0.0f};
  for (int64_t j = threadIdx.x; j < args.splits; j += blockDim.x) st = merge(st, part[j]);
  st = block_merge(st, slots);
  const float m = st.m, r = 1.0f / st.s;
  const auto write_scalar = [&](int64_t i) { q[i * args.out_stride] = from_float<T>(exp_minus(to_float(p[i]), m) * r); };
  for (int64_t i = c0 + threadIdx.x; i < a; i += blockDim.x) write_scalar(i);
  visit_chunk<true, U>(
      p, rest, c1,
      [&](const Raw16 (&raw)[U], const bool (&ok)[U], const int64_t (&at)[U]) {
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (ok[u]) write_scaled<T>(q, at[u], raw[u], m, r, args.out_stride);
      },
      write_scalar);
#pragma unroll 4
  for (int64_t v = threadIdx.x; v < cached; v += kResidentThreads)
    write_scaled<T>(q, a + v * VEC, cache[v], m, r, args.out_stride);
#else
  __trap();  // planned only on sm_90 and newer
#endif
}

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
#pragma unroll
        for (int u = 0; u < kColumnsUnroll; ++u) {
          const int64_t lu = l + int64_t{u} * TY;
          if (lu < l1) raw[u] = load_columns(base + lu * args.src_stride, col0, args);
        }
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
#pragma unroll
      for (int u = 0; u < kColumnsUnroll; ++u) {
        const int64_t lu = l + int64_t{u} * TY;
        if (lu < l1) raw[u] = load_columns(in + lu * args.src_stride, col0, args);
      }
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

// ---- planning ----------------------------------------------------------------------
enum class Kind { kEmpty, kRows, kSplit, kResident, kColumns };

struct SoftmaxNvidia : oprt_descriptor {
  static constexpr const char* kName = "softmax/nvidia";
  SoftmaxNvidia() : oprt_descriptor(descriptor_tag(kName)) {}
  Kind kind = Kind::kRows;
  int32_t dtype = 0;
  int64_t length = 1, src_stride = 1, out_stride = 1, nrows = 0;
  StridedLayout<2> rows;    // rows / split: every other dim; columns: the planes
  int group = 0;            // rows: threads per row (<= 32), or 0 with `block` threads per row
  int block = 256;
  int cluster = 1;          // rows: blocks per row (a thread block cluster)
  int slots = 8;            // rows: 16-byte vectors of a row per thread
  int waves = 4;            // rows: resident grids of blocks in the grid
  int min_blocks = 1;       // rows_block: blocks per SM the register use must allow
  int split_unroll = 4;     // split: vectors in flight per thread
  bool stream = false;      // rows_block rows streamed through shared memory (rows_stream)
  int stream_buffers = 1;   // rows_stream: rows in shared memory per block
  bool shift = false;       // rows: rows start at varying alignment
  int64_t splits = 1, chunk = 0;
  unsigned grid = 0;        // split, resident: the cooperative grid
  int64_t cache_vectors = 0;  // resident: 16-byte vectors of shared memory per block
  int ahead = kMaxPieces;     // resident: bulk copies in flight at a time
  int tx = 32, ty = 8;      // columns
  int64_t columns = 1, col_tiles = 1, planes = 1, src_col_stride = 1, out_col_stride = 1;
};

constexpr int kRowSlots = 8;  // 16-byte vectors of a row kept in registers per thread
constexpr int kMaxCluster = 8;             // the portable thread block cluster size

int64_t ceil_pow2(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

// The shared memory a resident block holds its chunk in (on the current device).
template <class T, class Index>
size_t resident_cache_bytes() {
  return opt_in_dynamic_smem<softmax_resident_kernel<T, Index>>(size_t{kMaxPieces} * kPieceVectors * 16);
}

// Cuts every row into `splits` chunks of whole vectors, about `blocks` in
// all and none shorter than `min_chunk` elements (unless the row is); the
// workspace holds a (max, sum) per chunk.
void plan_chunks(SoftmaxNvidia& d, int64_t blocks, int64_t min_chunk, int vec) {
  d.splits = std::clamp<int64_t>(blocks / d.nrows, 1, std::max<int64_t>(1, d.length / min_chunk));
  d.chunk = ceil_div(ceil_div(d.length, d.splits), vec) * vec;
  d.splits = ceil_div(d.length, d.chunk);
  d.workspace_bytes = static_cast<size_t>(d.nrows * d.splits) * sizeof(Stats);
}

// Few long rows: one chunk per block of a one-block-per-SM cooperative grid.
void plan_resident(SoftmaxNvidia& d, int vec) {
  d.kind = Kind::kResident;
  d.variant = "rows_resident";
  dispatch_dtype(d.dtype, [&](auto type) {
    dispatch_index(d.nrows, [&](auto index) {
      using T = decltype(type);
      using Index = decltype(index);
      const size_t bytes = resident_cache_bytes<T, Index>();
      d.grid = resident_grid(softmax_resident_kernel<T, Index>, kResidentThreads, 1, bytes);
      const int64_t room = static_cast<int64_t>(bytes / 16);
      d.cache_vectors = std::clamp<int64_t>(tuned("SOFTMAX_RESIDENT_CACHE", room), 0, room);
      d.ahead = static_cast<int>(std::clamp<int64_t>(tuned("SOFTMAX_RESIDENT_AHEAD", 3), 1, kMaxPieces));
    });
  });
  // At most one chunk per block, each at least a round of the block's loads.
  plan_chunks(d, d.grid, int64_t{kResidentThreads} * vec * kResidentUnroll, vec);
}

// Calls f(NV, MB) (integral constants) for d's rows_block kernels: the
// vector slots per thread and the blocks per SM their registers allow.
template <class T, class F>
void visit_block_shape(const SoftmaxNvidia& d, F f) {
  using std::integral_constant;
  if (d.slots == 4) {
    if constexpr (max_row_block<T, 4>() == 512) {
      if (d.min_blocks == 2) return f(integral_constant<int, 4>{}, integral_constant<int, 2>{});
    }
    return f(integral_constant<int, 4>{}, integral_constant<int, 1>{});
  }
  if (d.min_blocks == 2) return f(integral_constant<int, 8>{}, integral_constant<int, 2>{});
  return f(integral_constant<int, 8>{}, integral_constant<int, 1>{});
}

size_t stream_smem_bytes(const SoftmaxNvidia& d) {
  return static_cast<size_t>(d.stream_buffers) * static_cast<size_t>(d.length) * find_dtype(d.dtype)->size;
}

// Turns a rows_block plan into rows_stream where it applies: sm_90 and newer,
// rows 16-byte aligned and whole vectors long, `stream_buffers` of them fit
// in a block's shared memory, more rows than the resident grid has blocks
// (with a row per block there is nothing to prefetch), and rows_block would
// keep few blocks on an SM (1; 2 for 16-bit rows): with more, some block
// always has loads in flight anyway. H200 (scripts/nvidia_ab.py, rows_block
// vs one buffer): 16384^2 float32 591.6 vs 552.5 us (1 block per SM), bf16
// 305.6 vs 280.4 (2), 4096x32768 bf16 194.3 vs 147.3 (1); slower at 8192^2,
// float32 136.9 vs 140.7 (2), bf16 72.0 vs 73.2 (4). Two buffers: 545.9 /
// 291.8 / 150.3.
void plan_stream(SoftmaxNvidia& d, bool aligned_rows, int vec) {
  if (tuned("SOFTMAX_STREAM", 1) != 1 || current_device_info().cc_major < 9 || !aligned_rows ||
      d.length % vec != 0 || d.block < 64)
    return;
  d.stream_buffers = static_cast<int>(std::clamp<int64_t>(tuned("SOFTMAX_STREAM_BUFFERS", 1), 1, kMaxStreamBuffers));
  const int max_per_sm = static_cast<int>(std::clamp<int64_t>(tuned("SOFTMAX_STREAM_BLOCKS", 32), 1, 32));
  // rows_block blocks per SM below which to stream (float32 rows carry half
  // the arithmetic per byte: at 2 blocks they stream slower, 16-bit faster)
  const int most_row_blocks = static_cast<int>(tuned("SOFTMAX_STREAM_BELOW", find_dtype(d.dtype)->size == 4 ? 2 : 3));
  const size_t smem = stream_smem_bytes(d);
  unsigned grid = 0;
  dispatch_dtype(d.dtype, [&](auto type) {
    dispatch_index(d.nrows, [&](auto index) {
      using T = decltype(type);
      using Index = decltype(index);
      visit_block_shape<T>(d, [&](auto nv, auto mb) {
        int row_blocks = 0;
        OPRT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &row_blocks, softmax_rows_kernel<T, 0, nv.value, 1, Index, mb.value>, d.block, 0));
        constexpr auto kernel = softmax_stream_kernel<T, nv.value, Index, mb.value>;
        if (row_blocks < most_row_blocks && opt_in_dynamic_smem<kernel>() >= smem)
          grid = resident_grid(kernel, d.block, max_per_sm, smem);
      });
    });
  });
  if (grid == 0 || d.nrows <= grid) return;
  d.stream = true;
  d.grid = grid;
  d.variant = "rows_stream";
}

SoftmaxNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, int32_t dim) {
  SoftmaxProblem p = plan_softmax(out, src, dim);
  require_nvidia_dtype(p.src, "src");
  auto* d = new SoftmaxNvidia;
  d->dtype = p.src.dtype;
  d->length = p.length;
  d->src_stride = p.length == 1 ? 1 : p.src_stride;
  d->out_stride = p.length == 1 ? 1 : p.out_stride;
  d->rows = p.rows;
  d->nrows = p.rows.numel();
  if (p.src.numel == 0) {
    d->kind = Kind::kEmpty;
    d->variant = "empty";
    return d;
  }
  const int element_size = p.src.element_size();
  const int vec = 16 / element_size;
  const int64_t sms = current_device_info().sm_count;
  if (d->src_stride == 1) {
    // Rows start 16-byte aligned (given an aligned base) when every row stride is a multiple of 16 bytes.
    bool aligned_rows = true;
    for (int k = 0; k < 2; ++k)
      for (int dd = 0; dd < p.rows.ndim; ++dd) aligned_rows &= (p.rows.strides[k][dd] * element_size) % 16 == 0;
    d->shift = !aligned_rows;
    const int64_t vectors = ceil_div(d->length + (d->shift ? vec - 1 : 0), vec);
    const auto max_block = [&](int64_t slots) -> int64_t {
      return element_size == 4 && slots == 4 ? max_row_block<float, 4>() : max_row_block<half, 8>();
    };
    // Vector slots per thread: 2 for short rows (more threads per row);
    // float32 rows a warp holds with 8 take 8; other rows a block holds with
    // 4 take 4: 16-bit rows then keep exp(x - max) in float registers (one
    // exp per element instead of two), float32 rows get up to 1024 threads,
    // 32 warps per SM where 8 slots left 16 (H200, scripts/nvidia_ab.py:
    // 16384^2 596 vs 615 us, 8192^2 137 vs 139; with the serial combine of
    // 32 warps' results block_allreduce had before, 687 and 141).
    int64_t nv = 8;
    if (vectors <= 2 * 32) {
      nv = 2;
    } else if (!(element_size == 4 && ceil_div(vectors, 8) <= 32) && ceil_div(vectors, 4) <= max_block(4)) {
      nv = 4;
    }
    const int64_t forced = tuned("SOFTMAX_SLOTS", nv);
    if ((forced == 2 || forced == 4 || forced == 8) &&
        ceil_div(vectors, forced) <= (forced == 2 ? 32 : max_block(forced)))
      nv = forced;
    d->slots = static_cast<int>(nv);
    // Measured on the H200 (scripts/nvidia_ab.py): 16-bit rows in blocks
    // capped at 64 registers (2 blocks of 512 per SM) ran 2-10% faster than
    // with the registers the compiler picks; float32 128-wide rows with a
    // one-block-per-task grid 5% faster than 4 resident grids.
    const int64_t waves = element_size == 4 && nv == 2 ? 16 : 4;
    d->waves = static_cast<int>(std::clamp<int64_t>(tuned("SOFTMAX_WAVES", waves), 1, 64));
    // (Blocks of up to 1024 threads run one per SM.)
    d->min_blocks = max_block(nv) == 512 && tuned("SOFTMAX_MIN_BLOCKS", element_size < 4 && nv == 4 ? 2 : 1) == 2 ? 2 : 1;
    const int64_t threads = ceil_div(vectors, nv);
    if (threads <= 32) {
      d->kind = Kind::kRows;
      d->group = static_cast<int>(ceil_pow2(threads));
      d->block = 256;
      d->variant = "rows_warp";
      return d;
    }
    if (threads <= max_block(nv)) {
      d->kind = Kind::kRows;
      d->group = 0;
      d->block = static_cast<int>(ceil_div(threads, 32) * 32);
      d->variant = "rows_block";
      plan_stream(*d, aligned_rows, vec);
      return d;
    }
    d->slots = kRowSlots;  // clusters and split rows hold 8 slots
    const int64_t threads8 = ceil_div(vectors, kRowSlots);
    for (int c = 2; c <= kMaxCluster; c *= 2) {
      if (ceil_div(threads8, c) <= max_block(kRowSlots)) {
        d->kind = Kind::kRows;
        d->group = 0;
        d->cluster = c;
        d->block = static_cast<int>(ceil_div(ceil_div(threads8, c), 32) * 32);
        d->variant = "rows_cluster" + std::to_string(c);
        return d;
      }
    }
    if (d->nrows <= sms && current_device_info().cc_major >= 9 && tuned("SOFTMAX_RESIDENT", 1) == 1) {
      plan_resident(*d, vec);
      return d;
    }
    d->kind = Kind::kSplit;
    d->variant = "rows_split";
    // A resident grid; every block takes about the same share of tasks.
    d->split_unroll = tuned("SOFTMAX_SPLIT_UNROLL", 4) == 8 ? 8 : 4;
    dispatch_dtype(d->dtype, [&](auto type) {
      dispatch_index(d->nrows, [&](auto index) {
        d->grid = d->split_unroll == 8
                      ? resident_grid(softmax_split_kernel<decltype(type), decltype(index), 8>, kSplitThreads, 8)
                      : resident_grid(softmax_split_kernel<decltype(type), decltype(index), 4>, kSplitThreads, 8);
      });
    });
    // One task per block when the rows are few, else about 8 (the last
    // block's extra task then costs at most 1/8 more time); a task is at
    // least one round of loads of the whole block.
    const int64_t per_block = d->nrows <= d->grid ? 1 : 8;
    plan_chunks(*d, per_block * d->grid, int64_t{kSplitThreads} * vec * 4, vec);
    return d;
  }
  // columns: the rows layout's innermost dim are the columns (strided if not contiguous).
  d->kind = Kind::kColumns;
  const StridedLayout<2>& r = p.rows;
  d->columns = r.ndim ? r.inner_size() : 1;
  d->out_col_stride = r.ndim ? r.inner_stride(0) : 1;
  d->src_col_stride = r.ndim ? r.inner_stride(1) : 1;
  d->variant = d->src_col_stride == 1 ? "columns" : "strided";
  d->rows = outer_dims(r);
  d->planes = d->rows.numel();
  const int64_t col_vectors = ceil_div(d->columns, vec);
  d->tx = static_cast<int>(std::min<int64_t>(32, ceil_pow2(col_vectors)));
  d->ty = kColumnsThreads / d->tx;
  d->col_tiles = ceil_div(d->columns, int64_t{d->tx} * vec);
  const int64_t tiles = d->planes * d->col_tiles;
  const int64_t want = ceil_div(sms * 8 * 2, tiles);
  d->splits = std::clamp<int64_t>(want, 1, std::max<int64_t>(1, d->length / (int64_t{d->ty} * 8)));
  d->chunk = ceil_div(d->length, d->splits);
  d->splits = ceil_div(d->length, d->chunk);
  d->workspace_bytes = static_cast<size_t>(tiles * d->splits * d->tx * vec) * sizeof(Stats);
  if (d->splits > 1) d->variant += "_split";
  return d;
}

// ---- launch --------------------------------------------------------------------------
template <class T, int G, int NV, class Index, int MB = 1>
void launch_rows_group(const SoftmaxNvidia& d, T* out, const T* src, cudaStream_t stream) {
  const int groups = G ? d.block / G : 1;
  const unsigned grid = grid_for(ceil_div(d.nrows, groups), std::max(1, 2048 / d.block), d.waves);
  softmax_rows_kernel<T, G, NV, 1, Index, MB><<<grid, d.block, 0, stream>>>(
      out, src, OffsetCalc<2, Index>(d.rows), d.nrows, d.length, d.out_stride, d.shift);
  check_launch("softmax_rows_kernel");
}

template <class T, class Index>
void launch_rows_stream(const SoftmaxNvidia& d, T* out, const T* src, cudaStream_t stream) {
  visit_block_shape<T>(d, [&](auto nv, auto mb) {
    constexpr auto kernel = softmax_stream_kernel<T, nv.value, Index, mb.value>;
    const size_t smem = stream_smem_bytes(d);
    if (opt_in_dynamic_smem<kernel>() < smem)  // on this device (the descriptor may be another's)
      fail(OPRT_STATUS_INTERNAL_ERROR, "softmax rows_stream: %zu bytes of shared memory do not fit", smem);
    kernel<<<d.grid, d.block, smem, stream>>>(out, src, OffsetCalc<2, Index>(d.rows), d.nrows, d.length, d.out_stride,
                                              d.stream_buffers);
    check_launch("softmax_stream_kernel");
  });
}

template <class T, int NV, class Index>
void launch_rows_slots(const SoftmaxNvidia& d, T* out, const T* src, cudaStream_t stream) {
  switch (d.group) {
    case 1: return launch_rows_group<T, 1, NV, Index>(d, out, src, stream);
    case 2: return launch_rows_group<T, 2, NV, Index>(d, out, src, stream);
    case 4: return launch_rows_group<T, 4, NV, Index>(d, out, src, stream);
    case 8: return launch_rows_group<T, 8, NV, Index>(d, out, src, stream);
    case 16: return launch_rows_group<T, 16, NV, Index>(d, out, src, stream);
    case 32: return launch_rows_group<T, 32, NV, Index>(d, out, src, stream);
    default:  // a whole block per row: planned with 4 or 8 slots only
      if constexpr (NV > 2) {
        if constexpr (max_row_block<T, NV>() == 512) {
          if (d.min_blocks == 2) return launch_rows_group<T, 0, NV, Index, 2>(d, out, src, stream);
        }
        return launch_rows_group<T, 0, NV, Index>(d, out, src, stream);
      } else {
        fail(OPRT_STATUS_INTERNAL_ERROR, "softmax rows: a block per row with %d slots per thread", NV);
      }
  }
}

template <class T, int C, class Index>
void launch_rows_cluster(const SoftmaxNvidia& d, T* out, const T* src, cudaStream_t stream) {
  constexpr int NV = kRowSlots;
  const int64_t clusters = std::max<int64_t>(1, grid_for(d.nrows * C, std::max(1, 2048 / d.block), 2) / C);
  launch_with(cluster_attribute(C), softmax_rows_kernel<T, 0, NV, C, Index>, static_cast<unsigned>(clusters * C),
              d.block, 0, stream, out, src, OffsetCalc<2, Index>(d.rows), d.nrows, d.length, d.out_stride, d.shift);
}

void launch_combine(Stats* partials, int64_t groups, int64_t splits, int64_t width, cudaStream_t stream) {
  if (splits == 1) return;  // a single split is already final
  combine_stats_kernel<<<grid_for(ceil_div(groups * width, 8), 8, 2), 256, 0, stream>>>(partials, groups, splits,
                                                                                      width);
  check_launch("combine_stats_kernel");
}

template <class T, class Index>
void launch(const SoftmaxNvidia& d, void* workspace, T* out, const T* src, cudaStream_t stream) {
  if (d.kind == Kind::kRows) {
    switch (d.cluster) {
      case 2: return launch_rows_cluster<T, 2, Index>(d, out, src, stream);
      case 4: return launch_rows_cluster<T, 4, Index>(d, out, src, stream);
      case 8: return launch_rows_cluster<T, 8, Index>(d, out, src, stream);
      default: break;
    }
    // rows_stream bulk-copies rows, which must start 16-byte aligned; else rows_block.
    if (d.stream && (reinterpret_cast<uintptr_t>(src) & 15) == 0) return launch_rows_stream<T, Index>(d, out, src, stream);
    switch (d.slots) {
      case 2: return launch_rows_slots<T, 2, Index>(d, out, src, stream);
      case 4: return launch_rows_slots<T, 4, Index>(d, out, src, stream);
      default: return launch_rows_slots<T, 8, Index>(d, out, src, stream);
    }
  }
  if (d.kind == Kind::kSplit || d.kind == Kind::kResident) {
    const SplitArgs args{d.nrows, d.length, d.out_stride, d.splits, d.chunk, static_cast<Stats*>(workspace)};
    if (d.kind == Kind::kResident) {
      const size_t bytes = resident_cache_bytes<T, Index>();  // on this device (the descriptor may be another's)
      return launch_with(cooperative_attribute(), softmax_resident_kernel<T, Index>, d.grid, kResidentThreads,
                         bytes, stream, out, src, OffsetCalc<2, Index>(d.rows), args,
                         std::min<int64_t>(d.cache_vectors, static_cast<int64_t>(bytes / 16)), d.ahead);
    }
    if (d.split_unroll == 8)
      return launch_with(cooperative_attribute(), softmax_split_kernel<T, Index, 8>, d.grid, kSplitThreads, 0,
                         stream, out, src, OffsetCalc<2, Index>(d.rows), args);
    return launch_with(cooperative_attribute(), softmax_split_kernel<T, Index, 4>, d.grid, kSplitThreads, 0, stream,
                       out, src, OffsetCalc<2, Index>(d.rows), args);
  }
  ColumnsArgs args{d.columns, d.col_tiles, d.planes, d.length, d.splits, d.chunk,
                   d.src_col_stride, d.out_col_stride, d.src_stride, d.out_stride, static_cast<Stats*>(workspace)};
  const unsigned grid = grid_for(d.planes * d.col_tiles * d.splits, 8, 2);
  const dim3 block(d.tx, d.ty);
  softmax_columns_stats_kernel<T, Index><<<grid, block, 0, stream>>>(src, OffsetCalc<2, Index>(d.rows), args);
  check_launch("softmax_columns_stats_kernel");
  launch_combine(args.partials, d.planes * d.col_tiles, d.splits, int64_t{d.tx} * kVec16<T>, stream);
  softmax_columns_write_kernel<T, Index><<<grid, block, 0, stream>>>(out, src, OffsetCalc<2, Index>(d.rows), args);
  check_launch("softmax_columns_write_kernel");
}

void execute(const SoftmaxNvidia& d, void* workspace, void* out, const void* src, cudaStream_t stream) {
  const int64_t numel = d.nrows * d.length;
  require_data(out, "out", numel);
  require_data(src, "src", numel);
  if (d.kind == Kind::kEmpty) return;
  StreamDeviceGuard device(stream);
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    dispatch_index(std::max(d.nrows, d.planes), [&](auto index) {
      launch<T, decltype(index)>(d, workspace, static_cast<T*>(out), static_cast<const T*>(src), stream);
    });
  });
}

}  // namespace
}  // namespace oprt::nvidia

using oprt::nvidia::SoftmaxNvidia;

extern "C" {

oprt_status_t oprt_create_softmax_descriptor_nvidia(oprt_descriptor_t* desc, const oprt_tensor_view_t* out,
                                                    const oprt_tensor_view_t* src, int32_t dim) {
  return oprt::create_descriptor<SoftmaxNvidia>(__func__, desc, [&] { return oprt::nvidia::create(out, src, dim); });
}

oprt_status_t oprt_get_softmax_workspace_size_nvidia(oprt_descriptor_t desc, size_t* workspace_bytes) {
  return oprt::get_workspace_size<SoftmaxNvidia>(__func__, desc, workspace_bytes);
}

oprt_status_t oprt_execute_softmax_nvidia(oprt_descriptor_t desc, void* workspace, size_t workspace_bytes, void* out,
                                          const void* src, void* stream) {
  return oprt::execute_descriptor<SoftmaxNvidia>(
      __func__, desc, workspace, workspace_bytes, [&](const SoftmaxNvidia& d) {
        oprt::nvidia::execute(d, workspace, out, src, static_cast<cudaStream_t>(stream));
      });
}

oprt_status_t oprt_destroy_softmax_descriptor_nvidia(oprt_descriptor_t desc) {
  return oprt::destroy_descriptor<SoftmaxNvidia>(__func__, desc);
}

}  // extern "C"
