// Stand-in for <cuda_runtime.h> on the emulated GPU (emulated_gpu.h): the
// runtime calls the NVIDIA backend makes, answered for one device of
// emu::kSms SMs, and launches that run on the emulator.
#ifndef OPRT_EMULATION_CUDA_RUNTIME_H_
#define OPRT_EMULATION_CUDA_RUNTIME_H_

#include <algorithm>
#include <cstring>

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "emulated_gpu.h"

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = emu::kErrorInvalidValue,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = emu::kErrorInvalidConfiguration,
};
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
  }
  return "unknown error";
}
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
  }
  return "cudaErrorUnknown";
}
inline cudaError_t cudaGetLastError() {
  const auto e = static_cast<cudaError_t>(emu::engine.last_error);
  emu::engine.last_error = 0;
  return e;
}

struct CUstream_st;
using cudaStream_t = CUstream_st*;
#define cudaStreamLegacy (reinterpret_cast<cudaStream_t>(0x1))
#define cudaStreamPerThread (reinterpret_cast<cudaStream_t>(0x2))
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone, cudaStreamCaptureStatusActive };

inline cudaError_t cudaGetDeviceCount(int* n) { return *n = 1, cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) { return *d = 0, cudaSuccess; }
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidValue; }
inline cudaError_t cudaStreamGetDevice(cudaStream_t, int* d) { return *d = 0, cudaSuccess; }
inline cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* s) {
  return *s = cudaStreamCaptureStatusNone, cudaSuccess;
}

enum cudaDeviceAttr {
  cudaDevAttrMultiProcessorCount,
  cudaDevAttrComputeCapabilityMajor,
  cudaDevAttrMaxThreadsPerMultiProcessor,
  cudaDevAttrMaxSharedMemoryPerBlockOptin,
  cudaDevAttrL2CacheSize,
};
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return cudaErrorInvalidValue;
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: return *value = emu::kSms, cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: return *value = emu::kComputeMajor, cudaSuccess;
    case cudaDevAttrMaxThreadsPerMultiProcessor: return *value = emu::kMaxThreadsPerSm, cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: return *value = emu::kMaxSharedPerBlock, cudaSuccess;
    case cudaDevAttrL2CacheSize: return *value = emu::kL2Bytes, cudaSuccess;
  }
  return cudaErrorInvalidValue;
}

enum cudaMemcpyKind { cudaMemcpyDeviceToDevice = 3 };
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t = nullptr) {
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

// ---- launches ------------------------------------------------------------------
enum cudaLaunchAttributeID {
  cudaLaunchAttributeCooperative = 2,
  cudaLaunchAttributeClusterDimension = 4,
  cudaLaunchAttributeProgrammaticStreamSerialization = 6,
};
union cudaLaunchAttributeValue {
  struct {
    unsigned x, y, z;
  } clusterDim;
  int cooperative;
  int programmaticStreamSerializationAllowed;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned numAttrs;
};

template <class... Params, class... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(Params...), Args&&... args) {
  unsigned cluster = 1;
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const cudaLaunchAttribute& a = config->attrs[i];
    if (a.id == cudaLaunchAttributeClusterDimension) {
      if (a.val.clusterDim.y != 1 || a.val.clusterDim.z != 1) return cudaErrorInvalidConfiguration;
      cluster = a.val.clusterDim.x;
    } else if (a.id == cudaLaunchAttributeCooperative) {
      cooperative = a.val.cooperative != 0;
    }  // programmatic dependent launch: kernels run one after another anyway
  }
  emu::launch(kernel, config->gridDim, config->blockDim, config->dynamicSmemBytes, cluster, cooperative,
              static_cast<Params>(args)...);
  return cudaGetLastError();
}

// kernel<<<grid, block, shared, stream>>>(args...) is rewritten to this.
template <class... Params, class... Args>
void emulate_launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared, cudaStream_t, Args... args) {
  emu::launch(kernel, grid, block, shared, 1, false, static_cast<Params>(args)...);
}

// Occupancy, as if only threads limited it.
template <class Kernel>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Kernel, int block, size_t smem) {
  if (block <= 0 || block > emu::kMaxThreadsPerBlock) return cudaErrorInvalidValue;
  *blocks = smem > size_t{emu::kMaxSharedPerBlock} ? 0 : std::min(32, emu::kMaxThreadsPerSm / block);
  return cudaSuccess;
}
template <class Kernel>
cudaError_t cudaOccupancyMaxActiveClusters(int* clusters, Kernel kernel, const cudaLaunchConfig_t* config) {
  unsigned cluster = 1;
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id == cudaLaunchAttributeClusterDimension) cluster = config->attrs[i].val.clusterDim.x;
  int per_sm = 0;
  const int threads = static_cast<int>(config->blockDim.x * config->blockDim.y * config->blockDim.z);
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, config->dynamicSmemBytes) != cudaSuccess)
    return cudaErrorInvalidValue;
  *clusters = cluster > unsigned{emu::kMaxCluster} ? 0 : emu::kSms * per_sm / static_cast<int>(cluster);
  return cudaSuccess;
}

struct cudaFuncAttributes {
  size_t sharedSizeBytes = 0;  // the emulator does not know a kernel's static shared memory in advance
  int maxThreadsPerBlock = emu::kMaxThreadsPerBlock;
};
template <class Kernel>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, Kernel) {
  *attributes = cudaFuncAttributes{};
  return cudaSuccess;
}
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize,
  cudaFuncAttributeNonPortableClusterSizeAllowed,
};
template <class Kernel>
cudaError_t cudaFuncSetAttribute(Kernel, cudaFuncAttribute attribute, int value) {
  if (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize && value > emu::kMaxSharedPerBlock)
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

#endif
