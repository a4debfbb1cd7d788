// Summation loops shared by the CPU reductions: fixed summation orders, so a
// result depends only on the data and the descriptor, never on threads.
#ifndef OPRT_COMMON_CPU_REDUCE_H_
#define OPRT_COMMON_CPU_REDUCE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cpu_types.h"

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace oprt::cpu {

#ifdef __AVX2__
// Eight elements widened to float in one register.
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const half* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 load8(const bfloat16* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
template <class T>
constexpr bool has_load8 = std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
#else
template <class T>
constexpr bool has_load8 = false;
#endif

// sum += x with Kahan's compensation (comp: what earlier adds lost, sign
// reversed; the total is sum - comp): for a running sum of an unbounded
// count of folds, whose error then stays near one rounding. comp stays 0
// once sum overflows, so an infinite total does not turn into NaN.
template <class A>
inline void compensated_add(A& sum, A& comp, A x) {
  const A y = x - comp;
  const A t = sum + y;
  const A lost = (t - sum) - y;
  comp = std::abs(t) <= std::numeric_limits<A>::max() ? lost : A(0);
  sum = t;
}

// A running total of a sequence of partial sums, added pairwise (a binary
// counter: the k-th level holds the sum of 2^k consecutive partials), so the
// rounding error grows with log2 of the count, not the count: repeated
// runs of a broadcast (stride-0) input add thousands of same-signed partials.
template <class A>
class PairwiseTotal {
 public:
  void add(A value) {
    int level = 0;
    for (uint64_t carry = count_++; carry & 1; carry >>= 1) value = levels_[level++] + value;
    levels_[level] = value;
  }
  A total() const {
    A sum = 0;
    int level = 0;
    for (uint64_t bits = count_; bits; bits >>= 1, ++level)
      if (bits & 1) sum += levels_[level];
    return sum;
  }

 private:
  A levels_[64];
  uint64_t count_ = 0;
};

// Adds `count` groups of `width` partial sums (group c at part + c * width)
// pairwise, in place: level k adds groups 2^k apart, so each total's error
// grows with log2(count), and a broadcast sum of 2^36 equal terms (2^20
// chunk partials) stays near float32's rounding. Returns part (the totals).
template <class A>
A* add_pairwise(A* part, int64_t count, int64_t width) {
  for (int64_t step = 1; step < count; step *= 2)
    for (int64_t c = 0; c + step < count; c += 2 * step)
      for (int64_t j = 0; j < width; ++j) part[c * width + j] += part[(c + step) * width + j];
  return part;
}

// Rounds of kLanes elements a lane adds before its total is folded into the
// next level: a lane's serial chain stays short (torch's cascade sum folds
// every 16 too), so a float32 sum of millions of elements is as accurate as
// torch's; 128 rounds a lane made a 4M-element sum up to 10x less accurate.
constexpr int64_t kLaneRounds = 16;

// Sum of m <= 4096 contiguous elements: kLanes independent lanes, each
// folded into a second level every kLaneRounds rounds, then a fixed tree.
template <class T, int kLanes>
acc_t<T> sum_block(const T* q, int64_t m) {
  using A = acc_t<T>;
  alignas(32) A lanes[kLanes] = {};
  int64_t i = 0;
#ifdef __AVX2__
  if constexpr (has_load8<T>) {
    static_assert(kLanes == 32);
    const auto add_until = [&](int64_t end, __m256& a0, __m256& a1, __m256& a2, __m256& a3) {
      for (; i + kLanes <= end; i += kLanes) {
        a0 = _mm256_add_ps(a0, load8(q + i));
        a1 = _mm256_add_ps(a1, load8(q + i + 8));
        a2 = _mm256_add_ps(a2, load8(q + i + 16));
        a3 = _mm256_add_ps(a3, load8(q + i + 24));
      }
    };
    __m256 v0 = _mm256_setzero_ps(), v1 = v0, v2 = v0, v3 = v0;
    if (m <= kLaneRounds * kLanes) {  // a short block (a row of <= 512): one level
      add_until(m, v0, v1, v2, v3);
    } else {
      while (i + kLanes <= m) {
        __m256 p0 = _mm256_setzero_ps(), p1 = p0, p2 = p0, p3 = p0;
        add_until(std::min(m, i + kLaneRounds * kLanes), p0, p1, p2, p3);
        v0 = _mm256_add_ps(v0, p0);
        v1 = _mm256_add_ps(v1, p1);
        v2 = _mm256_add_ps(v2, p2);
        v3 = _mm256_add_ps(v3, p3);
      }
    }
    // Fold the 32 lanes to 8 in registers, add the tail, fold 8 -> 1.
    _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(v0, v2), _mm256_add_ps(v1, v3)));
    for (int j = 0; i < m; ++i, j = (j + 1) & 7) lanes[j] += to_float(q[i]);
    return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
  }
#endif
  while (i + kLanes <= m) {
    const int64_t end = i + std::min(kLaneRounds, (m - i) / kLanes) * kLanes;
    A part[kLanes] = {};
    for (; i < end; i += kLanes)
      for (int j = 0; j < kLanes; ++j) part[j] += to_float(q[i + j]);
    for (int j = 0; j < kLanes; ++j) lanes[j] += part[j];
  }
  for (int j = 0; i < m; ++i, ++j) lanes[j] += to_float(q[i]);
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  return lanes[0];
}

// block(start, count) summed over [0, n) in blocks of 4096, the block sums
// added pairwise.
template <class A, class Block>
A sum_in_blocks(int64_t n, Block block) {
  constexpr int64_t kBlock = 4096;
  if (n <= kBlock) return block(0, n);
  PairwiseTotal<A> total;
  for (int64_t start = 0; start < n; start += kBlock) total.add(block(start, std::min(kBlock, n - start)));
  return total.total();
}

template <class T>
acc_t<T> sum_contiguous(const T* p, int64_t n) {
  return sum_in_blocks<acc_t<T>>(n, [p](int64_t start, int64_t m) { return sum_block<T, 32>(p + start, m); });
}

// acc[0..64) += one row of 64 contiguous elements (the columns variant).
template <class T>
inline void add_row64(const T* q, acc_t<T>* acc) {
#ifdef __AVX2__
  if constexpr (has_load8<T>) {
    for (int k = 0; k < 64; k += 8) _mm256_storeu_ps(acc + k, _mm256_add_ps(_mm256_loadu_ps(acc + k), load8(q + k)));
    return;
  }
#endif
  for (int j = 0; j < 64; ++j) acc[j] += to_float(q[j]);
}

template <class T>
acc_t<T> sum_strided(const T* p, int64_t stride, int64_t n) {
  if (stride == 1) return sum_contiguous(p, n);
  // A broadcast run: n copies of one value, summed with one rounding
  // (adding them one by one drifts by up to n/4 roundings).
  if (stride == 0) return n > 0 ? to_float(p[0]) * static_cast<acc_t<T>>(n) : acc_t<T>(0);
  return sum_in_blocks<acc_t<T>>(n, [p, stride](int64_t start, int64_t m) {
    const T* q = p + start * stride;
    acc_t<T> lanes[4] = {};
    int64_t i = 0;
    for (; i + 4 <= m; i += 4)
      for (int j = 0; j < 4; ++j) lanes[j] += to_float(q[(i + j) * stride]);
    for (int j = 0; i < m; ++i, ++j) lanes[j] += to_float(q[i * stride]);
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  });
}

}  // namespace oprt::cpu

#endif
