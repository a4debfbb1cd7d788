// Checked CUDA calls, the device guard of every execute, and cached device
// facts. Every CUDA runtime call and launch in the NVIDIA backend goes
// through OPRT_CUDA_CHECK or check_launch, so a failure becomes an
// OPRT_STATUS_BACKEND_ERROR carrying CUDA's own error text.
#ifndef OPRT_COMMON_NVIDIA_CUDA_CHECK_CUH_
#define OPRT_COMMON_NVIDIA_CUDA_CHECK_CUH_

#include <cuda_runtime.h>

#include "../error.h"

namespace oprt::nvidia {

[[noreturn]] inline void fail_cuda(cudaError_t error, const char* what) {
  const oprt_status_t status =
      error == cudaErrorMemoryAllocation ? OPRT_STATUS_OUT_OF_MEMORY : OPRT_STATUS_BACKEND_ERROR;
  fail(status, "%s failed: %s (%s)", what, cudaGetErrorString(error), cudaGetErrorName(error));
}

#define OPRT_CUDA_CHECK(call)                                           \
  do {                                                                  \
    const cudaError_t oprt_error_ = (call);                             \
    if (oprt_error_ != cudaSuccess) ::oprt::nvidia::fail_cuda(oprt_error_, #call); \
  } while (0)

// After a <<<...>>> launch: a bad configuration shows up here at once.
inline void check_launch(const char* kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) fail_cuda(error, kernel);
}

// Devices visible to this process, read once.
inline int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      n = 0;
    }
    return n;
  }();
  return count;
}

// Makes the stream's device current for the duration of an execute (the
// caller's thread may have another device current) and restores it after.
class StreamDeviceGuard {
 public:
  explicit StreamDeviceGuard(cudaStream_t stream) {
    OPRT_CUDA_CHECK(cudaGetDevice(&previous_));
    device_ = previous_;
    // With one device the stream's device is the current one: skip the two
    // queries (they cost more than the rest of a small launch's host work).
    // cudaStreamGetDevice is refused while the stream is being captured into
    // a graph; capture then runs with the stream's device current anyway.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (device_count() > 1 && stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread) {
      OPRT_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
      if (capture == cudaStreamCaptureStatusNone) OPRT_CUDA_CHECK(cudaStreamGetDevice(stream, &device_));
    }
    if (device_ != previous_) OPRT_CUDA_CHECK(cudaSetDevice(device_));
  }
  ~StreamDeviceGuard() {
    if (device_ != previous_) cudaSetDevice(previous_);
  }
  StreamDeviceGuard(const StreamDeviceGuard&) = delete;
  StreamDeviceGuard& operator=(const StreamDeviceGuard&) = delete;
  int device() const { return device_; }

 private:
  int previous_ = 0;
  int device_ = 0;
};

// Device indices past this are refused (per-device tables are this long).
constexpr int kMaxDevices = 64;

// Facts about the current device, read once per device.
struct DeviceInfo {
  int sm_count = 0;
  int cc_major = 0;  // compute capability
  int max_threads_per_sm = 0;
  int max_smem_per_block_optin = 0;  // bytes, with cudaFuncAttributeMaxDynamicSharedMemorySize
  int l2_bytes = 0;
};
const DeviceInfo& current_device_info();

}  // namespace oprt::nvidia

#endif
