// Element types of the CPU kernels, their conversions, and the dtype switch
// that instantiates a kernel template for each one.
#ifndef OPRT_COMMON_CPU_TYPES_H_
#define OPRT_COMMON_CPU_TYPES_H_

#include <cstdint>
#include <cstring>

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
