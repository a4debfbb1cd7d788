#include "softmax_plan.h"

namespace oprt {

SoftmaxProblem plan_softmax(const oprt_tensor_view_t* out_view, const oprt_tensor_view_t* src_view, int32_t dim) {
  SoftmaxProblem p;
  p.out = describe_tensor(out_view, "out");
  p.src = describe_tensor(src_view, "src");
  require_same_dtype(p.out, "out", p.src, "src");
  require_same_shape(p.out, "out", p.src, "src");
  require_no_self_overlap(p.out, "out");
  p.dim = normalize_dim(dim, p.src.ndim, "dim");
  if (p.src.ndim > 0) {
    p.length = p.src.shape[p.dim];
    p.src_stride = p.src.strides[p.dim];
    p.out_stride = p.out.strides[p.dim];
  }
  StridedLayout<2> rows;
  for (int d = 0; d < p.src.ndim; ++d) {
    if (d == p.dim) continue;
    const int64_t strides[2] = {p.out.strides[d], p.src.strides[d]};
    rows.push_dim(p.src.shape[d], strides);
  }
  p.rows = coalesce(rows);
  return p;
}

}  // namespace oprt
