#include "layout.h"

namespace oprt {

ReductionLayout reduction_layout(const TensorDesc& src, const int64_t* out_strides, uint32_t reduce_mask) {
  StridedLayout<2> kept, reduced;
  for (int d = 0; d < src.ndim; ++d) {
    const int64_t strides[2] = {out_strides[d], src.strides[d]};
    if (reduce_mask & (1u << d)) {
      // Order reduced dims by src's strides: swap so src leads the sort.
      const int64_t swapped[2] = {src.strides[d], out_strides[d]};
      reduced.push_dim(src.shape[d], swapped);
    } else {
      kept.push_dim(src.shape[d], strides);
    }
  }
  ReductionLayout layout;
  layout.kept = coalesce(kept);
  layout.reduced = coalesce(reduced);
  return layout;
}

}  // namespace oprt
