// The NVIDIA backend's probe and the cached per-device facts.
#include <cuda_runtime.h>

#include <mutex>

#include "cuda_check.cuh"

namespace oprt::nvidia {

const DeviceInfo& current_device_info() {
  static DeviceInfo infos[kMaxDevices];
  static std::once_flag once[kMaxDevices];
  int device = 0;
  OPRT_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices) fail(OPRT_STATUS_BACKEND_ERROR, "device index %d is out of range", device);
  std::call_once(once[device], [device] {
    DeviceInfo& info = infos[device];
    OPRT_CUDA_CHECK(cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, device));
    OPRT_CUDA_CHECK(cudaDeviceGetAttribute(&info.cc_major, cudaDevAttrComputeCapabilityMajor, device));
    OPRT_CUDA_CHECK(cudaDeviceGetAttribute(&info.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
    OPRT_CUDA_CHECK(
        cudaDeviceGetAttribute(&info.max_smem_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    OPRT_CUDA_CHECK(cudaDeviceGetAttribute(&info.l2_bytes, cudaDevAttrL2CacheSize, device));
  });
  return infos[device];
}

}  // namespace oprt::nvidia

extern "C" OPRT_API oprt_status_t oprt_backend_probe_nvidia(void) {
  return oprt::guard("oprt_backend_probe_nvidia", [] {
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error so later calls start clean
      oprt::fail(OPRT_STATUS_DEVICE_UNAVAILABLE, "no CUDA device is available (cudaGetDeviceCount: %s)",
                 cudaGetErrorString(error));
    }
    if (count == 0) oprt::fail(OPRT_STATUS_DEVICE_UNAVAILABLE, "no CUDA device is available (0 devices found)");
  });
}
