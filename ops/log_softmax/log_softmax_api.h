/* log_softmax: out = src - max - log(sum(exp(src - max))) along dim, computed in
 * fp32 or wider; -inf/+inf/NaN follow torch.log_softmax. */
#ifndef OPRT_LOG_SOFTMAX_API_H_
#define OPRT_LOG_SOFTMAX_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_log_softmax(INPUT, PARAM) INPUT(src) PARAM(int32_t, dim)

#endif
