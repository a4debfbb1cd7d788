// The row machinery of the softmax family on the CPU: softmax, log_softmax
// (one input, a row's max and sum of exp) and their backwards (two inputs,
// a row's sum of a term of both). The drivers (variants, threads, row
// walking) are shared; an op is an epilogue over one of the two row kinds.
// Variants: "rows" (the dim contiguous in every tensor), "columns" (the dim
// strided but 64+ neighbouring rows contiguous, done as vectors across up
// to 1024 of them at once), "gather" (anything else: each row copied to a
// buffer first). Each row stays in cache between its passes: one read of
// each input and one write of out from memory.
//
// One input (softmax-like): each row takes three passes (max, sum of
// exp(x - max), write); an epilogue E turns a row's max m and sum s of
// exp(x - m) into each output value:
//   static constexpr bool kUsesExp;  // values from e = exp(x - m), else from x
//   A E::row_constant(A s);          // once per row, A = float or double
//   A E::value(A x, A e, A m, A c);  // c = row_constant(s); A also __m256
// value may be passed 0 for the one of x and e it does not use: a float32
// row done in place holds exp values where x was.
// A row holding a NaN or +inf, or only -inf, is all NaN, as torch gives it
// for both ops; the epilogue sees finite maxima only.
//
// Two inputs a, b (backward-like): two passes, the sum s of E::term(a, b)
// over the row (in blocks added pairwise), then the outputs:
//   A E::term(A a, A b);             // term(0, 0) must be 0 (pads vectors)
//   A E::value(A a, A b, A s);       // A = float, double or __m256
// No special rows: NaN and inf reach the outputs through the arithmetic, as
// in torch's backward kernels.
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

// The plan of an op of K inputs: operand 0 of p is out, then the inputs.
template <int K>
struct RowFamilyPlan {
  AlongDimProblem<K + 1> p;
  const char* names[K + 1] = {};
  SoftmaxKind kind = SoftmaxKind::kGather;
  const char* variant() const {
    return kind == SoftmaxKind::kRows ? "rows" : kind == SoftmaxKind::kColumns ? "columns" : "gather";
  }
};
using SoftmaxFamilyPlan = RowFamilyPlan<1>;

template <int K>
RowFamilyPlan<K> plan_row_family(const oprt_tensor_view_t* const (&views)[K + 1], const char* const (&names)[K + 1],
                                 int32_t dim) {
  RowFamilyPlan<K> plan;
  plan.p = plan_along_dim<K + 1>(views, names, dim);
  std::copy(names, names + K + 1, plan.names);
  const AlongDimProblem<K + 1>& p = plan.p;
#ifdef __AVX2__
  const bool vectors_ok = p.t[0].dtype != OPRT_DTYPE_F64;
#else
  const bool vectors_ok = false;
#endif
  bool rows = true, columns = vectors_ok && p.rows.inner_size() >= kSoftmaxColumns;
  for (int k = 0; k <= K; ++k) {
    rows &= p.stride[k] == 1;
    columns &= p.rows.inner_stride(k) == 1;
  }
  if (p.length <= 1 || rows)
    plan.kind = SoftmaxKind::kRows;
  else if (columns)
    plan.kind = SoftmaxKind::kColumns;
  return plan;
}

inline SoftmaxFamilyPlan plan_softmax_family(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src,
                                             int32_t dim) {
  return plan_row_family<1>({out, src}, {"out", "src"}, dim);
}

// ---- one input: max, sum of exp, write ---------------------------------------------
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

// ---- two inputs: a sum of terms, write ---------------------------------------------
// One row of n contiguous elements of a and b into y (y may be a or b),
// eight lanes at a time: blocks of kRowBlock elements summed in two
// accumulators, the block sums added pairwise (the error grows with the log
// of the row length). Returns false where this needs AVX2 it does not have.
template <class T, class E>
bool sum_row_vectors(const T* a, const T* b, T* y, int64_t n) {
#ifdef __AVX2__
  if constexpr (has_load8<T>) {
    const int64_t body = n & ~int64_t(7), tail = n - body;
    alignas(32) float pad_a[8] = {}, pad_b[8] = {};  // the last n % 8 elements, zero padded (term 0)
    for (int j = 0; j < tail; ++j) {
      pad_a[j] = to_float(a[body + j]);
      pad_b[j] = to_float(b[body + j]);
    }
    constexpr int64_t kRowBlock = 2 * kLaneRounds * 8;
    PairwiseTotal<float> blocks;
    for (int64_t start = 0; start < body || (start == 0 && tail); start += kRowBlock) {
      __m256 s0 = _mm256_setzero_ps(), s1 = s0;
      for (int64_t i = start; i < std::min(body, start + kRowBlock); i += 8) {
        const __m256 t = E::term(load8(a + i), load8(b + i));
        if (i & 8) s1 = _mm256_add_ps(s1, t); else s0 = _mm256_add_ps(s0, t);
      }
      if (tail && start + kRowBlock >= body)
        s1 = _mm256_add_ps(s1, E::term(_mm256_load_ps(pad_a), _mm256_load_ps(pad_b)));
      blocks.add(horizontal_sum(_mm256_add_ps(s0, s1)));
    }
    const __m256 s = _mm256_set1_ps(blocks.total());
    for (int64_t i = 0; i < body; i += 8) store8(y + i, E::value(load8(a + i), load8(b + i), s));
    if (tail) {
      _mm256_store_ps(pad_a, E::value(_mm256_load_ps(pad_a), _mm256_load_ps(pad_b), s));
      for (int j = 0; j < tail; ++j) y[body + j] = from_float<T>(pad_a[j]);
    }
    return true;
  }
#endif
  return false;
}

template <class T, class E>
void sum_row_contiguous(const T* a, const T* b, T* y, int64_t n) {
  if (sum_row_vectors<T, E>(a, b, y, n)) return;
  using A = acc_t<T>;
  const A s = sum_in_blocks<A>(n, [&](int64_t start, int64_t count) {
    A part = 0;
    for (int64_t i = start; i < start + count; ++i) part += E::term(A(to_float(a[i])), A(to_float(b[i])));
    return part;
  });
  for (int64_t i = 0; i < n; ++i) y[i] = from_acc<T>(E::value(A(to_float(a[i])), A(to_float(b[i])), s));
}

// The op down `width` neighbouring columns at once (a multiple of 8, at
// most kMaxBlockColumns), as column_block: the per-column sums live in an
// L1-resident array, each pass walks the rows in order.
template <class T, class E>
bool sum_column_block(const T* a, int64_t a_stride, const T* b, int64_t b_stride, T* y, int64_t y_stride, int64_t n,
                      int64_t width) {
#ifdef __AVX2__
  if constexpr (has_load8<T>) {
    alignas(32) float vsum[kMaxBlockColumns];
    for (int64_t c = 0; c < width; c += 8) _mm256_store_ps(vsum + c, _mm256_setzero_ps());
    for (int64_t r = 0; r < n; ++r) {
      const T *ra = a + r * a_stride, *rb = b + r * b_stride;
      for (int64_t c = 0; c < width; c += 8)
        _mm256_store_ps(vsum + c, _mm256_add_ps(_mm256_load_ps(vsum + c), E::term(load8(ra + c), load8(rb + c))));
    }
    for (int64_t r = 0; r < n; ++r) {
      const T *ra = a + r * a_stride, *rb = b + r * b_stride;
      T* out_row = y + r * y_stride;
      for (int64_t c = 0; c < width; c += 8)
        store8(out_row + c, E::value(load8(ra + c), load8(rb + c), _mm256_load_ps(vsum + c)));
    }
    return true;
  }
#endif
  return false;
}

// ---- the drivers ---------------------------------------------------------------------
// The rows of an op, R: R::kInputs inputs and
//   template <class T> static void row(const T* const (&x)[K], T* y, int64_t n);
//       one row, contiguous in every tensor (y may be one of x)
//   template <class T> static bool columns(const T* const (&x)[K], const int64_t (&x_stride)[K], T* y,
//                                          int64_t y_stride, int64_t n, int64_t width);
//       column_block's contract
template <class E>
struct SoftmaxRows {
  static constexpr int kInputs = 1;
  template <class T>
  static void row(const T* const (&x)[1], T* y, int64_t n) { row_contiguous<T, E>(x[0], y, n); }
  template <class T>
  static bool columns(const T* const (&x)[1], const int64_t (&xs)[1], T* y, int64_t ys, int64_t n, int64_t width) {
    return column_block<T, E>(x[0], xs[0], y, ys, n, width);
  }
};

template <class E>
struct RowSumRows {
  static constexpr int kInputs = 2;
  template <class T>
  static void row(const T* const (&x)[2], T* y, int64_t n) { sum_row_contiguous<T, E>(x[0], x[1], y, n); }
  template <class T>
  static bool columns(const T* const (&x)[2], const int64_t (&xs)[2], T* y, int64_t ys, int64_t n, int64_t width) {
    return sum_column_block<T, E>(x[0], xs[0], x[1], xs[1], y, ys, n, width);
  }
};

// One row through a contiguous buffer (any strides; buffer holds K * n
// elements, out's row computed in place over the first input's copy).
template <class T, class R, int K = R::kInputs>
void row_gather(const T* const (&x)[K], const int64_t (&x_stride)[K], T* y, int64_t y_stride, int64_t n,
                T* buffer) {
  const T* rows[K];
  for (int k = 0; k < K; ++k) {
    T* copy = buffer + k * n;
    for (int64_t i = 0; i < n; ++i) copy[i] = x[k][i * x_stride[k]];
    rows[k] = copy;
  }
  R::row(rows, buffer, n);
  for (int64_t i = 0; i < n; ++i) y[i * y_stride] = buffer[i];
}

// The columns variant: blocks of neighbouring rows, as wide as
// kMaxBlockColumns allows but at least one block per thread (64-wide blocks
// with a 4 KB row stride ran from cache misses a page at a time: 4096 x 1024
// over dim 0 took 2.8-4.1 ms in 16 bits, torch 1.8). Columns past the last
// multiple of 8 of a block go row by row through a buffer.
template <class T, class R, int K = R::kInputs>
void run_columns(const AlongDimProblem<K + 1>& p, T* out, const T* const (&in)[K]) {
  const StridedLayout<K + 1>& rows = p.rows;
  const int64_t n = p.length, per_run = rows.inner_size(), runs = rows.numel() / per_run;
  const int64_t split = std::max<int64_t>(1, (max_threads() + runs - 1) / runs);
  const int64_t width =
      std::clamp<int64_t>(((per_run + split - 1) / split + 7) / 8 * 8, kSoftmaxColumns, kMaxBlockColumns);
  const int64_t blocks_per_run = (per_run + width - 1) / width;
  int64_t x_stride[K];
  for (int k = 0; k < K; ++k) x_stride[k] = p.stride[k + 1];
  parallel_for(runs * blocks_per_run, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> buffer(n * K);
    for (int64_t b = begin; b < end; ++b) {
      const int64_t first = b / blocks_per_run * per_run + b % blocks_per_run * width;
      const int64_t count = std::min(width, per_run - b % blocks_per_run * width);
      int64_t offsets[K + 1];
      offsets_at(rows, first, offsets);
      const T* x[K];
      for (int k = 0; k < K; ++k) x[k] = in[k] + offsets[k + 1];
      T* y = out + offsets[0];
      const int64_t vectors = count / 8 * 8;
      int64_t j = 0;
      if (vectors > 0 && R::columns(x, x_stride, y, p.stride[0], n, vectors)) j = vectors;
      for (; j < count; ++j) {
        const T* xj[K];
        for (int k = 0; k < K; ++k) xj[k] = x[k] + j;
        row_gather<T, R>(xj, x_stride, y + j, p.stride[0], n, buffer.data());
      }
    }
  });
}

template <class T, class R, int K = R::kInputs>
void run_row_family_typed(const RowFamilyPlan<K>& plan, T* out, const T* const (&in)[K]) {
  const AlongDimProblem<K + 1>& p = plan.p;
  if (plan.kind == SoftmaxKind::kColumns) return run_columns<T, R>(p, out, in);
  const StridedLayout<K + 1>& rows = p.rows;
  int sizes[K + 1];
  char* bases[K + 1] = {reinterpret_cast<char*>(out)};
  int64_t x_stride[K];
  for (int k = 0; k <= K; ++k) sizes[k] = static_cast<int>(sizeof(T));
  for (int k = 0; k < K; ++k) {
    bases[k + 1] = reinterpret_cast<char*>(const_cast<T*>(in[k]));
    x_stride[k] = p.stride[k + 1];
  }
  const int64_t n = p.length;
  const int64_t row_grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1));
  parallel_for(rows.numel(), row_grain, [&](int64_t begin, int64_t end) {
    std::vector<T> buffer(plan.kind == SoftmaxKind::kGather ? n * K : 0);
    walk_runs(rows, bases, sizes, begin, end, [&](char* const* ptr, int64_t count) {
      T* y = reinterpret_cast<T*>(ptr[0]);
      for (int64_t i = 0; i < count; ++i) {
        const T* x[K];
        for (int k = 0; k < K; ++k) x[k] = reinterpret_cast<const T*>(ptr[k + 1]) + i * rows.inner_stride(k + 1);
        T* yi = y + i * rows.inner_stride(0);
        if (plan.kind == SoftmaxKind::kRows)
          R::row(x, yi, n);
        else
          row_gather<T, R>(x, x_stride, yi, p.stride[0], n, buffer.data());
      }
    });
  });
}

// The op of rows R over every row, as planned.
template <class R, int K = R::kInputs>
void run_row_family(const RowFamilyPlan<K>& plan, void* out, const void* const (&in)[K]) {
  const int64_t numel = plan.p.t[0].numel;
  require_data(out, plan.names[0], numel);
  for (int k = 0; k < K; ++k) require_data(in[k], plan.names[k + 1], numel);
  if (numel == 0) return;
  dispatch_dtype(plan.p.t[0].dtype, [&](auto type) {
    using T = decltype(type);
    const T* typed[K];
    for (int k = 0; k < K; ++k) typed[k] = static_cast<const T*>(in[k]);
    run_row_family_typed<T, R>(plan, static_cast<T*>(out), typed);
  });
}

// softmax-like: epilogue E of one input.
template <class E>
void run_softmax_family(const SoftmaxFamilyPlan& plan, void* out, const void* src) {
  run_row_family<SoftmaxRows<E>>(plan, out, {src});
}

// backward-like: epilogue E of two inputs.
template <class E>
void run_row_sum_family(const RowFamilyPlan<2>& plan, void* out, const void* a, const void* b) {
  run_row_family<RowSumRows<E>>(plan, out, {a, b});
}

}  // namespace oprt::cpu

#endif
