// Private to softmax_nvidia.cu: rows too long for a cluster's registers,
// cut into chunks over a cooperative grid (rows_split, rows_resident).
#ifndef OPRT_SOFTMAX_NVIDIA_LONG_ROWS_CUH_
#define OPRT_SOFTMAX_NVIDIA_LONG_ROWS_CUH_

#include <cuda/ptx>

#include "../../common/nvidia/offset_calc.cuh"
#include "softmax_math.cuh"

namespace oprt::nvidia {
namespace {

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

}  // namespace
}  // namespace oprt::nvidia

#endif
