// CPU stand-in for ops/common/nvidia/global_memory.cuh (whose PTX only a GPU
// compiler takes): the same 16-byte loads and stores, each checked for
// alignment, as a misaligned one would fault on the GPU.
#ifndef OPRT_COMMON_NVIDIA_GLOBAL_MEMORY_CUH_
#define OPRT_COMMON_NVIDIA_GLOBAL_MEMORY_CUH_

#include <cstdint>
#include <cstring>

#include "vectors.cuh"

namespace oprt::nvidia {

inline void require_aligned16(const void* p, const char* what) {
  if (misalignment16(p) != 0) emu::die("%s at %p is not 16-byte aligned", what, p);
}
template <class T>
Raw16 load_raw(const T* p) {
  require_aligned16(p, "a 16-byte load");
  Raw16 r;
  std::memcpy(&r, p, sizeof r);
  return r;
}
template <class T>
void store_raw(T* p, const Raw16& r) {
  require_aligned16(p, "a 16-byte store");
  std::memcpy(p, &r, sizeof r);
}
inline uint64_t l2_evict_first_policy() { return 0; }
template <class T>
Raw16 load_raw_evict_first(const T* p, uint64_t) {
  return load_raw(p);
}
template <class T>
void store_raw_evict_first(T* p, const Raw16& r, uint64_t) {
  store_raw(p, r);
}

}  // namespace oprt::nvidia

#endif
