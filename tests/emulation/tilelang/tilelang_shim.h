// What a TileLang kernel's generated CUDA source needs from its headers
// (tl_templates/cuda/*.h) to run on the emulated GPU (../include/
// emulated_gpu.h): the 16-bit types TileLang names (bfloat16_t, half_t:
// conversions to and from float, rounding to nearest even), the 16-byte
// vector types, the packing of two 16-bit values into a 32-bit word and
// the explicit global loads and stores.
// tests/test_tilelang_emulated.py puts it in place of those includes.
#ifndef OPRT_EMULATION_TILELANG_SHIM_H_
#define OPRT_EMULATION_TILELANG_SHIM_H_

#include <cmath>
#include <cstdint>

#include "cuda_runtime.h"

typedef unsigned int uint;

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

struct bfloat16_t {
  uint16_t bits;
  bfloat16_t() = default;
  bfloat16_t(float f) : bits(__float2bfloat16_rn(f).bits) {}
  operator float() const { return __bfloat162float(__nv_bfloat16{bits}); }
};
struct half_t {
  uint16_t bits;
  half_t() = default;
  half_t(float f) : bits(__float2half_rn(f).bits) {}
  operator float() const { return __half2float(__half{bits}); }
};
static_assert(sizeof(bfloat16_t) == 2 && sizeof(half_t) == 2, "16-bit types");

inline uint32_t __pack_nv_bfloat162(bfloat16_t lo, bfloat16_t hi) { return lo.bits | (uint32_t{hi.bits} << 16); }
inline uint32_t __pack_half2(half_t lo, half_t hi) { return lo.bits | (uint32_t{hi.bits} << 16); }

struct alignas(8) uint2 {
  unsigned x, y;
};

// The explicit global accesses of kernels compiled with
// tl.enable_lower_ldgstg (tl_templates/cuda/copy.h), alignment-checked.
namespace tl {
template <class V>
V load_global(const void* p) {
  if (reinterpret_cast<uintptr_t>(p) % sizeof(V)) emu::die("a %zu-byte load at %p", sizeof(V), p);
  return *static_cast<const V*>(p);
}
template <class V>
void store_global(void* p, const V& v) {
  if (reinterpret_cast<uintptr_t>(p) % sizeof(V)) emu::die("a %zu-byte store at %p", sizeof(V), p);
  *static_cast<V*>(p) = v;
}
inline uint32_t load_global_32(const void* p) { return load_global<uint32_t>(p); }
inline uint2 load_global_64(const void* p) { return load_global<uint2>(p); }
inline uint4 load_global_128(const void* p) { return load_global<uint4>(p); }
inline void store_global_32(void* p, uint32_t v) { store_global(p, v); }
inline void store_global_64(void* p, uint2 v) { store_global(p, v); }
inline void store_global_128(void* p, uint4 v) { store_global(p, v); }
}  // namespace tl

#define CUDART_INF_F __int_as_float(0x7f800000)
#define CUDART_NAN_F __int_as_float(0x7fffffff)
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }

#endif
