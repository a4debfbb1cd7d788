/* reduce_sum: out = src summed over the listed dims (accumulated in fp32 or
 * wider). dims are in 0..src.ndim-1 (or negative), no repeats; num_dims == 0
 * reduces nothing. With keepdim, out keeps the reduced dims with size 1. */
#ifndef OPRT_REDUCE_SUM_API_H_
#define OPRT_REDUCE_SUM_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_reduce_sum(INPUT, PARAM) INPUT(src) PARAM(const int32_t*, dims) PARAM(int32_t, num_dims) PARAM(int32_t, keepdim)

#endif
