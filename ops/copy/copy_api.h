/* copy: out[i] = convert(src[i]); src broadcasts to out's shape (like Tensor.copy_). */
#ifndef OPRT_COPY_API_H_
#define OPRT_COPY_API_H_
#include "operator_runtime/operator_runtime.h"

#define OPRT_ARGS_copy(INPUT, PARAM) INPUT(src)

#endif
