// The row machinery of the softmax family on the CPU (softmax, log_softmax).
// Each row along the op's dim takes three passes (max, sum of exp(x - max),
// write), the row staying in cache between them: one read of src and one
// write of out from memory. Variants: "rows" (the dim contiguous), "columns"
// (the dim strided but 64+ neighbouring rows contiguous, done as vectors
// across up to 1024 of them at once), "gather" (anything else: each row
// copied to a buffer first).
//
// An op supplies an epilogue E, which turns a row's max m and sum s of
// exp(x - m) into each output value:
//   static constexpr bool kUsesExp;  // values from e = exp(x - m), else from x
//   A E::row_constant(A s);          // once per row, A = float or double
//   A E::value(A x, A e, A m, A c);  // c = row_constant(s); A also __m256
// value may be passed 0 for the one of x and e it does not use: a float32
// row done in place holds exp values where x was.
// A row holding a NaN or +inf, or only -inf, is all NaN, as torch gives it
// for both ops; the epilogue sees finite maxima only.
#ifndef OPRT_COMMON_CPU_SOFTMAX_FAMILY_H_
#define OPRT_COMMON_CPU_SOFTMAX_FAMILY_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "../descriptor.h"
#include "../softmax_plan.h"
#include "elementwise_cpu.h"
#include "vector_math.h"

namespace oprt::cpu {

constexpr int64_t kSoftmaxColumns = 64;     // the fewest contiguous rows the columns variant takes
constexpr int64_t kMaxBlockColumns = 1024;  // columns one block holds the stats of (12 KB)
constexpr int64_t kStackFloats = 8192;      // 32 KB of exp values for a 16-bit row

enum class SoftmaxKind { kRows, kColumns, kGather };

struct SoftmaxFamilyPlan {
  SoftmaxProblem p;
  SoftmaxKind kind = SoftmaxKind::kGather;
  const char* variant() const {
    return kind == SoftmaxKind::kRows ? "rows" : kind == SoftmaxKind::kColumns ? "columns" : "gather";
  }
};

inline SoftmaxFamilyPlan plan_softmax_family(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src,
                                             int32_t dim) {
  SoftmaxFamilyPlan plan;
  plan.p = plan_softmax(out, src, dim);
  const SoftmaxProblem& p = plan.p;
#ifdef __AVX2__
  const bool columns_ok = p.src.dtype != OPRT_DTYPE_F64;
#else
  const bool columns_ok = false;
#endif
  if (p.length <= 1 || (p.src_stride == 1 && p.out_stride == 1))
    plan.kind = SoftmaxKind::kRows;
  else if (columns_ok && p.rows.inner_stride(0) == 1 && p.rows.inner_stride(1) == 1 &&
           p.rows.inner_size() >= kSoftmaxColumns)
    plan.kind = SoftmaxKind::kColumns;
  return plan;
}

template <class T>
void fill_nan(T* y, int64_t stride, int64_t n) {
  const T nan = from_acc<T>(std::numeric_limits<acc_t<T>>::quiet_NaN());
  for (int64_t i = 0; i < n; ++i) y[i * stride] = nan;
}

// One row of n contiguous elements x into y (y may be x), eight lanes at a
// time. Returns false where this needs AVX2 it does not have.
template <class T, class E>
bool row_vectors(const T* x, T* y, int64_t n) {
#ifdef __AVX2__
  if constexpr (has_load8<T>) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    const int64_t body = n & ~int64_t(7), tail = n - body;
    alignas(32) float pad[8];
    auto load_tail = [&] {  // the last n % 8 elements, padded with -inf (exp -> 0)
      for (int j = 0; j < 8; ++j) pad[j] = j < tail ? to_float(x[body + j]) : -kInf;
      return _mm256_load_ps(pad);
    };
    __m256 vmax = _mm256_set1_ps(-kInf), vnan = _mm256_setzero_ps();
    for (int64_t i = 0; i < body; i += 8) {
      const __m256 v = load8(x + i);
      vmax = _mm256_max_ps(vmax, v);
      vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    if (tail) {
      const __m256 v = load_tail();
      vmax = _mm256_max_ps(vmax, v);
      vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    const float m = horizontal_max(vmax);
    if (_mm256_movemask_ps(vnan) || std::isinf(m)) return fill_nan(y, 1, n), true;
    const __m256 vm = _mm256_set1_ps(m);
    // Where the values need exp(x - m), it is kept in a float buffer so it
    // is computed once: out itself for float32, the stack for short 16-bit
    // rows, else a per-thread buffer that grows to the longest row seen.
    alignas(32) float stack[E::kUsesExp ? kStackFloats : 8];
    float* e = stack;
    if constexpr (std::is_same_v<T, float>) {
      e = y;
    } else if (E::kUsesExp && n > kStackFloats) {
      static thread_local std::vector<float> long_row;
      if (static_cast<int64_t>(long_row.size()) < n) long_row.resize(n);
      e = long_row.data();
    }
    // Blocks of kRowBlock elements summed in two accumulators, the block
    // sums added pairwise: the sum's error grows with the log of the row
    // length, not with the length (a long row's lanes were serial chains).
    constexpr int64_t kRowBlock = 2 * kLaneRounds * 8;
    PairwiseTotal<float> blocks;
    __m256 tail_exp = _mm256_setzero_ps();
    for (int64_t start = 0; start < body || (start == 0 && tail); start += kRowBlock) {
      __m256 s0 = _mm256_setzero_ps(), s1 = s0;
      for (int64_t i = start; i < std::min(body, start + kRowBlock); i += 8) {
        const __m256 v = exp8_nonpositive(_mm256_sub_ps(load8(x + i), vm));
        if constexpr (E::kUsesExp) _mm256_storeu_ps(e + i, v);
        if (i & 8) s1 = _mm256_add_ps(s1, v); else s0 = _mm256_add_ps(s0, v);
      }
      if (tail && start + kRowBlock >= body)
        s1 = _mm256_add_ps(s1, tail_exp = exp8_nonpositive(_mm256_sub_ps(load_tail(), vm)));
      blocks.add(horizontal_sum(_mm256_add_ps(s0, s1)));
    }
    const __m256 c = _mm256_set1_ps(E::row_constant(blocks.total()));
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t i = 0; i < body; i += 8) {
      const __m256 v = E::kUsesExp ? E::value(zero, _mm256_loadu_ps(e + i), vm, c) : E::value(load8(x + i), zero, vm, c);
      store8(y + i, v);
    }
    if (tail) {
      _mm256_store_ps(pad, E::value(load_tail(), tail_exp, vm, c));
      for (int j = 0; j < tail; ++j) y[body + j] = from_float<T>(pad[j]);
    }
    return true;
  }
#endif
  return false;
}

// One row of n contiguous elements x into y (y may be x).
template <class T, class E>
void row_contiguous(const T* x, T* y, int64_t n) {
  if (row_vectors<T, E>(x, y, n)) return;
  using A = acc_t<T>;
  A m = -std::numeric_limits<A>::infinity();
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    const A v = to_float(x[i]);
    nan |= v != v;
    m = v > m ? v : m;
  }
  if (nan || std::isinf(m)) return fill_nan(y, 1, n);
  const A s = sum_in_blocks<A>(n, [&](int64_t start, int64_t count) {
    A part = 0;
    for (int64_t i = start; i < start + count; ++i) part += std::exp(to_float(x[i]) - m);
    return part;
  });
  const A c = E::row_constant(s);
  for (int64_t i = 0; i < n; ++i) {
    const A v = to_float(x[i]);
    y[i] = from_acc<T>(E::value(v, E::kUsesExp ? std::exp(v - m) : A(0), m, c));
  }
}

// The op down `width` neighbouring columns at once (a multiple of 8, at
// most kMaxBlockColumns): row r of the block starts at x + r * x_stride.
// The per-column max, NaN flags and sums live in L1-resident arrays; each
// pass walks the rows in order, so every row's part of the block is one
// contiguous run the hardware prefetcher follows. Returns false where this
// needs AVX2 it does not have.
template <class T, class E>
bool column_block(const T* x, int64_t x_stride, T* y, int64_t y_stride, int64_t n, int64_t width) {
#ifdef __AVX2__
  if constexpr (has_load8<T>) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    alignas(32) float vmax[kMaxBlockColumns], vbad[kMaxBlockColumns], vsum[kMaxBlockColumns];
    for (int64_t c = 0; c < width; c += 8) {
      _mm256_store_ps(vmax + c, _mm256_set1_ps(-kInf));
      _mm256_store_ps(vbad + c, _mm256_setzero_ps());
      _mm256_store_ps(vsum + c, _mm256_setzero_ps());
    }
    for (int64_t r = 0; r < n; ++r) {
      const T* row = x + r * x_stride;
      for (int64_t c = 0; c < width; c += 8) {
        const __m256 v = load8(row + c);
        _mm256_store_ps(vmax + c, _mm256_max_ps(_mm256_load_ps(vmax + c), v));
        _mm256_store_ps(vbad + c, _mm256_or_ps(_mm256_load_ps(vbad + c), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
      }
    }
    for (int64_t r = 0; r < n; ++r) {
      const T* row = x + r * x_stride;
      for (int64_t c = 0; c < width; c += 8)
        _mm256_store_ps(vsum + c, _mm256_add_ps(_mm256_load_ps(vsum + c),
                                                exp8_nonpositive(_mm256_sub_ps(load8(row + c), _mm256_load_ps(vmax + c)))));
    }
    // vsum holds the row constants from here. Bad columns (NaN, +inf, all
    // -inf) get a constant of NaN, which every epilogue spreads to the whole
    // column, and a max of 0, which keeps exp finite there.
    for (int64_t c = 0; c < width; ++c) vsum[c] = E::row_constant(vsum[c]);
    for (int64_t c = 0; c < width; c += 8) {
      const __m256 m = _mm256_load_ps(vmax + c);
      const __m256 infinite = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), m), _mm256_set1_ps(kInf),
                                            _CMP_EQ_OQ);
      const __m256 bad = _mm256_or_ps(_mm256_load_ps(vbad + c), infinite);
      _mm256_store_ps(vsum + c, _mm256_blendv_ps(_mm256_load_ps(vsum + c),
                                                 _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), bad));
      _mm256_store_ps(vmax + c, _mm256_blendv_ps(m, _mm256_setzero_ps(), bad));
    }
    for (int64_t r = 0; r < n; ++r) {
      const T* row = x + r * x_stride;
      T* out_row = y + r * y_stride;
      for (int64_t c = 0; c < width; c += 8) {
        const __m256 v = load8(row + c), m = _mm256_load_ps(vmax + c);
        const __m256 e = E::kUsesExp ? exp8_nonpositive(_mm256_sub_ps(v, m)) : _mm256_setzero_ps();
        store8(out_row + c, E::value(v, e, m, _mm256_load_ps(vsum + c)));
      }
    }
    return true;
  }
#endif
  return false;
}

// One row through a contiguous buffer (any strides; buffer holds n elements).
template <class T, class E>
void row_gather(const T* x, int64_t x_stride, T* y, int64_t y_stride, int64_t n, T* buffer) {
  for (int64_t i = 0; i < n; ++i) buffer[i] = x[i * x_stride];
  row_contiguous<T, E>(buffer, buffer, n);
  for (int64_t i = 0; i < n; ++i) y[i * y_stride] = buffer[i];
}

// The columns variant: blocks of neighbouring rows, as wide as
// kMaxBlockColumns allows but at least one block per thread (64-wide blocks
// with a 4 KB row stride ran from cache misses a page at a time: 4096 x 1024
// over dim 0 took 2.8-4.1 ms in 16 bits, torch 1.8). Columns past the last
// multiple of 8 of a block go row by row through a buffer.
template <class T, class E>
void run_columns(const SoftmaxProblem& p, T* out, const T* src) {
  const StridedLayout<2>& rows = p.rows;
  const int64_t n = p.length, per_run = rows.inner_size(), runs = rows.numel() / per_run;
  const int64_t split = std::max<int64_t>(1, (max_threads() + runs - 1) / runs);
  const int64_t width =
      std::clamp<int64_t>(((per_run + split - 1) / split + 7) / 8 * 8, kSoftmaxColumns, kMaxBlockColumns);
  const int64_t blocks_per_run = (per_run + width - 1) / width;
  parallel_for(runs * blocks_per_run, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> buffer(n);
    for (int64_t b = begin; b < end; ++b) {
      const int64_t first = b / blocks_per_run * per_run + b % blocks_per_run * width;
      const int64_t count = std::min(width, per_run - b % blocks_per_run * width);
      int64_t offsets[2];
      offsets_at(rows, first, offsets);
      const int64_t vectors = count / 8 * 8;
      int64_t j = 0;
      if (vectors > 0 &&
          column_block<T, E>(src + offsets[1], p.src_stride, out + offsets[0], p.out_stride, n, vectors))
        j = vectors;
      for (; j < count; ++j)
        row_gather<T, E>(src + offsets[1] + j, p.src_stride, out + offsets[0] + j, p.out_stride, n, buffer.data());
    }
  });
}

template <class T, class E>
void run_softmax_family_typed(const SoftmaxFamilyPlan& plan, T* out, const T* src) {
  const SoftmaxProblem& p = plan.p;
  if (plan.kind == SoftmaxKind::kColumns) return run_columns<T, E>(p, out, src);
  const StridedLayout<2>& rows = p.rows;
  const int sizes[2] = {static_cast<int>(sizeof(T)), static_cast<int>(sizeof(T))};
  char* const bases[2] = {reinterpret_cast<char*>(out), reinterpret_cast<char*>(const_cast<T*>(src))};
  const int64_t n = p.length, out_step = rows.inner_stride(0), src_step = rows.inner_stride(1);
  const int64_t row_grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1));
  parallel_for(rows.numel(), row_grain, [&](int64_t begin, int64_t end) {
    std::vector<T> buffer(plan.kind == SoftmaxKind::kGather ? n : 0);
    walk_runs(rows, bases, sizes, begin, end, [&](char* const* ptr, int64_t count) {
      T* y = reinterpret_cast<T*>(ptr[0]);
      const T* x = reinterpret_cast<const T*>(ptr[1]);
      for (int64_t i = 0; i < count; ++i) {
        if (plan.kind == SoftmaxKind::kRows)
          row_contiguous<T, E>(x + i * src_step, y + i * out_step, n);
        else
          row_gather<T, E>(x + i * src_step, p.src_stride, y + i * out_step, p.out_stride, n, buffer.data());
      }
    });
  });
}

// The op of epilogue E over every row, as planned.
template <class E>
void run_softmax_family(const SoftmaxFamilyPlan& plan, void* out, const void* src) {
  require_data(out, "out", plan.p.out.numel);
  require_data(src, "src", plan.p.src.numel);
  if (plan.p.src.numel == 0) return;
  dispatch_dtype(plan.p.src.dtype, [&](auto type) {
    using T = decltype(type);
    run_softmax_family_typed<T, E>(plan, static_cast<T*>(out), static_cast<const T*>(src));
  });
}

}  // namespace oprt::cpu

#endif
