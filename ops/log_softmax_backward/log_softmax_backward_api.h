/* log_softmax_backward: log_softmax's gradient along dim, out = grad -
 * exp(output) * sum(grad), the sum over dim computed in fp32 or wider
 * (torch's _log_softmax_backward_data); grad, output and out share a shape
 * and dtype. */
#ifndef OPRT_LOG_SOFTMAX_BACKWARD_API_H_
#define OPRT_LOG_SOFTMAX_BACKWARD_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_log_softmax_backward(INPUT, PARAM) INPUT(grad) INPUT(output) PARAM(int32_t, dim)

#endif
