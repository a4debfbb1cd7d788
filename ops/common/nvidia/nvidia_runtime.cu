// The NVIDIA backend's probe: it can run when the CUDA runtime finds a device.
#include <cuda_runtime.h>

#include "../error.h"

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
