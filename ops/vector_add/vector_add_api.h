/* vector_add: out = a + b with torch broadcasting (expressed as stride-0 dims
 * at out's rank); a, b and out share one dtype. */
#ifndef OPRT_VECTOR_ADD_API_H_
#define OPRT_VECTOR_ADD_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_vector_add(INPUT, PARAM) INPUT(a) INPUT(b)

#endif
