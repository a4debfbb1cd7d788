// Element types of the CPU kernels, their conversions, and the dtype switch
// that instantiates a kernel template for each one.
#ifndef OPRT_COMMON_CPU_TYPES_H_
#define OPRT_COMMON_CPU_TYPES_H_

#include <cstdint>
#include <cstring>

#ifdef __F16C__
#include <immintrin.h>
#endif

#include "../error.h"
#include "../tensor.h"

namespace oprt::cpu {

using half = _Float16;  // IEEE binary16; F16C converts it in hardware

struct bfloat16 {  // storage only; arithmetic goes through float
  uint16_t bits;
};

// Widening loads and rounding stores. Accumulation type: float for the
// 16-bit types and float32, double for float64.
inline float to_float(float x) { return x; }
inline float to_float(half x) { return static_cast<float>(x); }
inline float to_float(bfloat16 x) {
  uint32_t u = static_cast<uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline double to_float(double x) { return x; }

template <class T>
struct Accumulate {
  using type = float;
};
template <>
struct Accumulate<double> {
  using type = double;
};
template <class T>
using acc_t = typename Accumulate<T>::type;

template <class T>
inline T from_float(float x);
template <>
inline float from_float<float>(float x) { return x; }
template <>
inline half from_float<half>(float x) { return static_cast<half>(x); }
template <>
inline bfloat16 from_float<bfloat16>(float x) {  // round to nearest even; NaN stays a NaN of its sign
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  uint16_t rounded = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return bfloat16{x != x ? static_cast<uint16_t>((u >> 16) | 0x40u) : rounded};
}
template <>
inline double from_float<double>(float x) { return x; }

template <class T>
inline T from_acc(acc_t<T> x) { return from_float<T>(x); }
template <>
inline double from_acc<double>(double x) { return x; }

// Converts one element between any two supported types (via the wider of
// their accumulation types, so float64 -> float64 is exact).
template <class To, class From>
inline To convert(From x) {
  if constexpr (sizeof(acc_t<To>) > sizeof(acc_t<From>)) return static_cast<To>(to_float(x));
  else return from_acc<To>(static_cast<acc_t<To>>(to_float(x)));
}

// Bulk conversions of a short contiguous run through a float buffer. The
// compiler vectorizes these (F16C for half, integer ops for bfloat16) where
// it cannot vectorize an element-wise loop whose stores may alias its loads.
constexpr int64_t kTile = 512;
template <class T>
inline void load_floats(const T* __restrict src, float* __restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_float(src[i]);
}
template <class T>
inline void store_floats(const float* __restrict src, T* __restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = from_float<T>(src[i]);
}
#ifdef __F16C__
// GCC does not vectorize _Float16 conversions; F16C does eight at a time.
template <>
inline void load_floats<half>(const half* __restrict src, float* __restrict dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = to_float(src[i]);
}
template <>
inline void store_floats<half>(const float* __restrict src, half* __restrict dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) dst[i] = from_float<half>(src[i]);
}
#endif
// True for the storage-only 16-bit types, which go through float tiles.
template <class T>
constexpr bool is_16bit = sizeof(T) == 2;

// Calls f(T{}) with T the element type of `dtype`.
template <class F>
void dispatch_dtype(int32_t dtype, F&& f) {
  switch (dtype) {
    case OPRT_DTYPE_F16: f(half{}); return;
    case OPRT_DTYPE_F32: f(float{}); return;
    case OPRT_DTYPE_BF16: f(bfloat16{}); return;
    case OPRT_DTYPE_F64: f(double{}); return;
  }
  fail(OPRT_STATUS_UNSUPPORTED_DTYPE, "dtype code %d has no CPU kernel", dtype);
}

}  // namespace oprt::cpu

#endif
