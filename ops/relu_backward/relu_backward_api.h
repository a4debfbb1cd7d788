/* relu_backward: out = grad where x > 0, else 0 (torch's threshold_backward(grad,
 * x, 0): x <= 0 gives 0, so a NaN x passes grad through); grad and x broadcast
 * (stride-0 dims at out's rank) and share out's dtype. */
#ifndef OPRT_RELU_BACKWARD_API_H_
#define OPRT_RELU_BACKWARD_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_relu_backward(INPUT, PARAM) INPUT(grad) INPUT(x)

#endif
