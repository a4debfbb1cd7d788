// Parallel traversal of an N-operand StridedLayout for elementwise CPU
// kernels: the element range is split across threads, and each thread walks
// its part as runs along the innermost dim.
#ifndef OPRT_COMMON_CPU_ELEMENTWISE_H_
#define OPRT_COMMON_CPU_ELEMENTWISE_H_

#include <cstdint>

#include "../layout.h"
#include "parallel.h"

namespace oprt::cpu {

constexpr int64_t kElementwiseGrain = 1 << 15;  // elements per thread, at least

// run(ptrs, count) is called for consecutive runs of elements [begin, end)
// along the innermost dim; ptrs[k] points at operand k's first element of
// the run, whose elements lie layout.inner_stride(k) elements apart.
template <int N, class Run>
void walk_runs(const StridedLayout<N>& layout, char* const (&base)[N], const int (&element_size)[N], int64_t begin,
               int64_t end, Run&& run) {
  const int outer_dims = layout.ndim > 0 ? layout.ndim - 1 : 0;
  const int64_t inner = layout.inner_size();
  int64_t index[kMaxDims] = {};
  int64_t row = begin / inner, column = begin % inner;
  for (int d = outer_dims - 1; d >= 0; --d) {  // multi-index of the first row
    index[d] = row % layout.shape[d];
    row /= layout.shape[d];
  }
  char* ptr[N];
  for (int k = 0; k < N; ++k) {
    int64_t offset = column * layout.inner_stride(k);
    for (int d = 0; d < outer_dims; ++d) offset += index[d] * layout.strides[k][d];
    ptr[k] = base[k] + offset * element_size[k];
  }
  for (int64_t position = begin; position < end;) {
    const int64_t count = std::min(inner - column, end - position);
    run(ptr, count);
    position += count;
    column = 0;
    // Step the outer multi-index (an odometer) and point at the next row.
    for (int d = outer_dims - 1; d >= 0; --d) {
      if (++index[d] < layout.shape[d]) break;
      index[d] = 0;
    }
    for (int k = 0; k < N; ++k) {
      int64_t offset = 0;
      for (int d = 0; d < outer_dims; ++d) offset += index[d] * layout.strides[k][d];
      ptr[k] = base[k] + offset * element_size[k];
    }
  }
}

// walk_runs over the whole layout, split across threads (at least `grain`
// elements each).
template <int N, class Run>
void parallel_runs(const StridedLayout<N>& layout, char* const (&base)[N], const int (&element_size)[N],
                   const Run& run, int64_t grain = kElementwiseGrain) {
  parallel_for(layout.numel(), grain, [&](int64_t begin, int64_t end) {
    walk_runs(layout, base, element_size, begin, end, run);
  });
}

}  // namespace oprt::cpu

#endif
