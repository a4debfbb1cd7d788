/* reduce_sum: out = src summed over the listed dims (accumulated in fp32 or
 * wider). dims are in 0..src.ndim-1 (or negative), no repeats; num_dims == 0
 * reduces nothing. With keepdim, out keeps the reduced dims with size 1. */
#ifndef OPRT_REDUCE_SUM_API_H_
#define OPRT_REDUCE_SUM_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_DECLARE_REDUCE_SUM_API(BACKEND)                                        \
  OPRT_API oprt_status_t oprt_create_reduce_sum_descriptor_##BACKEND(               \
      oprt_descriptor_t* desc, const oprt_tensor_view_t* out,                       \
      const oprt_tensor_view_t* src, const int32_t* dims, int32_t num_dims,         \
      int32_t keepdim);                                                             \
  OPRT_API oprt_status_t oprt_get_reduce_sum_workspace_size_##BACKEND(              \
      oprt_descriptor_t desc, size_t* workspace_bytes);                             \
  OPRT_API oprt_status_t oprt_execute_reduce_sum_##BACKEND(                         \
      oprt_descriptor_t desc, void* workspace, size_t workspace_bytes, void* out,   \
      const void* src, void* stream);                                               \
  OPRT_API oprt_status_t oprt_destroy_reduce_sum_descriptor_##BACKEND(oprt_descriptor_t desc);

#endif
