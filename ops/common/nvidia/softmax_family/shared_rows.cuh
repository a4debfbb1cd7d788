// Softmax-family long rows read once (rows_shared<C>). A cluster of C
// blocks per row; each block bulk-copies (TMA) its slice of the row into
// shared memory, takes the slice's (max, sum) as the copies land, merges
// the C results through distributed shared memory in rank order, and
// writes its slice from shared memory. src leaves DRAM once, where
// rows_twice reads it twice (the second time partly from L2). Two or three
// blocks per SM (slices of up to 80 KB; a row of up to 110 KB is one block)
// keep rows in flight, so one block's copies overlap another's writes.
// Takes rows contiguous along the dim in both tensors, out's rows at src's
// 16-byte alignment.
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_SHARED_ROWS_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_SHARED_ROWS_CUH_

#include "../bulk_copy.cuh"
#include "../offset_calc.cuh"
#include "long_rows.cuh"
#include "math.cuh"

namespace oprt::nvidia {
namespace {

constexpr int kSharedThreads = 256;
constexpr int kSharedUnroll = 4;                                    // vectors a thread takes from a piece
constexpr int kSharedPieceVectors = kSharedThreads * kSharedUnroll;  // one bulk copy: 16 KB
constexpr int kMaxSharedPieces = 14;                                 // 224 KB: more than a block holds

struct SharedRowsArgs {
  int64_t length;
  int64_t slice_vectors;  // block `rank` holds a row's vectors [rank * slice_vectors, +slice_vectors)
};

// A row's elements before its first 16-byte boundary and after its last
// whole vector (at most VEC - 1 each) are the row's edges: one each of
// rank 0's first threads, loaded and stored one by one. The whole vectors
// between them are the bulk-copied part: block `rank` holds vectors
// [rank * slice_vectors, +slice_vectors) of it (fewer in the last slices),
// in 16 KB bulk copies, each taken in one update_round (4 vectors a
// thread: faster than 2 or 8, or 32 KB copies) as it lands. out's rows
// must sit at src's alignment, so the vectors line up.
// kEdges: some row may have edges (without, the kernel is 2-3% faster on
// rows of whole aligned vectors).
template <class E, class T, int C, bool kEdges, class Index>
__global__ void __launch_bounds__(kSharedThreads)
softmax_rows_shared_kernel(T* out, const T* src, OffsetCalc<2, Index> rows, SharedRowsArgs a) {
#if __CUDA_ARCH__ >= 900
  constexpr int VEC = kVec16<T>, U = kSharedUnroll, kPiece = kSharedPieceVectors;
  static_assert(2 * (VEC - 1) <= kSharedThreads, "a thread per edge element");
  extern __shared__ Raw16 slice[];
  __shared__ uint64_t landed[kMaxSharedPieces];  // one mbarrier per bulk copy (each used once)
  __shared__ Stats slots[kMaxWarps];
  __shared__ Stats block_stats;  // read by the cluster's other blocks
  const int64_t row = blockIdx.x / C;
  const int rank = static_cast<int>(blockIdx.x % C);  // (clusters are C consecutive blocks along x)
  int64_t offsets[2];
  rows.get(static_cast<Index>(row), offsets);
  const T* row_src = src + offsets[1];
  T* row_out = out + offsets[0];
  const int64_t head = kEdges ? min(a.length, elements_to_alignment(row_src)) : 0;
  const int64_t vectors = (a.length - head) / VEC;  // the row's whole, aligned vectors
  const int64_t v0 = rank * a.slice_vectors;
  const int64_t count = max(int64_t{0}, min(a.slice_vectors, vectors - v0));  // this block's vectors
  const T* p = row_src + head + v0 * VEC;
  T* q = row_out + head + v0 * VEC;
  // this thread's edge element, if any (rank 0): the head's, then the tail's
  int64_t edge_at = -1;
  float edge = 0.0f;
  if constexpr (kEdges) {
    const int64_t edges = head + (a.length - head - vectors * VEC);
    if (rank == 0 && threadIdx.x < edges) {
      edge_at = threadIdx.x < head ? threadIdx.x : vectors * VEC + threadIdx.x;
      edge = to_float(row_src[edge_at]);
    }
  }
  const int pieces = static_cast<int>(ceil_div(count, int64_t{kPiece}));
  if (threadIdx.x == 0) {
    init_landed(landed, pieces);
    // every piece in flight at once: nothing is reused, and the stats of
    // the first overlap the loads of the rest
    for (int k = 0; k < pieces; ++k) {
      const int64_t first = int64_t{k} * kPiece;
      const uint32_t bytes = static_cast<uint32_t>(min(int64_t{kPiece}, count - first) * sizeof(Raw16));
      bulk_copy_to_shared(slice + first, p + first * VEC, bytes, &landed[k]);
    }
  }
  __syncthreads();  // no thread waits on a barrier before it is initialized
  LongStats running;
  if (kEdges && edge_at >= 0) {
    const float x[1] = {edge};
    update(running, x);
  }
  for (int k = 0; k < pieces; ++k) {
    wait_landed(&landed[k], 0);
    update_from_shared<T, U, kSharedThreads>(running, slice, int64_t{k} * kPiece, count);
  }
  Stats st = block_merge(running.value(), slots);
  if constexpr (C > 1) {
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) block_stats = st;
    cluster.sync();  // every block's block_stats visible to the cluster
    st = *cluster.map_shared_rank(&block_stats, 0);
#pragma unroll
    for (int r = 1; r < C; ++r) st = merge(st, *cluster.map_shared_rank(&block_stats, r));
    // Done reading the others' block_stats: arrive now, wait before
    // leaving, so no block waits on the slowest one's writes.
    __cluster_barrier_arrive();
  }
  const RowOf<E> k = E::row(st);
  if (kEdges && edge_at >= 0) row_out[edge_at] = from_float<T>(E::out(k, edge));
#pragma unroll 4
  for (int64_t v = threadIdx.x; v < count; v += kSharedThreads) write_out<E, T>(q, v * VEC, slice[v], k, 1, true);
  if constexpr (C > 1) __cluster_barrier_wait();  // no block leaves while another may read its block_stats
#else
  __trap();  // planned only on sm_90 and newer
#endif
}

}  // namespace
}  // namespace oprt::nvidia

#endif
