#include "reduce_sum_plan.h"

namespace oprt {

ReduceSumProblem plan_reduce_sum(const oprt_tensor_view_t* out_view, const oprt_tensor_view_t* src_view,
                                 const int32_t* dims, int32_t num_dims, int32_t keepdim) {
  ReduceSumProblem p;
  p.out = describe_tensor(out_view, "out");
  p.src = describe_tensor(src_view, "src");
  require_same_dtype(p.out, "out", p.src, "src");
  if (keepdim != 0 && keepdim != 1) fail(OPRT_STATUS_INVALID_ARGUMENT, "keepdim must be 0 or 1, got %d", keepdim);
  if (num_dims < 0 || num_dims > kMaxDims)
    fail(OPRT_STATUS_INVALID_ARGUMENT, "num_dims %d must be in 0..%d", num_dims, kMaxDims);
  if (num_dims > 0 && dims == nullptr) fail(OPRT_STATUS_NULL_POINTER, "dims is NULL but num_dims is %d", num_dims);
  for (int i = 0; i < num_dims; ++i) {
    const int d = normalize_dim(dims[i], p.src.ndim, "dim");
    if (d >= p.src.ndim) continue;  // dim 0 of a 0-d tensor: nothing to reduce
    if (p.reduce_mask & (1u << d)) fail(OPRT_STATUS_INVALID_ARGUMENT, "dim %d appears more than once", d);
    p.reduce_mask |= 1u << d;
  }
  // out's expected shape, and out's stride for every src dim (0 if reduced).
  int64_t out_strides[kMaxDims] = {};
  int expected_ndim = 0;
  bool shape_ok = true;
  for (int d = 0; d < p.src.ndim; ++d) {
    const bool reduced = p.reduce_mask & (1u << d);
    if (reduced && !keepdim) continue;
    const int64_t size = reduced ? 1 : p.src.shape[d];
    if (expected_ndim >= p.out.ndim || p.out.shape[expected_ndim] != size) shape_ok = false;
    else if (!reduced) out_strides[d] = p.out.strides[expected_ndim];
    ++expected_ndim;
  }
  if (!shape_ok || expected_ndim != p.out.ndim)
    fail(OPRT_STATUS_BAD_SHAPE, "out has %d dims or sizes that do not match src reduced over the given dims%s",
         p.out.ndim, keepdim ? " with keepdim" : "");
  require_no_self_overlap(p.out, "out");
  p.layout = reduction_layout(p.src, out_strides, p.reduce_mask);
  return p;
}

}  // namespace oprt
