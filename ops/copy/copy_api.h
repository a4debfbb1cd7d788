/* copy: out[i] = convert(src[i]); src broadcasts to out's shape (like Tensor.copy_). */
#ifndef OPRT_COPY_API_H_
#define OPRT_COPY_API_H_
#include "operator_runtime/operator_runtime.h"

/* Declares the four copy entry points of one backend; each backend's header
 * expands it once, so the signatures live here only. */
#define OPRT_DECLARE_COPY_API(BACKEND)                                              \
  OPRT_API oprt_status_t oprt_create_copy_descriptor_##BACKEND(                     \
      oprt_descriptor_t* desc, const oprt_tensor_view_t* out,                       \
      const oprt_tensor_view_t* src);                                               \
  OPRT_API oprt_status_t oprt_get_copy_workspace_size_##BACKEND(                    \
      oprt_descriptor_t desc, size_t* workspace_bytes);                             \
  OPRT_API oprt_status_t oprt_execute_copy_##BACKEND(                               \
      oprt_descriptor_t desc, void* workspace, size_t workspace_bytes, void* out,   \
      const void* src, void* stream);                                               \
  OPRT_API oprt_status_t oprt_destroy_copy_descriptor_##BACKEND(oprt_descriptor_t desc);

#endif
