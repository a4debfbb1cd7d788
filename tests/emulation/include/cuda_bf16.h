// Stand-in for <cuda_bf16.h> on the emulated GPU: __nv_bfloat16 (a float's
// top 16 bits) and the conversions the kernels use, rounding to nearest
// even (NaN becomes CUDA's canonical 0x7fff).
#ifndef OPRT_EMULATION_CUDA_BF16_H_
#define OPRT_EMULATION_CUDA_BF16_H_

#include <cstdint>

#include "emulated_gpu.h"

struct __nv_bfloat16 {
  uint16_t bits;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};

inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float(uint32_t{b.bits} << 16); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  const uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return {0x7fff};
  return {static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
}
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16_rn(__bfloat162float(a) + __bfloat162float(b));
}
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return {a, b}; }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return {__bfloat162float(h.x), __bfloat162float(h.y)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16_rn(a), __float2bfloat16_rn(b)}; }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }

#endif
