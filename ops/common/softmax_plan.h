// Backend-neutral validation and layout analysis for the softmax family
// (softmax, log_softmax): one dim normalized, every other dim a row.
#ifndef OPRT_SOFTMAX_PLAN_H_
#define OPRT_SOFTMAX_PLAN_H_

#include "layout.h"

namespace oprt {

struct SoftmaxProblem {
  TensorDesc out, src;
  int dim = 0;
  int64_t length = 1;        // size of the softmax dim
  int64_t src_stride = 0;    // element strides along the softmax dim
  int64_t out_stride = 0;
  StridedLayout<2> rows;     // every other dim, coalesced: operand 0 = out, 1 = src
};

SoftmaxProblem plan_softmax(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, int32_t dim);

}  // namespace oprt

#endif
