// Private to softmax_nvidia.cu: the float math every softmax kernel shares:
// exp as one MUFU.EX2, the running (max, sum) pair and its merges across
// a warp and a block.
#ifndef OPRT_SOFTMAX_NVIDIA_MATH_CUH_
#define OPRT_SOFTMAX_NVIDIA_MATH_CUH_

#include <cooperative_groups.h>

#include "../../common/nvidia/cuda_types.cuh"
#include "../../common/nvidia/group_reduce.cuh"

namespace oprt::nvidia {
namespace {

namespace cg = cooperative_groups;

constexpr float kLog2e = 1.4426950408889634f;
// exp(x - m) as one MUFU.EX2: exp2f() adds a range check and two multiplies
// around it to produce denormal results (4 instructions), and the 16-bit
// rows kernels issue two exps per element. Flushing results below 2^-126 to
// zero changes only outputs under 1e-38. (Host compilers, as in the CPU
// emulation of the kernels, take exp2f with the same flush.)
__device__ __forceinline__ float exp_minus(float x, float m) {
  float y;
#ifdef __CUDA_ARCH__
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"((x - m) * kLog2e));
#else
  y = exp2f((x - m) * kLog2e);
  if (y < 0x1p-126f) y = 0.0f;
#endif
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
    raw_to_floats_widened<T>(raw[u], y);
    mu[u] = ok[u] ? tree_max(y) : -INFINITY;
  }
  const float m = fmaxf(st.m, tree_max(mu));
  float acc[VEC] = {};
  const auto accumulate = [&](auto term) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!ok[u]) continue;
      float y[VEC];
      raw_to_floats_widened<T>(raw[u], y);
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
// update_round over a kThreads block's round of U vectors of shared
// memory from vector `first` on (this thread's: first + u * kThreads +
// threadIdx.x, those below `count`).
template <class T, int U, int kThreads>
__device__ __forceinline__ void update_from_shared(Stats& st, const Raw16* shared, int64_t first, int64_t count) {
  Raw16 raw[U];
  bool ok[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t v = first + u * kThreads + threadIdx.x;
    ok[u] = v < count;
    if (ok[u]) raw[u] = shared[v];
  }
  update_round<T>(st, raw, ok);
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

}  // namespace
}  // namespace oprt::nvidia

#endif
