// The float math every softmax-family kernel shares: exp as one MUFU.EX2,
// the running (max, sum) pair and its merges across a warp and a block, and
// the epilogue contract that turns a row's final pair into the op's output.
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_MATH_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_MATH_CUH_

#include <cooperative_groups.h>

#include "../cuda_types.cuh"
#include "../group_reduce.cuh"
#include "../long_sum.cuh"

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
// A row holding NaN or +inf ends with a NaN sum (fmaxf drops NaN from the
// max; exp(NaN - m) and exp(inf - inf) are NaN); a row of all -inf ends with
// (-inf, 0). Epilogues turn both into torch's results.
struct Stats {
  float m, s;
};

// ---- epilogues ---------------------------------------------------------------------
// An op of the family is the machinery below plus an epilogue E, a type with
//   struct Row;                                 the row's constants, once per row
//   __device__ static Row row(Stats st);        from its final (max, sum)
//   __device__ static float out(Row k, float x);    the output for input x
//   static constexpr bool kFromExp;             out(k, x) is a function of exp(x - max):
//   __device__ static float out_exp(Row k, float e);  (needed only when kFromExp)
//                                               out(k, x) given e = exp_minus(x, k's max),
//                                               which kernels that computed e for the
//                                               sum reuse
// Kernels compute row() once per row (per column, for the column kernels)
// and out() or out_exp() per element, so an op's per-element cost is its
// out() alone. Row must be trivially copyable (it travels through shared
// memory in the cluster kernels).
template <class E>
using RowOf = typename E::Row;

// The output for input x whose exp(x - max) the caller may already hold.
template <class E>
__device__ __forceinline__ float out_given_exp(const RowOf<E>& k, float x, float e) {
  if constexpr (E::kFromExp)
    return E::out_exp(k, e);
  else
    return E::out(k, x);
}

__device__ __forceinline__ float rescale(float s, float m_old, float m_new) {
  return s == 0.0f ? 0.0f : s * exp_minus(m_old, m_new);
}
__device__ __forceinline__ float exp_or_zero(float x, float m) { return x == -INFINITY ? 0.0f : exp_minus(x, m); }
__device__ __forceinline__ Stats merge(Stats a, Stats b) {
  const float m = fmaxf(a.m, b.m);
  return {m, rescale(a.s, a.m, m) + rescale(b.s, b.m, m)};
}
// A thread's running (max, sum) over an unbounded count of rounds or
// merges, its sum compensated (long_sum.cuh): a plain running sum drifts by
// up to a rounding a round, which adds up over the rounds of a long row. A
// new max rescales the sum and its compensation alike.
struct LongStats {
  float m = -INFINITY, s = 0.0f, comp = 0.0f;
  // Adds the sum of exp(x - m_new) over some elements, m_new >= m (no
  // branch on a moved max: the rescale by exp(0) is exactly 1).
  __device__ __forceinline__ void add(float m_new, float sum) {
    s = rescale(s, m, m_new), comp = rescale(comp, m, m_new), m = m_new;
    compensated_add(s, comp, sum);
  }
  __device__ __forceinline__ void merge(Stats b) {
    const float mm = fmaxf(m, b.m);
    add(mm, rescale(b.s, b.m, mm));
  }
  __device__ __forceinline__ Stats value() const { return {m, s - comp}; }
};
// A few elements into a running (max, sum): plain (bounded chains, as the
// column kernels fold theirs) or long.
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
template <int N>
__device__ __forceinline__ void update(LongStats& st, const float (&x)[N]) {
  float m = st.m;
#pragma unroll
  for (int e = 0; e < N; ++e) m = fmaxf(m, x[e]);
  float s = 0.0f;
#pragma unroll
  for (int e = 0; e < N; ++e) s += exp_or_zero(x[e], m);
  st.add(m, s);
}
// update() over U loaded vectors at once (vector u counts when ok[u]): one
// rescale per round and short dependency chains. Converts each vector twice
// rather than hold U * VEC floats in registers.
template <class T, int U>
__device__ __forceinline__ void update_round(LongStats& st, const Raw16 (&raw)[U], const bool (&ok)[U]) {
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
  st.add(m, tree_sum(acc));
}
// update_round over a kThreads block's round of U vectors of shared
// memory from vector `first` on (this thread's: first + u * kThreads +
// threadIdx.x, those below `count`).
template <class T, int U, int kThreads>
__device__ __forceinline__ void update_from_shared(LongStats& st, const Raw16* shared, int64_t first, int64_t count) {
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
