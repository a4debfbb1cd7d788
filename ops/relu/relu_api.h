/* relu: out = max(src, 0) elementwise, as torch.relu (NaN stays NaN); out may be src. */
#ifndef OPRT_RELU_API_H_
#define OPRT_RELU_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_relu(INPUT, PARAM) INPUT(src)

#endif
