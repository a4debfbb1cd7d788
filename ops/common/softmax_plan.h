// Backend-neutral validation and layout analysis for the softmax family
// (softmax, log_softmax and their backwards): one dim normalized, every
// other dim a row.
#ifndef OPRT_SOFTMAX_PLAN_H_
#define OPRT_SOFTMAX_PLAN_H_

#include "layout.h"

namespace oprt {

// N tensors of one shape and dtype along one dim (operand 0 = out, then the
// inputs): the dim's length and each one's stride along it, every other dim
// coalesced into `rows`.
template <int N>
struct AlongDimProblem {
  TensorDesc t[N];
  int dim = 0;
  int64_t length = 1;       // size of the dim
  int64_t stride[N] = {};   // element strides along the dim
  StridedLayout<N> rows;    // every other dim, coalesced
};

template <int N>
AlongDimProblem<N> plan_along_dim(const oprt_tensor_view_t* const (&views)[N], const char* const (&names)[N],
                                  int32_t dim) {
  AlongDimProblem<N> p;
  for (int k = 0; k < N; ++k) p.t[k] = describe_tensor(views[k], names[k]);
  for (int k = 1; k < N; ++k) {
    require_same_dtype(p.t[0], names[0], p.t[k], names[k]);
    require_same_shape(p.t[0], names[0], p.t[k], names[k]);
  }
  require_no_self_overlap(p.t[0], names[0]);
  p.dim = normalize_dim(dim, p.t[0].ndim, "dim");
  if (p.t[0].ndim > 0) {
    p.length = p.t[0].shape[p.dim];
    for (int k = 0; k < N; ++k) p.stride[k] = p.t[k].strides[p.dim];
  }
  StridedLayout<N> rows;
  for (int d = 0; d < p.t[0].ndim; ++d) {
    if (d == p.dim) continue;
    int64_t strides[N];
    for (int k = 0; k < N; ++k) strides[k] = p.t[k].strides[d];
    rows.push_dim(p.t[0].shape[d], strides);
  }
  p.rows = coalesce(rows);
  return p;
}

// The forward ops' view of it (out, src).
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
