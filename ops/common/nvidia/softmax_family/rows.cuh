// Softmax-family rows held in registers (rows_warp, rows_block,
// rows_cluster<C>; for dense rows without the layout's generality) and
// rows_block's rows streamed through shared memory (rows_stream).
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROWS_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROWS_CUH_

#include <cuda/ptx>

#include <type_traits>

#include "../bulk_copy.cuh"
#include "../offset_calc.cuh"
#include "math.cuh"

namespace oprt::nvidia {
namespace {

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

// The output of one row whose slots are in registers (slot j of this thread
// at row element (j * tpr + lane) * VEC - hs, -inf padded), written to q. Every
// thread of the block calls it together; after_max() runs once the max is
// combined, which for a whole-block group is past a barrier that every
// thread reaches after using its slots' source.
enum class RowForm {
  kGeneral,  // any q, out_stride and shift: each slot's store tested
  kAligned,  // q 16-byte aligned, out_stride 1, hs 0, length whole vectors: every slot in the row is a vector
  kShifted,  // out_stride 1, q - hs 16-byte aligned: the slots wholly inside the row are vectors
  kFlat,     // out_stride 1, hs = -(elements before the row's first 16-byte boundary): every slot is a
             // whole vector inside the row or past its end; the up to VEC - 1 elements at each end are
             // one `edge` element each of some threads
};
template <class E, class T, int G, int NV, int C, RowForm kForm = RowForm::kGeneral, class AfterMax>
__device__ __forceinline__ void softmax_row_in_registers(const Raw16 (&raw)[NV], T* q, int64_t length,
                                                         int64_t out_stride, int tpr, int lane, int64_t hs,
                                                         bool valid, float* slots, float* cluster_max,
                                                         float* cluster_sum, AfterMax after_max,
                                                         float edge = -INFINITY, int64_t edge_at = -1) {
  constexpr int VEC = kVec16<T>;
  float m = kForm == RowForm::kFlat ? edge : -INFINITY;
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
  // An epilogue of exp(x - max) keeps it in float registers when they hold
  // it (float32, or 16-bit with at most 4 slots); 8 slots of 16-bit keep
  // only the input and recompute exp on the way out (two MUFU.EX2 per
  // element). Other epilogues take the input again from raw.
  constexpr bool kKeepExp = E::kFromExp && (std::is_same_v<T, float> || NV <= 4);
  float kept[kKeepExp ? NV : 1][VEC];
  float s = 0.0f;
  float edge_exp = 0.0f;
  if constexpr (kForm == RowForm::kFlat) {  // (-inf where the thread has none: adds 0, as padding does)
    edge_exp = exp_minus(edge, m);
    s = edge_exp;
  }
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
  const RowOf<E> k = E::row(Stats{m, s});
  if (!valid) return;
  if constexpr (kForm == RowForm::kFlat)
    if (edge_at >= 0) q[edge_at] = from_float<T>(out_given_exp<E>(k, edge, edge_exp));
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int64_t v0 = kForm == RowForm::kGeneral ? (int64_t{j} * tpr + lane) * VEC - hs : (j * tpr + lane) * VEC - hs;
    float x[VEC];
    if constexpr (kKeepExp) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) x[e] = E::out_exp(k, kept[j][e]);
    } else {
      raw_to_floats<T>(raw[j], x);
#pragma unroll
      for (int e = 0; e < VEC; ++e) x[e] = E::out(k, x[e]);
    }
    if constexpr (kForm == RowForm::kAligned || kForm == RowForm::kFlat) {
      if (v0 + (kForm == RowForm::kFlat ? VEC : 1) <= length) store_floats<VEC>(q + v0, x);
    } else if (v0 >= 0 && v0 + VEC <= length &&
               (kForm == RowForm::kShifted || (out_stride == 1 && aligned16(q + v0)))) {
      store_floats<VEC>(q + v0, x);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        if (v0 + e >= 0 && v0 + e < length) q[(v0 + e) * out_stride] = from_float<T>(x[e]);
    }
  }
}

// The slot of row elements v0 .. v0 + VEC - 1 of p loaded element by
// element; those outside [0, length), or all of them where !valid, are
// `padding` (-inf: contributes exp(-inf) = 0).
template <class T, class I>
__device__ __forceinline__ Raw16 load_slot_by_element(const T* p, I v0, I length, bool valid, T padding) {
  constexpr int VEC = kVec16<T>;
  Vec<T, VEC> v;
#pragma unroll
  for (int e = 0; e < VEC; ++e) v.v[e] = valid && v0 + e >= 0 && v0 + e < length ? p[v0 + e] : padding;
  return to_raw(v);
}

// MB: resident blocks per SM the compiler must allow (a register cap).
template <class E, class T, int G, int NV, int C, class Index, int MB = 1>
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
    const T padding = from_float<T>(-INFINITY);
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int64_t v0 = (int64_t{j} * tpr + lane) * VEC - hs;
      if (valid && v0 >= 0 && v0 + VEC <= length && aligned16(p + v0)) {
        raw[j] = load_raw(p + v0);
      } else {
        raw[j] = load_slot_by_element(p, v0, length, valid, padding);
      }
    }
    softmax_row_in_registers<E, T, G, NV, C>(raw, q, length, out_stride, tpr, lane, hs, valid, slots, &cluster_max,
                                          &cluster_sum, [] {});
  }
  if constexpr (C > 1) cg::this_cluster().sync();  // keep cluster_sum alive until all have read it
}

// ---- dense rows --------------------------------------------------------------------
// softmax_rows_kernel (C = 1) for rows stored back to back in both tensors
// (row r at r * length) whose bases are equally aligned: a row's offset is
// one multiply (no OffsetCalc) and its vectors need no alignment test.
// kForm kAligned: the bases are aligned and the rows whole vectors long,
// every slot is one vector. kShifted: rows not whole vectors long, each
// shifted onto 16-byte boundaries (the slots at its two ends load and store
// by element). kFlat (a block per row, G = 0): the same rows, every slot a
// whole vector between the row's first and last 16-byte boundaries, and
// the up to VEC - 1 elements before and after them one scalar each of
// threads 0 .. 2 VEC - 1: faster than kShifted on long odd rows, and with
// no general layout the compiler holds float32 rows in about half the
// registers softmax_rows_kernel takes.
template <class E, class T, int G, int NV, int MB = 1, RowForm kForm = RowForm::kAligned>
__global__ void __launch_bounds__(G ? 256 : max_row_block<T, NV>(), MB > 1 ? MB : 0)
softmax_dense_rows_kernel(T* out, const T* src, int64_t nrows, int length) {
  static_assert(kForm != RowForm::kFlat || G == 0, "kFlat: a block per row (2 VEC threads for the edges)");
  constexpr int VEC = kVec16<T>;
  __shared__ float slots[kMaxWarps];
  const int tpr = G ? G : blockDim.x;
  const int groups = G ? blockDim.x / G : 1;
  const int group = G ? threadIdx.x / G : 0;
  const int lane = G ? threadIdx.x % G : threadIdx.x;
  const T padding = from_float<T>(-INFINITY);  // contributes exp(-inf) = 0
  Raw16 padded;
  {
    Vec<T, VEC> v;
#pragma unroll
    for (int e = 0; e < VEC; ++e) v.v[e] = padding;
    padded = to_raw(v);
  }
  for (int64_t base = int64_t{blockIdx.x} * groups; base < nrows; base += int64_t{gridDim.x} * groups) {
    const int64_t row = base + group;
    const bool valid = G == 0 || row < nrows;
    const T* p = src + row * length;
    const int misaligned = kForm == RowForm::kAligned ? 0 : static_cast<int>(misalignment16(p) / sizeof(T));
    // kFlat: the row's elements before its first 16-byte boundary, its whole vectors
    const int head = (VEC - misaligned) % VEC;
    const int hs = kForm == RowForm::kFlat ? -head : misaligned;
    const int whole = kForm == RowForm::kFlat ? (length - head) / VEC : 0;
    Raw16 raw[NV];
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int v0 = (j * tpr + lane) * VEC - hs;
      if constexpr (kForm == RowForm::kFlat) {
        raw[j] = valid && j * tpr + lane < whole ? load_raw(p + v0) : padded;
      } else if constexpr (kForm == RowForm::kAligned) {
        raw[j] = valid && v0 < length ? load_raw(p + v0) : padded;
      } else if (valid && v0 >= 0 && v0 + VEC <= length) {
        raw[j] = load_raw(p + v0);
      } else {
        raw[j] = load_slot_by_element(p, v0, length, valid, padding);
      }
    }
    float edge = -INFINITY;
    int edge_at = -1;
    if constexpr (kForm == RowForm::kFlat) {
      // threads 0 .. VEC - 1: elements 0 .. head - 1; VEC .. 2 VEC - 1: those past the whole vectors
      const int at = lane < VEC ? lane : head + whole * VEC + lane - VEC;
      if (valid && at < length && (lane < VEC ? at < head : lane < 2 * VEC)) {
        edge = to_float(p[at]);
        edge_at = at;
      }
    }
    softmax_row_in_registers<E, T, G, NV, 1, kForm>(raw, out + row * length, length, 1, tpr, lane, hs, valid, slots,
                                                 nullptr, nullptr, [] {}, edge, edge_at);
  }
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

template <class E, class T, int NV, class Index, int MB = 1>
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
    bulk_copy_to_shared(row_buffers + b * row_vectors, src + offsets[1], bytes, &landed[b]);
  };
  if (threadIdx.x == 0) {
    init_landed(landed, buffers);
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
    wait_landed(&landed[b], parity);
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
    softmax_row_in_registers<E, T, 0, NV, 1>(raw, out + offsets[0], length, out_stride, blockDim.x, threadIdx.x, 0,
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

}  // namespace
}  // namespace oprt::nvidia

#endif
