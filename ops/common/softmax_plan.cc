#include "softmax_plan.h"

namespace oprt {

SoftmaxProblem plan_softmax(const oprt_tensor_view_t* out_view, const oprt_tensor_view_t* src_view, int32_t dim) {
  const AlongDimProblem<2> a = plan_along_dim<2>({out_view, src_view}, {"out", "src"}, dim);
  SoftmaxProblem p;
  p.out = a.t[0];
  p.src = a.t[1];
  p.dim = a.dim;
  p.length = a.length;
  p.out_stride = a.stride[0];
  p.src_stride = a.stride[1];
  p.rows = a.rows;
  return p;
}

}  // namespace oprt
