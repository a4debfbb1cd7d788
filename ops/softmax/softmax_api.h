/* softmax: out = exp(src - max) / sum(exp(src - max)) along dim, computed in
 * fp32 or wider; -inf/+inf/NaN follow torch (a row of all -inf gives NaN). */
#ifndef OPRT_SOFTMAX_API_H_
#define OPRT_SOFTMAX_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_softmax(INPUT, PARAM) INPUT(src) PARAM(int32_t, dim)

/* The seed's oprt_create_softmax_descriptor_<b> took the dim as an int64_t axis. */
#define OPRT_SEED_ARGS_softmax(INPUT, PARAM) INPUT(src) PARAM(int64_t, axis)

#ifdef __cplusplus
namespace oprt {
namespace seed {
template <class Create>
oprt_status_t softmax(Create create, oprt_descriptor_t* desc, const oprt_tensor_view_t* out,
                      const oprt_tensor_view_t* src, int64_t axis) {
  return create(desc, out, src, oprt_seed_dim(axis));
}
}  // namespace seed
}  // namespace oprt
#endif

#endif
