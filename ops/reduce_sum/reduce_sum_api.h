/* reduce_sum: out = src summed over the listed dims (accumulated in fp32 or
 * wider). dims are in 0..src.ndim-1 (or negative), no repeats; num_dims == 0
 * reduces nothing. With keepdim, out keeps the reduced dims with size 1. */
#ifndef OPRT_REDUCE_SUM_API_H_
#define OPRT_REDUCE_SUM_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_reduce_sum(INPUT, PARAM) INPUT(src) PARAM(const int32_t*, dims) PARAM(int32_t, num_dims) PARAM(int32_t, keepdim)

/* The seed's oprt_create_reduce_sum_descriptor_<b>: one axis, not kept. */
#define OPRT_SEED_ARGS_reduce_sum(INPUT, PARAM) INPUT(src) PARAM(int64_t, axis)

#ifdef __cplusplus
namespace oprt {
namespace seed {
template <class Create>
oprt_status_t reduce_sum(Create create, oprt_descriptor_t* desc, const oprt_tensor_view_t* out,
                         const oprt_tensor_view_t* src, int64_t axis) {
  const int32_t dim = oprt_seed_dim(axis);
  return create(desc, out, src, &dim, 1, 0);
}
}  // namespace seed
}  // namespace oprt
#endif

#endif
