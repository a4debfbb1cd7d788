/* softmax_backward: softmax's gradient along dim, out = output * (grad -
 * sum(grad * output)), the sum over dim computed in fp32 or wider (torch's
 * _softmax_backward_data); grad, output and out share a shape and dtype. */
#ifndef OPRT_SOFTMAX_BACKWARD_API_H_
#define OPRT_SOFTMAX_BACKWARD_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_softmax_backward(INPUT, PARAM) INPUT(grad) INPUT(output) PARAM(int32_t, dim)

#endif
