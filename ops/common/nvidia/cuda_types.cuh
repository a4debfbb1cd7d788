// Element types of the CUDA kernels: the dtype switch, float conversions,
// and 16-byte vector loads/stores. Arithmetic is always in float; 16-bit
// results are rounded once, on store (as torch does).
#ifndef OPRT_COMMON_NVIDIA_CUDA_TYPES_CUH_
#define OPRT_COMMON_NVIDIA_CUDA_TYPES_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "../tensor.h"
#include "global_memory.cuh"
#include "vectors.cuh"

namespace oprt::nvidia {

using half = __half;
using bfloat16 = __nv_bfloat16;

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ half from_float<half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ bfloat16 from_float<bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Calls body(T{}) with T the element type of `dtype` (float32/16/bfloat16).
template <class Body>
void dispatch_dtype(int32_t dtype, Body&& body) {
  switch (dtype) {
    case OPRT_DTYPE_F32: return body(float{});
    case OPRT_DTYPE_F16: return body(half{});
    case OPRT_DTYPE_BF16: return body(bfloat16{});
    default: fail(OPRT_STATUS_UNSUPPORTED_DTYPE, "the nvidia backend has no %s kernels", dtype_name(dtype));
  }
}

// Fails at create for dtypes the NVIDIA kernels do not take.
inline void require_nvidia_dtype(const TensorDesc& t, const char* name) {
  if (t.dtype != OPRT_DTYPE_F32 && t.dtype != OPRT_DTYPE_F16 && t.dtype != OPRT_DTYPE_BF16)
    fail(OPRT_STATUS_UNSUPPORTED_DTYPE, "%s is %s; the nvidia backend takes float32, float16 and bfloat16", name,
         dtype_name(t.dtype));
}

// The 16 bytes that start `bytes` (< 16, a multiple of the element size)
// into the 32 bytes lo:hi, by a shift of 8, then 4, then 0-3 bytes:
// selects, not a dynamically indexed array (which would go to local memory).
template <class T>
__device__ __forceinline__ Raw16 shifted_window(const Raw16& lo, const Raw16& hi, uint32_t bytes) {
  const uint32_t w[8] = {lo.w[0], lo.w[1], lo.w[2], lo.w[3], hi.w[0], hi.w[1], hi.w[2], hi.w[3]};
  uint32_t by8[6], by4[5];
#pragma unroll
  for (int i = 0; i < 6; ++i) by8[i] = (bytes & 8) ? w[i + 2] : w[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) by4[i] = (bytes & 4) ? by8[i + 1] : by8[i];
  Raw16 r;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    r.w[i] = sizeof(T) == 4 ? by4[i] : __funnelshift_r(by4[i], by4[i + 1], (bytes & 3) * 8);
  return r;
}

// Vec <-> 16-byte words (kVecWords in vectors.cuh).
template <class T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const T* p) {  // p 16-byte aligned
  static_assert(kVecWords<T, N> * sizeof(Raw16) == sizeof(Vec<T, N>), "a Vec is whole 16-byte words");
  Raw16 w[kVecWords<T, N>];
#pragma unroll
  for (int i = 0; i < kVecWords<T, N>; ++i) w[i] = load_raw(p + i * (N / kVecWords<T, N>));
  Vec<T, N> v;
  memcpy(&v, w, sizeof v);
  return v;
}
template <class T, int N>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, N>& v) {
  static_assert(kVecWords<T, N> * sizeof(Raw16) == sizeof(Vec<T, N>), "a Vec is whole 16-byte words");
  Raw16 w[kVecWords<T, N>];
  memcpy(w, &v, sizeof v);
#pragma unroll
  for (int i = 0; i < kVecWords<T, N>; ++i) store_raw(p + i * (N / kVecWords<T, N>), w[i]);
}
template <class T, int N>
__device__ __forceinline__ Raw16 to_raw(const Vec<T, N>& v) {
  static_assert(sizeof(Vec<T, N>) == sizeof(Raw16), "a Raw16 holds one 16-byte vector");
  Raw16 r;
  memcpy(&r, &v, sizeof r);
  return r;
}

// Conversions of a whole vector; 16-bit types convert in pairs (one
// instruction per two elements), with the same rounding as one at a time.
template <class T, int N>
__device__ __forceinline__ void vec_to_floats(const Vec<T, N>& v, float (&x)[N]) {
  if constexpr (std::is_same_v<T, half> && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const float2 f = __half22float2(__halves2half2(v.v[i], v.v[i + 1]));
      x[i] = f.x;
      x[i + 1] = f.y;
    }
  } else if constexpr (std::is_same_v<T, bfloat16> && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const float2 f = __bfloat1622float2(__halves2bfloat162(v.v[i], v.v[i + 1]));
      x[i] = f.x;
      x[i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) x[i] = to_float(v.v[i]);
  }
}
template <class T, int N>
__device__ __forceinline__ void floats_to_vec(const float (&x)[N], Vec<T, N>& v) {
  if constexpr (std::is_same_v<T, half> && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const __half2 h = __floats2half2_rn(x[i], x[i + 1]);
      v.v[i] = __low2half(h);
      v.v[i + 1] = __high2half(h);
    }
  } else if constexpr (std::is_same_v<T, bfloat16> && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const __nv_bfloat162 h = __floats2bfloat162_rn(x[i], x[i + 1]);
      v.v[i] = __low2bfloat16(h);
      v.v[i + 1] = __high2bfloat16(h);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v.v[i] = from_float<T>(x[i]);
  }
}

template <int N, class T>
__device__ __forceinline__ void store_floats(T* p, const float (&x)[N]) {
  Vec<T, N> v;
  floats_to_vec(x, v);
  store_vec<T, N>(p, v);
}

template <class T, int N>
__device__ __forceinline__ void raw_to_floats(const Raw16& r, float (&x)[N]) {
  static_assert(N * sizeof(T) == sizeof(Raw16), "a Raw16 holds one 16-byte vector");
  Vec<T, N> v;
  memcpy(&v, &r, sizeof v);
  vec_to_floats(v, x);
}

// raw_to_floats with bfloat16 widened by a shift or a mask (a bfloat16 is
// a float's top half; the same values, one instruction per element where
// the pair conversion spends a byte permute and a multiply on the high
// one). Used in the long-row softmax loops only: in the kernels that hold
// rows in registers it makes the compiler spill.
template <class T, int N>
__device__ __forceinline__ void raw_to_floats_widened(const Raw16& r, float (&x)[N]) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    static_assert(N * sizeof(T) == sizeof(Raw16), "a Raw16 holds one 16-byte vector");
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      x[2 * i] = __uint_as_float(r.w[i] << 16);
      x[2 * i + 1] = __uint_as_float(r.w[i] & 0xffff0000u);
    }
  } else {
    raw_to_floats<T>(r, x);
  }
}


}  // namespace oprt::nvidia

#endif
