// CPU stand-in for ops/common/nvidia/cuda_types.cuh: the vector types and
// 16-byte accesses the elementwise kernels use, with every 16-byte access
// checked for alignment (a misaligned one would fault on the GPU).
#ifndef OPRT_EMULATION_CUDA_TYPES_CUH_
#define OPRT_EMULATION_CUDA_TYPES_CUH_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "../tensor.h"
#include "cuda_runtime_shim.h"

namespace oprt::nvidia {

template <class T>
constexpr int kVec16 = 16 / sizeof(T);

template <class T, int N>
struct alignas(16) Vec {
  T v[N];
};

struct alignas(16) Raw16 {
  uint32_t w[4];
};

inline uintptr_t misalignment16(const void* p) { return reinterpret_cast<uintptr_t>(p) & 15; }
template <class T>
bool aligned16(const T* p) {
  return misalignment16(p) == 0;
}
template <class T>
int64_t elements_to_alignment(const T* p) {
  return ((16 - misalignment16(p)) & 15) / sizeof(T);
}
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline void require_aligned16(const void* p, const char* what) {
  if (misalignment16(p) != 0) {
    std::fprintf(stderr, "emulation: %s at %p is not 16-byte aligned\n", what, p);
    std::abort();
  }
}
template <class T>
Raw16 load_raw(const T* p) {
  require_aligned16(p, "16-byte load");
  Raw16 r;
  std::memcpy(&r, p, sizeof r);
  return r;
}
template <class T>
void store_raw(T* p, const Raw16& r) {
  require_aligned16(p, "16-byte store");
  std::memcpy(p, &r, sizeof r);
}

template <class T, int N>
constexpr int kVecWords = sizeof(Vec<T, N>) / sizeof(Raw16);
template <class T, int N>
Vec<T, N> load_vec(const T* p) {
  Raw16 w[kVecWords<T, N>];
  for (int i = 0; i < kVecWords<T, N>; ++i) w[i] = load_raw(p + i * (N / kVecWords<T, N>));
  Vec<T, N> v;
  std::memcpy(&v, w, sizeof v);
  return v;
}
template <class T, int N>
void store_vec(T* p, const Vec<T, N>& v) {
  Raw16 w[kVecWords<T, N>];
  std::memcpy(w, &v, sizeof v);
  for (int i = 0; i < kVecWords<T, N>; ++i) store_raw(p + i * (N / kVecWords<T, N>), w[i]);
}

}  // namespace oprt::nvidia

#endif
