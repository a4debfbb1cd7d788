/* softmax: out = exp(src - max) / sum(exp(src - max)) along dim, computed in
 * fp32 or wider; -inf/+inf/NaN follow torch (a row of all -inf gives NaN). */
#ifndef OPRT_SOFTMAX_API_H_
#define OPRT_SOFTMAX_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_softmax(INPUT, PARAM) INPUT(src) PARAM(int32_t, dim)

#endif
