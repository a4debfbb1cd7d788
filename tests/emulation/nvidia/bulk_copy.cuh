// CPU stand-in for ops/common/nvidia/bulk_copy.cuh (PTX): the same
// asynchronous copies into shared memory on the emulated GPU, which lands
// them as late as a wait allows or at once (emulated_gpu.h), checks their
// alignment and that they stay inside the block's shared memory.
#ifndef OPRT_COMMON_NVIDIA_BULK_COPY_CUH_
#define OPRT_COMMON_NVIDIA_BULK_COPY_CUH_

#include <cuda/ptx>

#include <cstdint>

namespace oprt::nvidia {

inline void init_landed(uint64_t* landed, int count) {
  for (int k = 0; k < count; ++k) emu::mbarrier_init(&landed[k]);
}
inline void bulk_copy_to_shared(void* shared, const void* global, uint32_t bytes, uint64_t* landed) {
  emu::bulk_copy(shared, global, bytes, landed);
}
inline void wait_landed(uint64_t* landed, uint32_t parity) { emu::mbarrier_wait_parity(landed, parity); }
inline void copy16_to_shared_async(void* shared, const void* global) { emu::async_copy(shared, global, 16, 16); }
inline void copy16_to_shared_async(void* shared, const void* global, int bytes) {
  emu::async_copy(shared, global, static_cast<size_t>(bytes), 16);
}
inline void wait_all_async_copies() { emu::wait_async(0, true); }
inline void commit_async_copies() { emu::commit_async(); }
inline void wait_async_copies_pending(int pending) { emu::wait_async(static_cast<size_t>(pending), false); }

}  // namespace oprt::nvidia

#endif
