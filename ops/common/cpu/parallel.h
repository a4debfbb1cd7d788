// parallel_for over [0, n): the range is cut into at most one piece per
// OpenMP thread. Kernels make every result independent of how the range is
// cut, so outputs are bitwise identical whatever the thread count.
#ifndef OPRT_COMMON_CPU_PARALLEL_H_
#define OPRT_COMMON_CPU_PARALLEL_H_

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace oprt::cpu {

inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// body(begin, end) for disjoint pieces covering [0, n). `grain` is the
// smallest piece worth a thread of its own.
template <class Body>
void parallel_for(int64_t n, int64_t grain, const Body& body) {
  if (n <= 0) return;
  int64_t pieces = std::min<int64_t>(max_threads(), (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (pieces <= 1) {
    body(int64_t{0}, n);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(static_cast<int>(pieces))
#endif
  for (int64_t piece = 0; piece < pieces; ++piece) {
    int64_t begin = n * piece / pieces, end = n * (piece + 1) / pieces;
    if (begin < end) body(begin, end);
  }
}

}  // namespace oprt::cpu

#endif
