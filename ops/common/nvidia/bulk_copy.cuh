// Asynchronous copies from global into shared memory: bulk copies (TMA,
// sm_90), each completing on an mbarrier of its own, and one thread's
// 16-byte copies (sm_80), completing by commit group.
#ifndef OPRT_COMMON_NVIDIA_BULK_COPY_CUH_
#define OPRT_COMMON_NVIDIA_BULK_COPY_CUH_

#include <cuda/ptx>

#include <cstdint>

namespace oprt::nvidia {

// One thread: `count` barriers, each expecting one arrival (the issuing
// thread's) and its copy's bytes; a block barrier must follow before any
// thread waits on them.
__device__ __forceinline__ void init_landed(uint64_t* landed, int count) {
#if __CUDA_ARCH__ >= 900
  for (int k = 0; k < count; ++k) cuda::ptx::mbarrier_init(&landed[k], 1);
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the barriers, as the copy engine sees them
#endif
}

// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) to
// shared memory; `landed` completes its phase when they are there.
__device__ __forceinline__ void bulk_copy_to_shared(void* shared, const void* global, uint32_t bytes,
                                                    uint64_t* landed) {
#if __CUDA_ARCH__ >= 900
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, landed,
                                       bytes);
  cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, shared, global, bytes, landed);
#endif
}

// Waits until `landed` has completed the phase of the given parity.
__device__ __forceinline__ void wait_landed(uint64_t* landed, uint32_t parity) {
#if __CUDA_ARCH__ >= 900
  while (!cuda::ptx::mbarrier_try_wait_parity(landed, parity)) {
  }
#endif
}

// One thread's asynchronous 16-byte copy (sm_80) from global into shared
// memory, no register held, not kept in L1 (both addresses 16-byte
// aligned). Copies are grouped by commit_async_copies() and waited for by
// group, oldest first, or all at once by wait_all_async_copies().
__device__ __forceinline__ void copy16_to_shared_async(void* shared, const void* global) {
#if __CUDA_ARCH__ >= 800
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to), "l"(global) : "memory");
#endif
}
// The same, reading only the first `bytes` (<= 16) and zero-filling the rest.
__device__ __forceinline__ void copy16_to_shared_async(void* shared, const void* global, int bytes) {
#if __CUDA_ARCH__ >= 800
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(to), "l"(global), "r"(bytes) : "memory");
#endif
}
// Waits for every copy this thread issued, committed to a group or not.
__device__ __forceinline__ void wait_all_async_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}
__device__ __forceinline__ void commit_async_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Waits until at most `pending` (0-7) of this thread's groups are in flight.
__device__ __forceinline__ void wait_async_copies_pending(int pending) {
#if __CUDA_ARCH__ >= 800
  switch (pending) {
    case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;" ::: "memory"); break;
  }
#endif
}

}  // namespace oprt::nvidia

#endif
