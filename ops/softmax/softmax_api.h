/* softmax: out = exp(src - max) / sum(exp(src - max)) along dim, computed in
 * fp32 or wider; -inf/+inf/NaN follow torch (a row of all -inf gives NaN). */
#ifndef OPRT_SOFTMAX_API_H_
#define OPRT_SOFTMAX_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_DECLARE_SOFTMAX_API(BACKEND)                                           \
  OPRT_API oprt_status_t oprt_create_softmax_descriptor_##BACKEND(                  \
      oprt_descriptor_t* desc, const oprt_tensor_view_t* out,                       \
      const oprt_tensor_view_t* src, int32_t dim);                                  \
  OPRT_API oprt_status_t oprt_get_softmax_workspace_size_##BACKEND(                 \
      oprt_descriptor_t desc, size_t* workspace_bytes);                             \
  OPRT_API oprt_status_t oprt_execute_softmax_##BACKEND(                            \
      oprt_descriptor_t desc, void* workspace, size_t workspace_bytes, void* out,   \
      const void* src, void* stream);                                               \
  OPRT_API oprt_status_t oprt_destroy_softmax_descriptor_##BACKEND(oprt_descriptor_t desc);

#endif
