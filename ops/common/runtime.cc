// Backend-neutral C entry points: ABI version, status names, last error,
// variant names and the CPU backend's probe.
#include <string>

#include "descriptor.h"

namespace oprt {
namespace {
thread_local std::string last_error;
}
void set_last_error(const std::string& message) { last_error = message; }
}  // namespace oprt

extern "C" {

OPRT_API const char* oprt_status_string(oprt_status_t status) {
  switch (status) {
    case OPRT_STATUS_SUCCESS: return "OPRT_STATUS_SUCCESS";
    case OPRT_STATUS_NULL_POINTER: return "OPRT_STATUS_NULL_POINTER";
    case OPRT_STATUS_INVALID_ARGUMENT: return "OPRT_STATUS_INVALID_ARGUMENT";
    case OPRT_STATUS_UNSUPPORTED_DTYPE: return "OPRT_STATUS_UNSUPPORTED_DTYPE";
    case OPRT_STATUS_BAD_SHAPE: return "OPRT_STATUS_BAD_SHAPE";
    case OPRT_STATUS_BAD_STRIDES: return "OPRT_STATUS_BAD_STRIDES";
    case OPRT_STATUS_INVALID_DESCRIPTOR: return "OPRT_STATUS_INVALID_DESCRIPTOR";
    case OPRT_STATUS_INSUFFICIENT_WORKSPACE: return "OPRT_STATUS_INSUFFICIENT_WORKSPACE";
    case OPRT_STATUS_DEVICE_UNAVAILABLE: return "OPRT_STATUS_DEVICE_UNAVAILABLE";
    case OPRT_STATUS_BACKEND_ERROR: return "OPRT_STATUS_BACKEND_ERROR";
    case OPRT_STATUS_OUT_OF_MEMORY: return "OPRT_STATUS_OUT_OF_MEMORY";
    case OPRT_STATUS_NOT_IMPLEMENTED: return "OPRT_STATUS_NOT_IMPLEMENTED";
    case OPRT_STATUS_INTERNAL_ERROR: return "OPRT_STATUS_INTERNAL_ERROR";
  }
  return "OPRT_STATUS_UNKNOWN";
}

OPRT_API int oprt_abi_version(void) { return OPRT_ABI_VERSION; }

OPRT_API const char* oprt_last_error(void) { return oprt::last_error.c_str(); }

OPRT_API const char* oprt_descriptor_variant(oprt_descriptor_t desc) {
  uint64_t tag = 0;
  oprt_descriptor* object = oprt::handles::find(desc, &tag);
  return object == nullptr ? nullptr : object->variant.c_str();
}

// The CPU kernels are compiled for the instruction set CMake chose
// (OPRT_CPU_ISA); this file is not, so it can refuse politely on an older CPU.
OPRT_API oprt_status_t oprt_backend_probe_cpu(void) {
  return oprt::guard("oprt_backend_probe_cpu", [] {
#if defined(OPRT_CPU_ISA_AVX2) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c"))
      oprt::fail(OPRT_STATUS_DEVICE_UNAVAILABLE,
                 "the CPU kernels were built for AVX2+FMA+F16C, which this processor lacks; rebuild with "
                 "-DCAMP_CPU_ISA=baseline");
#endif
  });
}

}  // extern "C"
