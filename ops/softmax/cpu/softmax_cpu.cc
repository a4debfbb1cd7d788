// softmax on the CPU. Three passes over each row (max, sum of exp, write),
// the row staying in cache between them: one read of src and one write of
// out from memory. Variants: "rows" (the softmax dim contiguous), "columns"
// (the softmax dim strided but 64+ neighbouring rows contiguous, done as
// vectors across up to 1024 of them at once), "gather" (anything else: each
// row copied to a buffer first).
// Non-finite rows follow torch: any NaN or +inf, or all -inf, gives NaN.
#include "softmax_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "../../common/cpu/elementwise_cpu.h"
#include "../../common/cpu/vector_math.h"
#include "../../common/descriptor.h"
#include "../softmax_plan.h"

namespace oprt::cpu {
namespace {

constexpr int64_t kColumns = 64;            // the fewest contiguous rows the columns variant takes
constexpr int64_t kMaxBlockColumns = 1024;  // columns one block holds the stats of (12 KB)
constexpr int64_t kStackFloats = 8192;  // 32 KB of exp values for a 16-bit row
constexpr float kInf = std::numeric_limits<float>::infinity();

enum class Kind { kRows, kColumns, kGather };

struct SoftmaxCpu : oprt_descriptor {
  static constexpr const char* kName = "softmax/cpu";
  SoftmaxCpu() : oprt_descriptor(descriptor_tag(kName)) {}
  SoftmaxProblem p;
  Kind kind = Kind::kGather;
};

template <class T>
void fill_nan(T* y, int64_t stride, int64_t n) {
  const T nan = from_acc<T>(std::numeric_limits<acc_t<T>>::quiet_NaN());
  for (int64_t i = 0; i < n; ++i) y[i * stride] = nan;
}

// Softmax of n contiguous elements x into y (y may be x).
template <class T>
void softmax_contiguous(const T* x, T* y, int64_t n) {
#ifdef __AVX2__
  if constexpr (has_load8<T>) {
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
    if (_mm256_movemask_ps(vnan) || std::isinf(m)) return fill_nan(y, 1, n);
    const __m256 vm = _mm256_set1_ps(m);
    // exp(x - m) is kept in a float buffer so it is computed once: out itself
    // for float32, the stack for short 16-bit rows, else a per-thread buffer
    // that grows to the longest row seen.
    alignas(32) float stack[kStackFloats];
    float* e = stack;
    if constexpr (std::is_same_v<T, float>) {
      e = y;
    } else if (n > kStackFloats) {
      static thread_local std::vector<float> long_row;
      if (static_cast<int64_t>(long_row.size()) < n) long_row.resize(n);
      e = long_row.data();
    }
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (int64_t i = 0; i < body; i += 8) {
      const __m256 v = exp8_nonpositive(_mm256_sub_ps(load8(x + i), vm));
      _mm256_storeu_ps(e + i, v);
      if (i & 8) s1 = _mm256_add_ps(s1, v); else s0 = _mm256_add_ps(s0, v);
    }
    __m256 tail_exp = _mm256_setzero_ps();
    if (tail) s1 = _mm256_add_ps(s1, tail_exp = exp8_nonpositive(_mm256_sub_ps(load_tail(), vm)));
    const __m256 inv = _mm256_set1_ps(1.0f / horizontal_sum(_mm256_add_ps(s0, s1)));
    for (int64_t i = 0; i < body; i += 8) {
      store8(y + i, _mm256_mul_ps(_mm256_loadu_ps(e + i), inv));
    }
    if (tail) {
      _mm256_store_ps(pad, _mm256_mul_ps(tail_exp, inv));
      for (int j = 0; j < tail; ++j) y[body + j] = from_float<T>(pad[j]);
    }
    return;
  }
#endif
  using A = acc_t<T>;
  A m = -std::numeric_limits<A>::infinity();
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    const A v = to_float(x[i]);
    nan |= v != v;
    m = v > m ? v : m;
  }
  if (nan || std::isinf(m)) return fill_nan(y, 1, n);
  A s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(to_float(x[i]) - m);
  const A inv = A(1) / s;
  for (int64_t i = 0; i < n; ++i) y[i] = from_acc<T>(std::exp(to_float(x[i]) - m) * inv);
}

// Softmax down `width` neighbouring columns at once (a multiple of 8, at
// most kMaxBlockColumns): row r of the block starts at x + r * x_stride.
// The per-column max, NaN flags and sums live in L1-resident arrays; each
// pass walks the rows in order, so every row's part of the block is one
// contiguous run the hardware prefetcher follows. Returns false where this
// needs AVX2 it does not have.
template <class T>
bool softmax_column_block(const T* x, int64_t x_stride, T* y, int64_t y_stride, int64_t n, int64_t width) {
#ifdef __AVX2__
  if constexpr (has_load8<T>) {
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
    // Bad columns (NaN, +inf, all -inf) get an inverse of NaN, which the
    // multiply spreads to the whole column; vsum holds the inverses from here.
    for (int64_t c = 0; c < width; c += 8) {
      const __m256 m = _mm256_load_ps(vmax + c);
      const __m256 infinite = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), m), _mm256_set1_ps(kInf),
                                            _CMP_EQ_OQ);
      const __m256 bad = _mm256_or_ps(_mm256_load_ps(vbad + c), infinite);
      _mm256_store_ps(vsum + c, _mm256_blendv_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_load_ps(vsum + c)),
                                                 _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), bad));
      _mm256_store_ps(vmax + c, _mm256_blendv_ps(m, _mm256_setzero_ps(), bad));  // keep exp finite there
    }
    for (int64_t r = 0; r < n; ++r) {
      const T* row = x + r * x_stride;
      T* out_row = y + r * y_stride;
      for (int64_t c = 0; c < width; c += 8)
        store8(out_row + c, _mm256_mul_ps(exp8_nonpositive(_mm256_sub_ps(load8(row + c), _mm256_load_ps(vmax + c))),
                                          _mm256_load_ps(vsum + c)));
    }
    return true;
  }
#endif
  return false;
}

// One row through a contiguous buffer (any strides; buffer holds n elements).
template <class T>
void softmax_gather(const T* x, int64_t x_stride, T* y, int64_t y_stride, int64_t n, T* buffer) {
  for (int64_t i = 0; i < n; ++i) buffer[i] = x[i * x_stride];
  softmax_contiguous(buffer, buffer, n);
  for (int64_t i = 0; i < n; ++i) y[i * y_stride] = buffer[i];
}

SoftmaxCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, int32_t dim) {
  auto* d = new SoftmaxCpu;
  try {
    d->p = plan_softmax(out, src, dim);
  } catch (...) {
    delete d;
    throw;
  }
  const SoftmaxProblem& p = d->p;
  const bool avx_type = p.src.dtype != OPRT_DTYPE_F64;
#ifndef __AVX2__
  const bool columns_ok = false;
#else
  const bool columns_ok = avx_type;
#endif
  if (p.length <= 1 || (p.src_stride == 1 && p.out_stride == 1)) {
    d->kind = Kind::kRows;
  } else if (columns_ok && p.rows.inner_stride(0) == 1 && p.rows.inner_stride(1) == 1 && p.rows.inner_size() >= kColumns) {
    d->kind = Kind::kColumns;
  }
  d->variant = d->kind == Kind::kRows ? "rows" : d->kind == Kind::kColumns ? "columns" : "gather";
  return d;
}

template <class T>
void run(const SoftmaxCpu& d, T* out, const T* src) {
  const SoftmaxProblem& p = d.p;
  const StridedLayout<2>& rows = p.rows;
  const int sizes[2] = {static_cast<int>(sizeof(T)), static_cast<int>(sizeof(T))};
  char* const bases[2] = {reinterpret_cast<char*>(out), reinterpret_cast<char*>(const_cast<T*>(src))};
  const int64_t n = p.length, out_step = rows.inner_stride(0), src_step = rows.inner_stride(1);
  const int64_t row_grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1));
  if (d.kind == Kind::kColumns) {
    // Blocks of neighbouring rows, as wide as kMaxBlockColumns allows but at
    // least one block per thread (64-wide blocks with a 4 KB row stride ran
    // from cache misses a page at a time: 4096 x 1024 over dim 0 took 2.8-4.1
    // ms in 16 bits, torch 1.8). Columns past the last multiple of 8 of a
    // block go row by row through a buffer.
    const int64_t per_run = rows.inner_size(), runs = rows.numel() / per_run;
    const int64_t split = std::max<int64_t>(1, (max_threads() + runs - 1) / runs);
    const int64_t width = std::clamp<int64_t>(((per_run + split - 1) / split + 7) / 8 * 8, kColumns, kMaxBlockColumns);
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
        if (vectors > 0 && softmax_column_block(src + offsets[1], p.src_stride, out + offsets[0], p.out_stride, n,
                                                vectors))
          j = vectors;
        for (; j < count; ++j)
          softmax_gather(src + offsets[1] + j, p.src_stride, out + offsets[0] + j, p.out_stride, n, buffer.data());
      }
    });
    return;
  }
  parallel_for(rows.numel(), row_grain, [&](int64_t begin, int64_t end) {
    std::vector<T> buffer(d.kind == Kind::kGather ? n : 0);
    walk_runs(rows, bases, sizes, begin, end, [&](char* const* ptr, int64_t count) {
      T* y = reinterpret_cast<T*>(ptr[0]);
      const T* x = reinterpret_cast<const T*>(ptr[1]);
      for (int64_t i = 0; i < count; ++i) {
        if (d.kind == Kind::kRows)
          softmax_contiguous(x + i * src_step, y + i * out_step, n);
        else
          softmax_gather(x + i * src_step, p.src_stride, y + i * out_step, p.out_stride, n, buffer.data());
      }
    });
  });
}

void execute(const SoftmaxCpu& d, void* out, const void* src) {
  require_data(out, "out", d.p.out.numel);
  require_data(src, "src", d.p.src.numel);
  if (d.p.src.numel == 0) return;
  dispatch_dtype(d.p.src.dtype, [&](auto type) {
    using T = decltype(type);
    run<T>(d, static_cast<T*>(out), static_cast<const T*>(src));
  });
}

}  // namespace
}  // namespace oprt::cpu

using oprt::cpu::SoftmaxCpu;

extern "C" {

oprt_status_t oprt_create_softmax_descriptor_cpu(oprt_descriptor_t* desc, const oprt_tensor_view_t* out,
                                                 const oprt_tensor_view_t* src, int32_t dim) {
  return oprt::create_descriptor<SoftmaxCpu>(__func__, desc, [&] { return oprt::cpu::create(out, src, dim); });
}

oprt_status_t oprt_get_softmax_workspace_size_cpu(oprt_descriptor_t desc, size_t* workspace_bytes) {
  return oprt::get_workspace_size<SoftmaxCpu>(__func__, desc, workspace_bytes);
}

oprt_status_t oprt_execute_softmax_cpu(oprt_descriptor_t desc, void* workspace, size_t workspace_bytes, void* out,
                                       const void* src, void* /*stream*/) {
  return oprt::execute_descriptor<SoftmaxCpu>(__func__, desc, workspace, workspace_bytes,
                                              [&](const SoftmaxCpu& d) { oprt::cpu::execute(d, out, src); });
}

oprt_status_t oprt_destroy_softmax_descriptor_cpu(oprt_descriptor_t desc) {
  return oprt::destroy_descriptor<SoftmaxCpu>(__func__, desc);
}

}  // extern "C"
