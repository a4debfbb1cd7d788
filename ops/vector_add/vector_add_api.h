/* vector_add: out = a + b with torch broadcasting (expressed as stride-0 dims
 * at out's rank); a, b and out share one dtype. */
#ifndef OPRT_VECTOR_ADD_API_H_
#define OPRT_VECTOR_ADD_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_DECLARE_VECTOR_ADD_API(BACKEND)                                        \
  OPRT_API oprt_status_t oprt_create_vector_add_descriptor_##BACKEND(               \
      oprt_descriptor_t* desc, const oprt_tensor_view_t* out,                       \
      const oprt_tensor_view_t* a, const oprt_tensor_view_t* b);                    \
  OPRT_API oprt_status_t oprt_get_vector_add_workspace_size_##BACKEND(              \
      oprt_descriptor_t desc, size_t* workspace_bytes);                             \
  OPRT_API oprt_status_t oprt_execute_vector_add_##BACKEND(                         \
      oprt_descriptor_t desc, void* workspace, size_t workspace_bytes, void* out,   \
      const void* a, const void* b, void* stream);                                  \
  OPRT_API oprt_status_t oprt_destroy_vector_add_descriptor_##BACKEND(oprt_descriptor_t desc);

#endif
