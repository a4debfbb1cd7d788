// CPU stand-in for ops/common/nvidia/cuda_types.cuh: the real vectors.cuh
// (Vec, Raw16, the alignment helpers) and the 16-byte accesses the
// elementwise kernels make, each checked for alignment (a misaligned one
// would fault on the GPU).
#ifndef OPRT_EMULATION_CUDA_TYPES_CUH_
#define OPRT_EMULATION_CUDA_TYPES_CUH_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../tensor.h"
#include "cuda_runtime_shim.h"
#include "vectors.cuh"

namespace oprt::nvidia {

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
