// 16-byte loads and stores of global memory (Raw16, vectors.cuh), some in
// PTX where the compiler must be told what to emit. The one part of the
// element types that only a GPU compiler takes: the CPU emulation of the
// kernels (tests/emulation/) puts an alignment-checked stand-in in its place.
#ifndef OPRT_COMMON_NVIDIA_GLOBAL_MEMORY_CUH_
#define OPRT_COMMON_NVIDIA_GLOBAL_MEMORY_CUH_

#include <cstdint>

#include "vectors.cuh"

namespace oprt::nvidia {

template <class T>
__device__ __forceinline__ Raw16 load_raw(const T* p) {  // p 16-byte aligned
  return *reinterpret_cast<const Raw16*>(p);
}
// One 16-byte store, written in PTX: stored as a struct, the compiler split
// it into 2-, 4- or 8-byte stores (the SASS of the dense, rows and softmax
// kernels showed STG.E.U16 / STG.E where STG.E.128 was meant), which
// multiplies the store instructions and the L2 write requests.
template <class T>
__device__ __forceinline__ void store_raw(T* p, const Raw16& r) {  // p 16-byte aligned
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(r.w[0]), "r"(r.w[1]), "r"(r.w[2]),
               "r"(r.w[3])
               : "memory");
}

// Loads and stores that mark their L2 lines the first to evict (sm_80+):
// for data a kernel is done with, so that it does not push out what the
// kernel will read again. The policy is made once per thread.
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
template <class T>
__device__ __forceinline__ Raw16 load_raw_evict_first(const T* p, uint64_t policy) {  // p 16-byte aligned
  Raw16 r;
  asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(r.w[0]), "=r"(r.w[1]), "=r"(r.w[2]), "=r"(r.w[3])
               : "l"(p), "l"(policy));
  return r;
}
template <class T>
__device__ __forceinline__ void store_raw_evict_first(T* p, const Raw16& r, uint64_t policy) {  // p 16-byte aligned
  asm volatile("st.global.L2::cache_hint.v4.b32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(r.w[0]), "r"(r.w[1]),
               "r"(r.w[2]), "r"(r.w[3]), "l"(policy)
               : "memory");
}

}  // namespace oprt::nvidia

#endif
