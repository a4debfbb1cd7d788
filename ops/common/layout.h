// Layout analysis done once at descriptor creation: dims of size 1 dropped,
// dims ordered by the output's strides, adjacent dims merged where every
// operand allows it. Kernels then loop over the fewest, largest dims.
#ifndef OPRT_COMMON_LAYOUT_H_
#define OPRT_COMMON_LAYOUT_H_

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "tensor.h"

namespace oprt {

// N operands iterated together over one shape; operand 0 orders the dims.
// Dims run outermost first; strides are in elements.
template <int N>
struct StridedLayout {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
  int64_t inner_size() const { return ndim ? shape[ndim - 1] : 1; }
  int64_t inner_stride(int operand) const { return ndim ? strides[operand][ndim - 1] : 1; }
  void push_dim(int64_t size, const int64_t (&operand_strides)[N]) {
    shape[ndim] = size;
    for (int k = 0; k < N; ++k) strides[k][ndim] = operand_strides[k];
    ++ndim;
  }
};

// Returns the canonical form of `in`: size-1 dims dropped (an empty layout
// keeps a single size-0 dim), dims stably sorted by operand 0's |stride|
// (largest first) and adjacent dims merged when contiguous in every operand.
template <int N>
StridedLayout<N> coalesce(const StridedLayout<N>& in) {
  StridedLayout<N> out;
  for (int d = 0; d < in.ndim; ++d) {
    if (in.shape[d] == 0) {  // nothing to iterate
      out.ndim = 1;
      out.shape[0] = 0;
      for (int k = 0; k < N; ++k) out.strides[k][0] = 1;
      return out;
    }
  }
  int order[kMaxDims];
  int count = 0;
  for (int d = 0; d < in.ndim; ++d)
    if (in.shape[d] != 1) order[count++] = d;
  std::stable_sort(order, order + count, [&](int a, int b) {
    return std::llabs(in.strides[0][a]) > std::llabs(in.strides[0][b]);
  });
  for (int i = 0; i < count; ++i) {
    int d = order[i];
    if (out.ndim > 0) {
      int last = out.ndim - 1;
      bool mergeable = true;
      for (int k = 0; k < N; ++k) mergeable &= out.strides[k][last] == in.strides[k][d] * in.shape[d];
      if (mergeable) {
        out.shape[last] *= in.shape[d];
        for (int k = 0; k < N; ++k) out.strides[k][last] = in.strides[k][d];
        continue;
      }
    }
    int64_t strides[N];
    for (int k = 0; k < N; ++k) strides[k] = in.strides[k][d];
    out.push_dim(in.shape[d], strides);
  }
  return out;
}

// Element offsets of linear index `index` (row-major over layout's dims).
template <int N>
void offsets_at(const StridedLayout<N>& layout, int64_t index, int64_t (&offsets)[N]) {
  for (int k = 0; k < N; ++k) offsets[k] = 0;
  for (int d = layout.ndim - 1; d >= 0; --d) {
    const int64_t i = index % layout.shape[d];
    index /= layout.shape[d];
    for (int k = 0; k < N; ++k) offsets[k] += i * layout.strides[k][d];
  }
}

// The layout's outer dims: all but the innermost (rows of a rows kernel,
// planes of a columns kernel, the batch around a tiled transpose).
template <int N>
StridedLayout<N> outer_dims(const StridedLayout<N>& l) {
  StridedLayout<N> outer;
  for (int d = 0; d + 1 < l.ndim; ++d) {
    int64_t strides[N];
    for (int k = 0; k < N; ++k) strides[k] = l.strides[k][d];
    outer.push_dim(l.shape[d], strides);
  }
  return outer;
}

// Whether every stride of `operand` is a multiple of 16 bytes (elements of
// `element_size` bytes): positions reached through these dims start 16-byte
// aligned wherever the operand's base is.
template <int N>
bool strides_aligned16(const StridedLayout<N>& l, int operand, int element_size) {
  for (int d = 0; d < l.ndim; ++d)
    if ((l.strides[operand][d] * element_size) % 16 != 0) return false;
  return true;
}
template <int N>
bool strides_aligned16(const StridedLayout<N>& l, int element_size) {  // every operand
  for (int k = 0; k < N; ++k)
    if (!strides_aligned16(l, k, element_size)) return false;
  return true;
}

// Whether operands a and b step by the same amount modulo 16 bytes along
// every dim: given equally aligned bases, their positions stay equally
// aligned (vectors of one line up with vectors of the other).
template <int N>
bool strides_congruent16(const StridedLayout<N>& l, int a, int b, int element_size) {
  for (int d = 0; d < l.ndim; ++d)
    if (((l.strides[a][d] - l.strides[b][d]) * element_size) % 16 != 0) return false;
  return true;
}

// The elementwise layout of N tensors of one shape (operand 0 is the output).
template <int N>
StridedLayout<N> elementwise_layout(const TensorDesc* const (&tensors)[N]) {
  StridedLayout<N> layout;
  for (int d = 0; d < tensors[0]->ndim; ++d) {
    int64_t strides[N];
    for (int k = 0; k < N; ++k) strides[k] = tensors[k]->strides[d];
    layout.push_dim(tensors[0]->shape[d], strides);
  }
  return coalesce(layout);
}

// A reduction (or softmax) split into the dims kept in the output and the
// dims reduced over. kept: operand 0 = out, 1 = src. reduced: operand 0 =
// src, 1 = out (used by softmax, whose out has the reduced dims too).
struct ReductionLayout {
  StridedLayout<2> kept;
  StridedLayout<2> reduced;
  int64_t kept_numel() const { return kept.numel(); }
  int64_t reduced_numel() const { return reduced.numel(); }
};

// Splits src's dims by `reduce_mask` (bit d set = dim d reduced). out_strides
// gives out's stride for every src dim (0 where out has no such dim).
ReductionLayout reduction_layout(const TensorDesc& src, const int64_t* out_strides, uint32_t reduce_mask);

}  // namespace oprt

#endif
