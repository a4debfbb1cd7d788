/* mul: out = a * b with torch broadcasting (stride-0 dims at out's rank); a, b
 * and out share one dtype; rounded once from the exact product, as torch.mul. */
#ifndef OPRT_MUL_API_H_
#define OPRT_MUL_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_mul(INPUT, PARAM) INPUT(a) INPUT(b)

#endif
