// Bulk asynchronous copies (TMA, sm_90) from global into shared memory,
// each completing on an mbarrier of its own.
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

}  // namespace oprt::nvidia

#endif
