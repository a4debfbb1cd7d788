// 16-byte vectors, the index helpers around them and alignment tests: the
// plain C++ part of the element types (cuda_types.cuh), which host code and
// the CPU emulation of the kernels (tests/emulation/) use as they are.
#ifndef OPRT_COMMON_NVIDIA_VECTORS_CUH_
#define OPRT_COMMON_NVIDIA_VECTORS_CUH_

#include <cstdint>

namespace oprt::nvidia {

// Elements of T per 16-byte vector: 4 float32, 8 16-bit.
template <class T>
constexpr int kVec16 = 16 / sizeof(T);

// N elements held as whole 16-byte words (N * sizeof(T) is 16 or 32).
template <class T, int N>
struct alignas(16) Vec {
  T v[N];
};

// 16 bytes held as four 32-bit registers. A 16-bit vector loaded into
// Vec<T, N> gets split into one register per element right at the load,
// which makes the thread wait for that load before issuing the next one;
// loading into Raw16 and converting later keeps all of a thread's loads in
// flight.
struct alignas(16) Raw16 {
  uint32_t w[4];
};

// Vec <-> 16-byte words (N * sizeof(T) is 16 or 32).
template <class T, int N>
constexpr int kVecWords = sizeof(Vec<T, N>) / sizeof(Raw16);

__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Powers of two around x (x >= 1): the smallest at least x, the largest at most x.
constexpr int64_t ceil_pow2(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}
constexpr int64_t floor_pow2(int64_t x) {
  int64_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

// Bytes past the last 16-byte boundary (0: p may take a 16-byte access).
__host__ __device__ __forceinline__ uintptr_t misalignment16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) & 15;
}
template <class T>
__host__ __device__ __forceinline__ bool aligned16(const T* p) {
  return misalignment16(p) == 0;
}

// Elements from p to the next 16-byte boundary (p is element-aligned).
template <class T>
__host__ __device__ __forceinline__ int64_t elements_to_alignment(const T* p) {
  return ((16 - misalignment16(p)) & 15) / sizeof(T);
}

}  // namespace oprt::nvidia

#endif
