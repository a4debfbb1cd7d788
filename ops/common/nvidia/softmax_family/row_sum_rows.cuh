// The kernels of the softmax family's two-input layer over contiguous rows
// (rows_warp, rows_block / rows_held, rows_split) and the element sum the strided
// kernels share; the layer, its variants and their plan: row_sum.cuh.
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROW_SUM_ROWS_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROW_SUM_ROWS_CUH_

#include <type_traits>

#include "../cuda_types.cuh"
#include "../group_reduce.cuh"
#include "../launch.cuh"
#include "../long_sum.cuh"
#include "../offset_calc.cuh"
#include "long_rows.cuh"

namespace oprt::nvidia {
namespace {

constexpr int kSumChunk = 32;

// ---- kernels -------------------------------------------------------------------------
// Whether E's term reads b (E::kTermReadsB, true where E does not say).
template <class E, class = void>
struct TermReadsB : std::true_type {};
template <class E>
struct TermReadsB<E, std::void_t<decltype(E::kTermReadsB)>> : std::bool_constant<E::kTermReadsB> {};

// Sum of E::term over elements first, first + step, ... < n of a and b
// (element strides sa, sb): kTermBatch elements' loads issued before
// their terms, kSumChunk terms added in a plain float, the chunks
// compensated.
constexpr int kTermBatch = 4;

template <class E, class T>
__device__ __forceinline__ float row_term_sum(const T* a, int64_t sa, const T* b, int64_t sb, int64_t first,
                                              int64_t step, int64_t n) {
  constexpr bool kB = TermReadsB<E>::value;
  LongSum total;
  int64_t i = first;
  while (i + (kTermBatch - 1) * step < n) {
    float part = 0.0f;
    for (int r = 0; r < kSumChunk / kTermBatch && i + (kTermBatch - 1) * step < n; ++r, i += kTermBatch * step) {
      float x[kTermBatch], y[kTermBatch] = {};
#pragma unroll
      for (int u = 0; u < kTermBatch; ++u) {
        x[u] = to_float(a[(i + u * step) * sa]);
        if (kB) y[u] = to_float(b[(i + u * step) * sb]);
      }
#pragma unroll
      for (int u = 0; u < kTermBatch; ++u) part += E::term(x[u], y[u]);
    }
    total.add(part);
  }
  float part = 0.0f;  // fewer than kTermBatch left
  for (; i < n; i += step) part += E::term(to_float(a[i * sa]), kB ? to_float(b[i * sb]) : 0.0f);
  total.add(part);
  return total.value();
}

constexpr int kRowSumUnroll = 4;          // 16-byte vectors of each input in flight per thread
constexpr int kRowSumSplitThreads = 256;  // rows_split blocks
constexpr int kRowSumSplitMinBlocks = 4;  // resident per SM: at most 64 registers

// Whether row elements from c0 on of a and b take 16-byte loads together:
// both start equally far from a 16-byte boundary.
template <class T>
__device__ __forceinline__ bool vectors_match(const T* pa, const T* pb, int64_t c0) {
  return misalignment16(pa + c0) == misalignment16(pb + c0);
}

// sum += E::term over the elements of a's and b's 16-byte vectors, in
// element order (b's vector unread where E's term ignores b).
template <class E, class T>
__device__ __forceinline__ void add_vector_terms(float& sum, const Raw16& ra, const Raw16& rb) {
  constexpr int VEC = kVec16<T>;
  float x[VEC], y[VEC] = {};
  raw_to_floats_widened<T>(ra, x);
  if (TermReadsB<E>::value) raw_to_floats_widened<T>(rb, y);
#pragma unroll
  for (int e = 0; e < VEC; ++e) sum += E::term(x[e], y[e]);
}

// q[0 .. VEC) = E::out over a's and b's 16-byte vectors: one 16-byte store
// where `whole` (q aligned), else element stores.
template <class E, class T>
__device__ __forceinline__ void store_vector_outs(T* q, const Raw16& ra, const Raw16& rb, float s, bool whole) {
  constexpr int VEC = kVec16<T>;
  float x[VEC], y[VEC];
  raw_to_floats_widened<T>(ra, x);
  raw_to_floats_widened<T>(rb, y);
#pragma unroll
  for (int e = 0; e < VEC; ++e) x[e] = E::out(x[e], y[e], s);
  if (whole) {
    store_floats<VEC>(q, x);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) q[e] = from_float<T>(x[e]);
  }
}

// b's vectors at the elements of a round's loaded vectors of a (visit_chunk).
template <int U, class T>
__device__ __forceinline__ void load_partners(Raw16 (&rb)[U], const T* pb, const bool (&ok)[U],
                                              const int64_t (&at)[U]) {
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (ok[u]) rb[u] = load_raw(pb + at[u]);
}

// This thread's share (of kBlock threads) of the sum of E::term over row
// elements [c0, c1) of pa and pb (contiguous): a round of vectors at a
// time, each round's terms added in a plain float, the rounds compensated.
template <class E, class T, int kBlock>
__device__ __forceinline__ float chunk_term_sum(const T* pa, const T* pb, int64_t c0, int64_t c1) {
  constexpr int U = kRowSumUnroll;
  constexpr bool kB = TermReadsB<E>::value;
  if (kB && !vectors_match(pa, pb, c0)) return row_term_sum<E>(pa, 1, pb, 1, c0 + threadIdx.x, kBlock, c1);
  LongSum total;
  visit_chunk<false, U, kBlock>(
      pa, c0, c1,
      [&](const Raw16 (&ra)[U], const bool (&ok)[U], const int64_t (&at)[U]) {
        Raw16 rb[U];
        if constexpr (kB) load_partners(rb, pb, ok, at);
        float part = 0.0f;
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (ok[u]) add_vector_terms<E, T>(part, ra[u], rb[u]);
        total.add(part);
      },
      [&](int64_t i) { total.add(E::term(to_float(pa[i]), kB ? to_float(pb[i]) : 0.0f)); });
  return total.value();
}

// q[i] = E::out(pa[i], pb[i], s) over [c0, c1) (kBlock threads), walked
// last round first: it starts on what the sum pass read last.
template <class E, class T, int kBlock>
__device__ __forceinline__ void chunk_write(T* q, const T* pa, const T* pb, int64_t c0, int64_t c1, float s) {
  constexpr int U = kRowSumUnroll;
  const auto scalar = [&](int64_t i) { q[i] = from_float<T>(E::out(to_float(pa[i]), to_float(pb[i]), s)); };
  if (!vectors_match(pa, pb, c0)) {
    for (int64_t i = c1 - 1 - threadIdx.x; i >= c0; i -= kBlock) scalar(i);
    return;
  }
  const bool whole = stores_whole(q, first_aligned(pa, c0, c1), int64_t{1});
  visit_chunk<true, U, kBlock>(
      pa, c0, c1,
      [&](const Raw16 (&ra)[U], const bool (&ok)[U], const int64_t (&at)[U]) {
        Raw16 rb[U];
        load_partners(rb, pb, ok, at);
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (ok[u]) store_vector_outs<E, T>(q + at[u], ra[u], rb[u], s, whole);
      },
      scalar);
}

// rows_warp's passes over a row of at most 128 elements (a plain float
// sum: a few dozen terms a lane): lane's 16-byte vectors from the row's
// first aligned element on, where a and b are aligned alike, the ends (or
// the whole row) element by element.
template <class E, class T, int G>
__device__ __forceinline__ float group_term_sum(const T* pa, const T* pb, int64_t length, int lane) {
  constexpr int VEC = kVec16<T>;
  constexpr bool kB = TermReadsB<E>::value;
  const auto term = [&](int64_t i) { return E::term(to_float(pa[i]), kB ? to_float(pb[i]) : 0.0f); };
  float s = 0.0f;
  if (kB && !vectors_match(pa, pb, 0)) {
    for (int64_t i = lane; i < length; i += G) s += term(i);
    return s;
  }
  const int64_t a0 = first_aligned(pa, 0, length), nv = (length - a0) / VEC;
  for (int64_t i = lane; i < a0; i += G) s += term(i);
  for (int64_t i = a0 + nv * VEC + lane; i < length; i += G) s += term(i);
  for (int64_t v = lane; v < nv; v += G) {
    const Raw16 ra = load_raw(pa + a0 + v * VEC);
    Raw16 rb{};
    if (kB) rb = load_raw(pb + a0 + v * VEC);
    add_vector_terms<E, T>(s, ra, rb);
  }
  return s;
}

template <class E, class T, int G>
__device__ __forceinline__ void group_write(T* q, const T* pa, const T* pb, int64_t length, int lane, float s) {
  constexpr int VEC = kVec16<T>;
  const auto scalar = [&](int64_t i) { q[i] = from_float<T>(E::out(to_float(pa[i]), to_float(pb[i]), s)); };
  if (!vectors_match(pa, pb, 0)) {
    for (int64_t i = lane; i < length; i += G) scalar(i);
    return;
  }
  const int64_t a0 = first_aligned(pa, 0, length), nv = (length - a0) / VEC;
  for (int64_t i = lane; i < a0; i += G) scalar(i);
  for (int64_t i = a0 + nv * VEC + lane; i < length; i += G) scalar(i);
  const bool whole = stores_whole(q, a0, int64_t{1});
  for (int64_t v = lane; v < nv; v += G) {
    const int64_t at = a0 + v * VEC;
    store_vector_outs<E, T>(q + at, load_raw(pa + at), load_raw(pb + at), s, whole);
  }
}

// rows_warp: G threads per row (a power of two up to a warp).
template <class E, class T, int G, class Index>
__global__ void __launch_bounds__(256)
row_sum_rows_kernel(T* out, const T* a, const T* b, OffsetCalc<3, Index> rows, int64_t nrows, int64_t length) {
  const int groups = blockDim.x / G, group = threadIdx.x / G, lane = threadIdx.x % G;
  for (int64_t base = int64_t{blockIdx.x} * groups; base < nrows; base += int64_t{gridDim.x} * groups) {
    const int64_t row = base + group;
    const bool valid = row < nrows;  // every lane reaches the shuffles below
    int64_t offsets[3] = {0, 0, 0};
    if (valid) rows.get(static_cast<Index>(row), offsets);
    const T* pa = a + offsets[1];
    const T* pb = b + offsets[2];
    const float s = group_allreduce<G>(valid ? group_term_sum<E, T, G>(pa, pb, length, lane) : 0.0f, SumOp{}, nullptr);
    if (valid) group_write<E, T, G>(out + offsets[0], pa, pb, length, lane, s);
  }
}

constexpr int kRowSumHeld = 4;  // rows_held: 16-byte vectors of each input a thread holds

// rows_held's row (a and b aligned alike, at most kBlock * kRowSumHeld
// vectors): each thread loads its vectors of a and b once and keeps them in
// registers from the sum to the write; the up to 2 (VEC - 1) elements
// outside the row's vectors are one each of the first threads.
template <class E, class T, int kBlock>
__device__ __forceinline__ void held_row(T* q, const T* pa, const T* pb, int64_t length, float* slots) {
  constexpr int VEC = kVec16<T>, H = kRowSumHeld;
  const int tid = threadIdx.x;
  const int64_t a0 = first_aligned(pa, 0, length), nv = (length - a0) / VEC, tail = a0 + nv * VEC;
  const int64_t edge = tid < a0 ? tid : tid - a0 < length - tail ? tail + tid - a0 : -1;
  float ea = 0.0f, eb = 0.0f, part = 0.0f;
  if (edge >= 0) {
    ea = to_float(pa[edge]);
    eb = to_float(pb[edge]);
  }
  Raw16 ra[H], rb[H];
#pragma unroll
  for (int j = 0; j < H; ++j) {
    const int64_t at = a0 + (int64_t{j} * kBlock + tid) * VEC;
    if (at < tail) {
      ra[j] = load_raw(pa + at);
      rb[j] = load_raw(pb + at);
    }
  }
  if (edge >= 0) part = E::term(ea, eb);
#pragma unroll
  for (int j = 0; j < H; ++j)
    if (a0 + (int64_t{j} * kBlock + tid) * VEC < tail) add_vector_terms<E, T>(part, ra[j], rb[j]);
  const float s = block_allreduce(part, SumOp{}, slots);
  if (edge >= 0) q[edge] = from_float<T>(E::out(ea, eb, s));
  const bool whole = stores_whole(q, a0, int64_t{1});
#pragma unroll
  for (int j = 0; j < H; ++j) {
    const int64_t at = a0 + (int64_t{j} * kBlock + tid) * VEC;
    if (at < tail) store_vector_outs<E, T>(q + at, ra[j], rb[j], s, whole);
  }
}

// rows_block: a block of kBlock threads per row (grid-stride over rows),
// two passes over the row; rows_held (kHeld) keeps a row's inputs in
// registers instead where its a and b are aligned alike (the plan's rows
// no longer than kBlock * kRowSumHeld vectors). At most 64 registers, so
// 1024 threads' worth of blocks fit on an SM.
template <class E, class T, class Index, int kBlock, bool kHeld>
__global__ void __launch_bounds__(kBlock, 1024 / kBlock)
row_sum_block_kernel(T* out, const T* a, const T* b, OffsetCalc<3, Index> rows, int64_t nrows, int64_t length) {
  __shared__ float slots[kMaxWarps];
  for (int64_t row = blockIdx.x; row < nrows; row += gridDim.x) {
    int64_t offsets[3];
    rows.get(static_cast<Index>(row), offsets);
    const T* pa = a + offsets[1];
    const T* pb = b + offsets[2];
    if (kHeld && vectors_match(pa, pb, 0)) {
      held_row<E, T, kBlock>(out + offsets[0], pa, pb, length, slots);
      continue;
    }
    const float s = block_allreduce(chunk_term_sum<E, T, kBlock>(pa, pb, 0, length), SumOp{}, slots);
    chunk_write<E, T, kBlock>(out + offsets[0], pa, pb, 0, length, s);
  }
}

// rows_split: task t is chunk t % splits of row t / splits.
struct RowSumSplitArgs {
  int64_t nrows, length, splits, chunk;
  float* partials;  // [row][split]: each chunk's sum
};

template <class Index>
struct RowChunk {
  int64_t row, c0, c1;
  int64_t at[3];  // the row's offsets in out, a, b
  __device__ RowChunk(const OffsetCalc<3, Index>& rows, const RowSumSplitArgs& args, int64_t task) {
    row = task / args.splits;
    c0 = (task - row * args.splits) * args.chunk;
    c1 = min(args.length, c0 + args.chunk);
    rows.get(static_cast<Index>(row), at);
  }
};

// Pass 1: each chunk's sum into the workspace. Lets pass 2 launch early.
template <class E, class T, class Index>
__global__ void __launch_bounds__(kRowSumSplitThreads, kRowSumSplitMinBlocks)
row_sum_split_sum_kernel(const T* a, const T* b, OffsetCalc<3, Index> rows, RowSumSplitArgs args) {
  __shared__ float slots[kMaxWarps];
  allow_early_launch();
  const int64_t tasks = args.nrows * args.splits;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const RowChunk<Index> c(rows, args, task);
    const float part = chunk_term_sum<E, T, kRowSumSplitThreads>(a + c.at[1], b + c.at[2], c.c0, c.c1);
    const float s = block_allreduce(part, SumOp{}, slots);
    if (threadIdx.x == 0) args.partials[task] = s;
  }
}

// Pass 2: the row's chunk sums added (compensated, in a fixed order), then
// the chunk written; tasks taken last to first.
template <class E, class T, class Index>
__global__ void __launch_bounds__(kRowSumSplitThreads, kRowSumSplitMinBlocks)
row_sum_split_write_kernel(T* out, const T* a, const T* b, OffsetCalc<3, Index> rows, RowSumSplitArgs args) {
  __shared__ float slots[kMaxWarps];
  wait_for_prior_grid();
  const int64_t tasks = args.nrows * args.splits;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    const RowChunk<Index> c(rows, args, tasks - 1 - t);
    LongSum total;
    for (int64_t j = threadIdx.x; j < args.splits; j += kRowSumSplitThreads)
      total.add(args.partials[c.row * args.splits + j]);
    const float s = block_allreduce(total.value(), SumOp{}, slots);
    chunk_write<E, T, kRowSumSplitThreads>(out + c.at[0], a + c.at[1], b + c.at[2], c.c0, c.c1, s);
  }
}

}  // namespace
}  // namespace oprt::nvidia

#endif
