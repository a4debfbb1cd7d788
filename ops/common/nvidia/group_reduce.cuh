// Reductions within a thread (tree_max, tree_sum) and across the threads
// that share one row: a group of TPR threads (a power of two, 1..1024) that
// are consecutive in the block. Every thread
// of the group gets the same result, combined in a fixed order, so results
// are bitwise reproducible.
#ifndef OPRT_COMMON_NVIDIA_GROUP_REDUCE_CUH_
#define OPRT_COMMON_NVIDIA_GROUP_REDUCE_CUH_

namespace oprt::nvidia {

// identity(): op(x, identity()) == x.
struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
  __device__ __forceinline__ float identity() const { return 0.0f; }
};
struct MaxOp {  // fmaxf drops NaN; callers let NaN reach the output through the sum
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
  __device__ __forceinline__ float identity() const { return -INFINITY; }
};

// Max and sum of a thread's N values (a power of two; v is overwritten) as
// trees, in a fixed order: independent instructions, where a running max or
// sum is a chain of N dependent ones (and a float sum is more accurate).
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

// Shared memory needed by group_allreduce: one float per warp of the block.
constexpr int kMaxWarps = 32;

// All threads of the block must call this together (it may hold barriers).
template <int TPR, class Op>
__device__ __forceinline__ float group_allreduce(float v, Op op, float* warp_slots) {
  constexpr int kWidth = TPR < 32 ? TPR : 32;
#pragma unroll
  for (int mask = kWidth / 2; mask >= 1; mask /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, mask));
  if constexpr (TPR > 32) {
    constexpr int kWarps = TPR / 32;
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) warp_slots[warp] = v;
    __syncthreads();
    const int first = warp / kWarps * kWarps;
    v = warp_slots[first];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) v = op(v, warp_slots[first + w]);
    __syncthreads();  // the slots are reused by the next call
  }
  return v;
}

// The same over the whole block (any multiple of 32 threads, runtime size).
// The warps' results are combined in a pass over their slots, or with
// kShuffleTree by a second shuffle tree (lane w holds warp w's, the rest
// the identity): 5 steps where the pass is a chain of up to 32 dependent
// shared-memory reads, at the cost of registers (16-bit softmax rows: 96 ->
// 128, spilling). Each tree step combines a and b on one lane and b and a
// on its partner, bitwise the same for + and fmaxf: every thread gets the
// same result.
template <bool kShuffleTree = false, class Op>
__device__ __forceinline__ float block_allreduce(float v, Op op, float* warp_slots) {
  v = group_allreduce<32>(v, op, warp_slots);
  const int warps = blockDim.x / 32;
  if (warps == 1) return v;
  if (threadIdx.x % 32 == 0) warp_slots[threadIdx.x / 32] = v;
  __syncthreads();
  if constexpr (kShuffleTree) {
    const int lane = threadIdx.x % 32;
    v = group_allreduce<32>(lane < warps ? warp_slots[lane] : op.identity(), op, warp_slots);
  } else {
    v = warp_slots[0];
    for (int w = 1; w < warps; ++w) v = op(v, warp_slots[w]);
  }
  __syncthreads();  // the slots are reused by the next call
  return v;
}

}  // namespace oprt::nvidia

#endif
