// Long float32 sums whose rounding error does not grow with their length:
// every NVIDIA kernel that adds an unbounded count of partials (a thread's
// folded column sums, runs, split partials) adds them here. A plain running
// sum drifts by up to count / 2 roundings (1e-2 relative at 2^36 terms);
// Kahan's compensation keeps it within about two (2u + count * u^2 of the
// magnitudes). (nvcc keeps the order of these adds: the build never
// enables fast math.)
#ifndef OPRT_COMMON_NVIDIA_LONG_SUM_CUH_
#define OPRT_COMMON_NVIDIA_LONG_SUM_CUH_

namespace oprt::nvidia {

// sum += x with Kahan's compensation: comp holds what the last adds lost
// (with its sign reversed), and is subtracted from the next term. Once the
// sum is inf or NaN, comp stays 0 (else inf - inf would turn an overflowed
// sum into NaN).
__device__ __forceinline__ void compensated_add(float& sum, float& comp, float x) {
  const float y = x - comp;
  const float t = sum + y;
  const float lost = (t - sum) - y;
  comp = fabsf(t) <= 3.402823466e38f ? lost : 0.0f;
  sum = t;
}

// The same on a sum kept in shared memory (volatile: a loop that adds to it
// keeps no register for it, where the compiler would otherwise hold it).
__device__ __forceinline__ void compensated_add(volatile float* sum, volatile float* comp, float x) {
  float s = *sum, c = *comp;
  compensated_add(s, c, x);
  *sum = s, *comp = c;
}

// A sum of a thread's partials: add() each, value() at the end.
struct LongSum {
  float sum = 0.0f, comp = 0.0f;
  __device__ __forceinline__ void add(float x) { compensated_add(sum, comp, x); }
  __device__ __forceinline__ float value() const { return sum - comp; }
};

}  // namespace oprt::nvidia

#endif  // OPRT_COMMON_NVIDIA_LONG_SUM_CUH_
