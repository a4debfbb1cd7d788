// Softmax-family rows too long for a cluster's registers, read twice: cut
// into chunks over a cooperative grid (rows_split, rows_resident) or two
// launches (rows_split2), or a block per row (rows_twice).
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_LONG_ROWS_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_LONG_ROWS_CUH_

#include "../bulk_copy.cuh"
#include "../launch.cuh"
#include "../offset_calc.cuh"
#include "math.cuh"

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

// The first element of p's range [c0, c1) on a 16-byte boundary (c1 if none).
template <class T>
__device__ __forceinline__ int64_t first_aligned(const T* p, int64_t c0, int64_t c1) {
  return c0 + min(c1 - c0, elements_to_alignment(p + c0));
}

// Visits row elements [c0, c1) of p: the aligned vectors a round at a time
// (U per thread, all loaded before round(raw, ok, at) sees them: vector u is
// there when ok[u], at element at[u]) and the scalar ends one by one;
// kReverse walks the rounds last to first; kEvictFirst loads the vectors
// under `policy` (l2_evict_first_policy). kBlock is blockDim.x: known at
// compile time, a round's U loads are one address plus constant offsets,
// and every round but the last is whole, so it runs without per-vector
// bounds tests.
template <bool kReverse, int U, int kBlock, bool kEvictFirst = false, class T, class Round, class Scalar>
__device__ __forceinline__ void visit_chunk(const T* p, int64_t c0, int64_t c1, Round&& round, Scalar&& scalar,
                                            uint64_t policy = 0) {
  constexpr int VEC = kVec16<T>;
  const int64_t a = first_aligned(p, c0, c1), vectors = (c1 - a) / VEC, tail = a + vectors * VEC;
  // (at most one element a thread: not unrolled, which only grew the code)
#pragma unroll 1
  for (int64_t i = c0 + threadIdx.x; i < a; i += kBlock) scalar(i);
#pragma unroll 1
  for (int64_t i = tail + threadIdx.x; i < c1; i += kBlock) scalar(i);
  constexpr int64_t step = int64_t{kBlock} * U;
  const int64_t rounds = ceil_div(vectors, step), whole = vectors / step;
  const auto load = [&](const T* at) { return kEvictFirst ? load_raw_evict_first(at, policy) : load_raw(at); };
  for (int64_t k = 0; k < rounds; ++k) {
    const int64_t kk = kReverse ? rounds - 1 - k : k;
    const int64_t v = kk * step + threadIdx.x;
    Raw16 raw[U];
    int64_t at[U];
#pragma unroll
    for (int u = 0; u < U; ++u) at[u] = a + (v + int64_t{u} * kBlock) * VEC;
    if (kk < whole) {
      bool ok[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        ok[u] = true;
        raw[u] = load(p + at[u]);
      }
      round(raw, ok, at);
    } else {
      bool ok[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        ok[u] = v + int64_t{u} * kBlock < vectors;
        if (ok[u]) raw[u] = load(p + at[u]);
      }
      round(raw, ok, at);
    }
  }
}

// Writes the outputs of the vector `raw` of row elements i.. of q: one
// 16-byte store where `whole` (out_stride 1 and q + i 16-byte aligned: the
// same for every vector of a chunk, see stores_whole), else element by
// element (kEvictFirst: vectors stored under `policy`).
template <class E, class T, bool kEvictFirst = false>
__device__ __forceinline__ void write_out(T* q, int64_t i, const Raw16& raw, const RowOf<E>& k, int64_t out_stride,
                                          bool whole, uint64_t policy = 0) {
  constexpr int VEC = kVec16<T>;
  float x[VEC];
  raw_to_floats_widened<T>(raw, x);
#pragma unroll
  for (int e = 0; e < VEC; ++e) x[e] = E::out(k, x[e]);
  if (whole) {
    if constexpr (kEvictFirst) {
      Vec<T, VEC> v;
      floats_to_vec(x, v);
      store_raw_evict_first(q + i, to_raw(v), policy);
    } else {
      store_floats<VEC>(q + i, x);
    }
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) q[(i + e) * out_stride] = from_float<T>(x[e]);
  }
}

// Whether a chunk's vectors, which start at element a (on a 16-byte
// boundary of src), go to q as 16-byte stores: q contiguous, q + a aligned.
template <class T>
__device__ __forceinline__ bool stores_whole(const T* q, int64_t a, int64_t out_stride) {
  return out_stride == 1 && aligned16(q + a);
}

// The passes over one (row, chunk) task, shared by the split kernels.
// chunk_stats: the block's (max, sum) over row elements [c0, c1) of p.
template <class T, int U, int kBlock>
__device__ __forceinline__ Stats chunk_stats(const T* p, int64_t c0, int64_t c1, Stats* slots) {
  LongStats st;
  visit_chunk<false, U, kBlock>(
      p, c0, c1,
      [&](const Raw16 (&raw)[U], const bool (&ok)[U], const int64_t (&)[U]) { update_round<T>(st, raw, ok); },
      [&](int64_t i) {
        const float x[1] = {to_float(p[i])};
        update(st, x);
      });
  return block_merge(st.value(), slots);
}

// A row's `splits` partials merged in a fixed order (every block of the row
// gets bitwise the same result), as the epilogue's row constants.
template <class E>
__device__ __forceinline__ RowOf<E> row_constants(const Stats* part, int64_t splits, Stats* slots) {
  LongStats st;
  for (int64_t j = threadIdx.x; j < splits; j += blockDim.x) st.merge(part[j]);
  return E::row(block_merge(st.value(), slots));
}

// q[i] = out(p[i]) over [c0, c1), walked last round first: it starts on
// what the stats pass read last, the likeliest part still in L2.
// kEvictFirst: the vectors loaded and stored marked first to leave L2.
template <class E, class T, int U, int kBlock, bool kEvictFirst = false>
__device__ __forceinline__ void write_chunk(T* q, const T* p, int64_t c0, int64_t c1, const RowOf<E>& k,
                                            int64_t out_stride) {
  const uint64_t policy = kEvictFirst ? l2_evict_first_policy() : 0;
  const bool whole = stores_whole(q, first_aligned(p, c0, c1), out_stride);
  visit_chunk<true, U, kBlock, kEvictFirst>(
      p, c0, c1,
      [&](const Raw16 (&raw)[U], const bool (&ok)[U], const int64_t (&at)[U]) {
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (ok[u]) write_out<E, T, kEvictFirst>(q, at[u], raw[u], k, out_stride, whole, policy);
      },
      [&](int64_t i) { q[i * out_stride] = from_float<T>(E::out(k, to_float(p[i]))); }, policy);
}

// Where task t's chunk lies: its row, the row's offsets in out and src, and
// its elements [c0, c1) of the row.
template <class Index>
struct ChunkOf {
  int64_t row, out_at, src_at, c0, c1;
  __device__ ChunkOf(const OffsetCalc<2, Index>& rows, const SplitArgs& args, int64_t task) {
    row = task / args.splits;
    const int64_t split = task - row * args.splits;
    int64_t offsets[2];
    rows.get(static_cast<Index>(row), offsets);
    out_at = offsets[0];
    src_at = offsets[1];
    c0 = split * args.chunk;
    c1 = min(args.length, c0 + args.chunk);
  }
};

// rows_split: one cooperative kernel (all blocks resident); block b owns a
// contiguous range of (row, split) tasks. Pass 1 writes each task's (max,
// sum) to the workspace; after a grid-wide barrier, pass 2 walks the same
// tasks in reverse, merges its row's stats (once per row it meets) and
// writes. One launch where a stats kernel, a combine kernel and a write
// kernel would leave the GPU idle between them.
constexpr int kSplitThreads = 256;
// Vectors in flight per thread: 4, at 3 blocks per SM (80 registers; at 4
// blocks, 64 registers, the float16 kernel spilled).
constexpr int kSplitUnroll = 4;
constexpr int kSplitMinBlocks = 3;

template <class E, class T, class Index>
__global__ void __launch_bounds__(kSplitThreads, kSplitMinBlocks)
softmax_split_kernel(T* out, const T* src, OffsetCalc<2, Index> rows, SplitArgs args) {
  __shared__ Stats slots[kMaxWarps];
  const int64_t tasks = args.nrows * args.splits;
  const int64_t t0 = tasks * blockIdx.x / gridDim.x, t1 = tasks * (blockIdx.x + 1) / gridDim.x;
  for (int64_t task = t0; task < t1; ++task) {
    const ChunkOf<Index> c(rows, args, task);
    const Stats st = chunk_stats<T, kSplitUnroll, kSplitThreads>(src + c.src_at, c.c0, c.c1, slots);
    if (threadIdx.x == 0) args.partials[task] = st;
  }
  cg::this_grid().sync();
  int64_t merged_row = -1;
  RowOf<E> k{};
  for (int64_t task = t1 - 1; task >= t0; --task) {
    const ChunkOf<Index> c(rows, args, task);
    if (c.row != merged_row) {  // the same for the whole block: block_merge may sync
      k = row_constants<E>(args.partials + c.row * args.splits, args.splits, slots);
      merged_row = c.row;
    }
    write_chunk<E, T, kSplitUnroll, kSplitThreads>(out + c.out_at, src + c.src_at, c.c0, c.c1, k, args.out_stride);
  }
}

// rows_split2: the same passes as two launches of a block per task, no grid
// barrier: the hardware hands out the tasks, so blocks that finish early
// take more (the cooperative kernel's blocks wait for the slowest at the
// barrier). The stats kernel lets the apply kernel launch early (launch.cuh)
// and the apply kernel takes the tasks last to first, so its first blocks
// re-read what the stats kernel read last.
template <class T, class Index>
__global__ void __launch_bounds__(kSplitThreads, kSplitMinBlocks)
softmax_split_stats_kernel(const T* src, OffsetCalc<2, Index> rows, SplitArgs args) {
  __shared__ Stats slots[kMaxWarps];
  allow_early_launch();
  const int64_t tasks = args.nrows * args.splits;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const ChunkOf<Index> c(rows, args, task);
    const Stats st = chunk_stats<T, kSplitUnroll, kSplitThreads>(src + c.src_at, c.c0, c.c1, slots);
    if (threadIdx.x == 0) args.partials[task] = st;
  }
}

template <class E, class T, class Index>
__global__ void __launch_bounds__(kSplitThreads, kSplitMinBlocks)
softmax_split_apply_kernel(T* out, const T* src, OffsetCalc<2, Index> rows, SplitArgs args) {
  __shared__ Stats slots[kMaxWarps];
  wait_for_prior_grid();
  const int64_t tasks = args.nrows * args.splits;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    const ChunkOf<Index> c(rows, args, tasks - 1 - t);
    write_chunk<E, T, kSplitUnroll, kSplitThreads>(out + c.out_at, src + c.src_at, c.c0, c.c1,
                                                    row_constants<E>(args.partials + c.row * args.splits,
                                                                     args.splits, slots),
                                                    args.out_stride);
  }
}

// rows_twice: a block per row takes the row's (max, sum), then writes the
// row backwards, starting on what L2 still holds of it; no workspace, no
// second launch. The write pass's loads and stores are marked first to
// leave L2, so they push out less of the rows other blocks will read again.
// 512 threads with 4 vectors each in flight, or 1024 for rows of many
// rounds; at most 64 registers, so 1024 threads' worth of blocks are
// resident per SM. The planned grid holds two resident grids
// (OPRT_TUNE_SOFTMAX_TWICE_BLOCKS: 1 to 4 blocks per SM), so a block that
// finishes early is replaced by a fresh one.
constexpr int kTwiceThreads = 512;
constexpr int twice_resident_blocks(int threads) { return 1024 / threads; }

// kCache: the first `cache_vectors` aligned vectors of each row stay in
// shared memory between the passes (the stats pass stores them as it
// goes), so the second pass reads only the rest again: its end first, the
// part L2 most likely still holds. (It always saves DRAM reads, not always
// time: the kernel is not DRAM-bound; see the plan.)
template <class E, class T, class Index, int kThreads, bool kCache>
__global__ void __launch_bounds__(kThreads, twice_resident_blocks(kThreads))
softmax_rows_twice_kernel(T* out, const T* src, OffsetCalc<2, Index> rows, SplitArgs args, int64_t cache_vectors) {
  constexpr int VEC = kVec16<T>;
  extern __shared__ Raw16 row_cache[];  // cache_vectors
  __shared__ Stats slots[kMaxWarps];
  for (int64_t row = blockIdx.x; row < args.nrows; row += gridDim.x) {
    const ChunkOf<Index> c(rows, args, row);  // (args.splits == 1)
    if constexpr (!kCache) {
      const RowOf<E> k = E::row(chunk_stats<T, 4, kThreads>(src + c.src_at, c.c0, c.c1, slots));
      write_chunk<E, T, 4, kThreads, true>(out + c.out_at, src + c.src_at, c.c0, c.c1, k, args.out_stride);
      continue;
    }
    const T* p = src + c.src_at;
    T* q = out + c.out_at;
    const int64_t a = first_aligned(p, c.c0, c.c1);
    const int64_t cached = min((c.c1 - a) / VEC, cache_vectors);
    LongStats st;
    visit_chunk<false, 4, kThreads>(
        p, c.c0, c.c1,
        [&](const Raw16 (&raw)[4], const bool (&ok)[4], const int64_t (&at)[4]) {
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int64_t v = (at[u] - a) / VEC;
            if (ok[u] && v < cached) row_cache[v] = raw[u];
          }
          update_round<T>(st, raw, ok);
        },
        [&](int64_t i) {
          const float x[1] = {to_float(p[i])};
          update(st, x);
        });
    const RowOf<E> k = E::row(block_merge(st.value(), slots));  // (its barriers also publish the cache)
    const int64_t rest = cached > 0 ? a + cached * VEC : c.c0;  // read again from here on
    write_chunk<E, T, 4, kThreads, true>(q, p, rest, c.c1, k, args.out_stride);
    if (cached > 0) {
      for (int64_t i = c.c0 + threadIdx.x; i < a; i += kThreads)
        q[i * args.out_stride] = from_float<T>(E::out(k, to_float(p[i])));
      const bool whole = stores_whole(q, a, args.out_stride);
#pragma unroll 4
      for (int64_t v = threadIdx.x; v < cached; v += kThreads)
        write_out<E, T>(q, a + v * VEC, row_cache[v], k, args.out_stride, whole);
    }
    __syncthreads();  // the cache is the next row's
  }
}

// ---- few long rows, held in shared memory ------------------------------------------
// The write pass over a chunk [c0, c1) of row p whose `cached` vectors from
// element a on (a: first_aligned) are held in shared memory: the scalar
// head [c0, a) and the rest [rest, c1) read again from p (last round
// first: the likeliest part still in L2), then the held vectors, each
// written as out(x) into q (kThreads threads; the loads and stores marked
// first to leave L2).
template <class E, class T, int U, int kThreads>
__device__ __forceinline__ void write_held_chunk(T* q, const T* p, int64_t c0, int64_t a, int64_t rest, int64_t c1,
                                                 const Raw16* held, int64_t cached, const RowOf<E>& k,
                                                 int64_t out_stride) {
  constexpr int VEC = kVec16<T>;
  const auto write_scalar = [&](int64_t i) { q[i * out_stride] = from_float<T>(E::out(k, to_float(p[i]))); };
  for (int64_t i = c0 + threadIdx.x; i < a; i += blockDim.x) write_scalar(i);
  const uint64_t policy = l2_evict_first_policy();
  const bool whole = stores_whole(q, a, out_stride);
  visit_chunk<true, U, kThreads, true>(
      p, rest, c1,
      [&](const Raw16 (&raw)[U], const bool (&ok)[U], const int64_t (&at)[U]) {
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (ok[u]) write_out<E, T, true>(q, at[u], raw[u], k, out_stride, whole, policy);
      },
      write_scalar, policy);
#pragma unroll 4
  for (int64_t v = threadIdx.x; v < cached; v += kThreads)
    write_out<E, T, true>(q, a + v * VEC, held[v], k, out_stride, whole, policy);
}

// No more (row, split) tasks than SMs: a cooperative grid of one 512-thread
// block per SM, one task per block. The chunk's first vectors, up to ~224
// KB, come into shared memory by asynchronous copies, with no registers
// held: kBulk, one thread's bulk copies (TMA; `ahead` of them in flight, so
// they land in order) while the threads read the rest of the chunk with
// ordinary loads, then take (max, sum) over the copies as they land; else
// each thread's own 16-byte copies, `ahead` rounds in flight, refilled as
// they are read, and the rest after them (see plan_resident). After the
// grid barrier the rest is read again (first, while L2 still holds it) and
// the shared copy is scaled and written: src leaves DRAM once wherever the
// chunk fits in shared memory, where rows_split reads it twice (the second
// time from L2 when it fits).
constexpr int kResidentThreads = 512;
constexpr int kResidentUnroll = 4;
constexpr int kPieceVectors = kResidentThreads * kResidentUnroll;  // a bulk copy or a round: 32 KB
constexpr int kMaxPieces = 8;                                      // 256 KB: more than any SM holds

template <class E, class T, class Index, bool kBulk>
__global__ void __launch_bounds__(kResidentThreads, 1)
softmax_resident_kernel(T* out, const T* src, OffsetCalc<2, Index> rows, SplitArgs args, int64_t cache_vectors,
                        int ahead) {
#if __CUDA_ARCH__ >= 900
  constexpr int VEC = kVec16<T>, U = kResidentUnroll;
  extern __shared__ Raw16 cache[];
  __shared__ uint64_t landed[kMaxPieces];  // kBulk: one mbarrier per bulk copy
  __shared__ Stats slots[kMaxWarps];
  const int64_t task = blockIdx.x;
  const bool active = task < args.nrows * args.splits;
  const int64_t row = active ? task / args.splits : 0, split = task - row * args.splits;
  int64_t offsets[2] = {0, 0};
  if (active) rows.get(static_cast<Index>(row), offsets);
  const T* p = src + offsets[1];
  T* q = out + offsets[0];
  const int64_t c0 = active ? split * args.chunk : 0, c1 = active ? min(args.length, c0 + args.chunk) : 0;
  const int64_t a = first_aligned(p, c0, c1);
  const int64_t cached = min((c1 - a) / VEC, cache_vectors);           // vectors from a on, in `cache`
  const int64_t rest = a + cached * VEC;                               // read from global memory
  const int pieces = static_cast<int>(ceil_div(cached, kPieceVectors));
  LongStats st;
  const auto stats_scalar = [&](int64_t i) {
    const float x[1] = {to_float(p[i])};
    update(st, x);
  };
  const auto stats_rest = [&] {
    visit_chunk<false, U, kResidentThreads>(
        p, rest, c1,
        [&](const Raw16 (&raw)[U], const bool (&ok)[U], const int64_t (&)[U]) { update_round<T>(st, raw, ok); },
        stats_scalar);
  };
  if constexpr (kBulk) {
    // Thread 0 keeps `ahead` pieces in flight: piece k lands before the later
    // ones compete for bandwidth, so the stats of k overlap their loads. Each
    // piece has its own shared memory and barrier (nothing is reused).
    const auto issue = [&](int k) {
      const int64_t v0 = int64_t{k} * kPieceVectors;
      const uint32_t bytes = static_cast<uint32_t>(min(int64_t{kPieceVectors}, cached - v0) * sizeof(Raw16));
      bulk_copy_to_shared(cache + v0, p + a + v0 * VEC, bytes, &landed[k]);
    };
    if (threadIdx.x == 0) {
      init_landed(landed, pieces);
      for (int k = 0; k < min(pieces, ahead); ++k) issue(k);
    }
    __syncthreads();  // no thread waits on a barrier before it is initialized
    for (int64_t i = c0 + threadIdx.x; i < a; i += blockDim.x) stats_scalar(i);
    stats_rest();
    for (int k = 0; k < pieces; ++k) {
      wait_landed(&landed[k], 0);
      if (threadIdx.x == 0 && k + ahead < pieces) issue(k + ahead);
      update_from_shared<T, U, kResidentThreads>(st, cache, int64_t{k} * kPieceVectors, cached);
    }
  } else {
    // Each thread copies its own vectors of the cache (those it reads in
    // update_from_shared and in the write pass: no block barrier), a round
    // of U at a time, `ahead` rounds in flight; a commit group per round,
    // empty past the last, so `ahead - 1` groups pending means round k is in.
    const auto issue = [&](int k) {
      if (k < pieces) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int64_t v = int64_t{k} * kPieceVectors + u * kResidentThreads + threadIdx.x;
          if (v < cached) copy16_to_shared_async(cache + v, p + a + v * VEC);
        }
      }
      commit_async_copies();
    };
    for (int k = 0; k < ahead; ++k) issue(k);
    for (int64_t i = c0 + threadIdx.x; i < a; i += blockDim.x) stats_scalar(i);
    for (int k = 0; k < pieces; ++k) {
      wait_async_copies_pending(ahead - 1);
      update_from_shared<T, U, kResidentThreads>(st, cache, int64_t{k} * kPieceVectors, cached);
      issue(k + ahead);
    }
    stats_rest();  // last: the write pass reads it again first, while L2 holds it
  }
  const Stats chunk = block_merge(st.value(), slots);
  if (active && threadIdx.x == 0) args.partials[task] = chunk;
  cg::this_grid().sync();
  if (!active) return;
  const RowOf<E> k = row_constants<E>(args.partials + row * args.splits, args.splits, slots);
  write_held_chunk<E, T, U, kResidentThreads>(q, p, c0, a, rest, c1, cache, cached, k, args.out_stride);
#else
  __trap();  // planned only on sm_90 and newer
#endif
}

}  // namespace
}  // namespace oprt::nvidia

#endif
