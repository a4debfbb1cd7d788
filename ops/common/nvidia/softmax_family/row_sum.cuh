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
//   strided / strided_split  the columns kernels where the rows'
//            innermost dim is not contiguous in every tensor
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
#include <type_traits>

#include "../../descriptor.h"
#include "../../softmax_plan.h"
#include "../../tuning.h"
#include "../cuda_types.cuh"
#include "../group_reduce.cuh"
#include "../launch.cuh"
#include "../column_task.cuh"
#include "../long_sum.cuh"
#include "../offset_calc.cuh"
#include "long_rows.cuh"

namespace oprt::nvidia {
namespace {

constexpr int kSumChunk = 32;
constexpr int kRowSumColumnThreads = 256;  // columns blocks: TX x TY

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

// This thread's share (of kBlock threads) of the sum of E::term over row
// elements [c0, c1) of pa and pb (contiguous): a round of vectors at a
// time, each round's terms added in a plain float, the rounds compensated.
template <class E, class T, int kBlock>
__device__ __forceinline__ float chunk_term_sum(const T* pa, const T* pb, int64_t c0, int64_t c1) {
  constexpr int VEC = kVec16<T>, U = kRowSumUnroll;
  constexpr bool kB = TermReadsB<E>::value;
  if (kB && !vectors_match(pa, pb, c0)) return row_term_sum<E>(pa, 1, pb, 1, c0 + threadIdx.x, kBlock, c1);
  LongSum total;
  visit_chunk<false, U, kBlock>(
      pa, c0, c1,
      [&](const Raw16 (&ra)[U], const bool (&ok)[U], const int64_t (&at)[U]) {
        Raw16 rb[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (kB && ok[u]) rb[u] = load_raw(pb + at[u]);
        float part = 0.0f;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (!ok[u]) continue;
          float x[VEC], y[VEC] = {};
          raw_to_floats_widened<T>(ra[u], x);
          if (kB) raw_to_floats_widened<T>(rb[u], y);
#pragma unroll
          for (int e = 0; e < VEC; ++e) part += E::term(x[e], y[e]);
        }
        total.add(part);
      },
      [&](int64_t i) { total.add(E::term(to_float(pa[i]), kB ? to_float(pb[i]) : 0.0f)); });
  return total.value();
}

// q[i] = E::out(pa[i], pb[i], s) over [c0, c1) (kBlock threads), walked
// last round first: it starts on what the sum pass read last.
template <class E, class T, int kBlock>
__device__ __forceinline__ void chunk_write(T* q, const T* pa, const T* pb, int64_t c0, int64_t c1, float s) {
  constexpr int VEC = kVec16<T>, U = kRowSumUnroll;
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
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (ok[u]) rb[u] = load_raw(pb + at[u]);
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (!ok[u]) continue;
          float x[VEC], y[VEC];
          raw_to_floats_widened<T>(ra[u], x);
          raw_to_floats_widened<T>(rb[u], y);
#pragma unroll
          for (int e = 0; e < VEC; ++e) x[e] = E::out(x[e], y[e], s);
          if (whole) {
            store_floats<VEC>(q + at[u], x);
          } else {
#pragma unroll
            for (int e = 0; e < VEC; ++e) q[at[u] + e] = from_float<T>(x[e]);
          }
        }
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
    float x[VEC], y[VEC] = {};
    raw_to_floats_widened<T>(ra, x);
    if (kB) raw_to_floats_widened<T>(rb, y);
#pragma unroll
    for (int e = 0; e < VEC; ++e) s += E::term(x[e], y[e]);
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
    float x[VEC], y[VEC];
    raw_to_floats_widened<T>(load_raw(pa + at), x);
    raw_to_floats_widened<T>(load_raw(pb + at), y);
#pragma unroll
    for (int e = 0; e < VEC; ++e) x[e] = E::out(x[e], y[e], s);
    if (whole) {
      store_floats<VEC>(q + at, x);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) q[at + e] = from_float<T>(x[e]);
    }
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

// rows_block: a block of kBlock threads per row (grid-stride over rows);
// at most 64 registers, so 1024 threads' worth of blocks fit on an SM.
template <class E, class T, class Index, int kBlock>
__global__ void __launch_bounds__(kBlock, 1024 / kBlock)
row_sum_block_kernel(T* out, const T* a, const T* b, OffsetCalc<3, Index> rows, int64_t nrows, int64_t length) {
  __shared__ float slots[kMaxWarps];
  for (int64_t row = blockIdx.x; row < nrows; row += gridDim.x) {
    int64_t offsets[3];
    rows.get(static_cast<Index>(row), offsets);
    const T* pa = a + offsets[1];
    const T* pb = b + offsets[2];
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
  int block = 256;
  int64_t splits = 1, chunk = 0;  // rows_split, columns: chunks per row (of the dim), elements per chunk
  int tx = 32, ty = 8;            // columns: threads across a tile, slices of the dim
  int64_t columns = 1, col_tiles = 1, planes = 1;
  RowSumStrides col_strides{1, 1, 1};  // columns: along the rows' innermost dim
};

// Contiguous rows: rows_warp up to 128 elements (a quarter of the row per
// lane, up to a warp); longer rows a block each (256 to 1024 threads,
// about a round of kRowSumUnroll vectors each), or rows_split where fewer
// rows than two per SM leave SMs idle and the rows hold two rounds of a
// split block's loads or more: about 4 blocks per SM in all, no chunk
// shorter than one such round (OPRT_TUNE_ROW_SUM_SPLITS: the chunks per
// row, 1: rows_block).
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
  d.block = static_cast<int>(std::clamp<int64_t>(floor_pow2(ceil_div(vectors, kRowSumUnroll)), 256, 1024));
  d.variant = "rows_block";
}

// Any other layout: tiles of up to 32 columns (the rows' innermost dim) by
// 256 / TX slices of the dim; the dim split over blocks (columns_split)
// for about 8 blocks per SM, each thread at least 16 elements of its
// column per split (OPRT_TUNE_ROW_SUM_COLUMN_SPLITS: the splits, up to one
// element per thread). "strided" where the columns are not contiguous in
// every tensor (the same kernels; a warp's loads then spread out).
inline void plan_row_sum_columns(RowSumPlan& d, const StridedLayout<3>& r) {
  d.kind = RowSumKind::kColumns;
  d.columns = r.inner_size();
  d.col_strides = {r.inner_stride(0), r.inner_stride(1), r.inner_stride(2)};
  const bool contiguous = d.col_strides.out == 1 && d.col_strides.a == 1 && d.col_strides.b == 1;
  d.rows = outer_dims(r);
  d.planes = d.rows.numel();
  d.tx = static_cast<int>(std::min<int64_t>(32, ceil_pow2(d.columns)));
  d.ty = kRowSumColumnThreads / d.tx;
  d.col_tiles = ceil_div(d.columns, d.tx);
  const int64_t tiles = d.planes * d.col_tiles, sms = current_device_info().sm_count;
  const int64_t planned = std::min(ceil_div(8 * sms, tiles), d.length / (int64_t{d.ty} * 16));
  d.splits = std::clamp<int64_t>(tuned("ROW_SUM_COLUMN_SPLITS", planned), 1, std::max<int64_t>(1, d.length / d.ty));
  d.chunk = ceil_div(d.length, d.splits);
  d.splits = ceil_div(d.length, d.chunk);
  d.variant = contiguous ? "columns" : "strided";
  if (d.splits == 1) return;
  d.workspace_bytes = static_cast<size_t>(tiles * d.splits * d.tx) * sizeof(float);
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
template <class E, class T, class Index>
void launch_row_sum_columns(const RowSumPlan& d, void* workspace, T* out, const T* a, const T* b,
                            cudaStream_t stream) {
  const OffsetCalc<3, Index> planes(d.rows);
  const RowSumColumnsArgs args{d.columns, d.col_tiles,   d.planes,  d.length,
                               d.splits,  d.chunk,       d.col_strides, d.strides, static_cast<float*>(workspace)};
  const dim3 block(d.tx, d.ty);
  const unsigned grid = grid_for(d.planes * d.col_tiles * d.splits, 2048 / kRowSumColumnThreads, 4);
  if (d.splits == 1) {
    row_sum_columns_kernel<E, T, Index, false><<<grid, block, 0, stream>>>(out, a, b, planes, args);
    return check_launch("row_sum_columns_kernel");
  }
  row_sum_columns_kernel<E, T, Index, true><<<grid, block, 0, stream>>>(out, a, b, planes, args);
  check_launch("row_sum_columns_kernel");
  launch_early_if(true, row_sum_columns_write_kernel<E, T, Index>, grid, block, 0, stream, out, a, b, planes, args);
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
      row_sum_block_kernel<E, T, Index, kBlock><<<grid, kBlock, 0, stream>>>(out, a, b, rows, d.nrows, d.length);
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
