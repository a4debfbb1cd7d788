// Backend-neutral validation and layout analysis for reduce_sum.
#ifndef OPRT_REDUCE_SUM_PLAN_H_
#define OPRT_REDUCE_SUM_PLAN_H_

#include "../common/layout.h"

namespace oprt {

struct ReduceSumProblem {
  TensorDesc out, src;
  uint32_t reduce_mask = 0;  // bit d: src dim d is reduced
  ReductionLayout layout;    // kept: (out, src); reduced: (src, unused)
};

// Validates the views and parameters (dims in range, no repeats, out's shape
// equal to src's with the dims removed, or kept as size 1 with keepdim).
ReduceSumProblem plan_reduce_sum(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, const int32_t* dims,
                                 int32_t num_dims, int32_t keepdim);

}  // namespace oprt

#endif
