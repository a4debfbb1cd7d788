// Stand-in for <cuda_fp16.h> on the emulated GPU: __half and the
// conversions the kernels use, rounding to nearest even as CUDA's _rn ones
// do (NaN becomes CUDA's canonical 0x7fff).
#ifndef OPRT_EMULATION_CUDA_FP16_H_
#define OPRT_EMULATION_CUDA_FP16_H_

#include <cmath>
#include <cstdint>

#include "emulated_gpu.h"

struct __half {
  uint16_t bits;
};
struct __half2 {
  __half x, y;
};

inline float __half2float(__half h) {
  const uint32_t sign = (h.bits & 0x8000u) << 16, exponent = (h.bits >> 10) & 0x1fu, mantissa = h.bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
  return __uint_as_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}
inline __half __float2half_rn(float f) {
  const uint32_t x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return {0x7fff};
  if (magnitude >= 0x477ff000u) return {static_cast<uint16_t>(sign | 0x7c00u)};  // |f| >= 65520 rounds to inf
  if (magnitude < 0x38800000u) {  // below 2^-14: a multiple of 2^-24 (1024 of them is the least normal)
    const float units = std::nearbyint(std::fabs(f) * 16777216.0f);
    return {static_cast<uint16_t>(sign | static_cast<uint32_t>(units))};
  }
  const uint32_t rebased = magnitude - 0x38000000u;  // exponent bias 127 -> 15
  return {static_cast<uint16_t>(sign | ((rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13))};
}
inline __half __hadd(__half a, __half b) { return __float2half_rn(__half2float(a) + __half2float(b)); }
inline __half2 __halves2half2(__half a, __half b) { return {a, b}; }
inline float2 __half22float2(__half2 h) { return {__half2float(h.x), __half2float(h.y)}; }
inline __half2 __floats2half2_rn(float a, float b) { return {__float2half_rn(a), __float2half_rn(b)}; }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }

#endif
