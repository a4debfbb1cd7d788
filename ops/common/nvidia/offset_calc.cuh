// Linear index -> per-operand element offsets over a coalesced layout, for
// the kernels that walk arbitrary strides. Division by each dim's size uses
// a precomputed magic multiplier when indices fit in 32 bits, and plain
// 64-bit division otherwise (tensors of 2^32 elements or more).
#ifndef OPRT_COMMON_NVIDIA_OFFSET_CALC_CUH_
#define OPRT_COMMON_NVIDIA_OFFSET_CALC_CUH_

#include <cstdint>

#include "../layout.h"

namespace oprt::nvidia {

// Unsigned 32-bit division by a fixed divisor d >= 1: q = mulhi(n, m) + n >> s.
struct FastDivider32 {
  uint32_t divisor = 1, multiplier = 0, shift = 0;
  FastDivider32() = default;
  explicit FastDivider32(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    const uint64_t m = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1;
    multiplier = static_cast<uint32_t>(m);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    const uint32_t t = __umulhi(n, multiplier);
    return static_cast<uint32_t>((static_cast<uint64_t>(t) + n) >> shift);  // t + n may pass 2^32
  }
};

template <int N, class Index>
struct OffsetCalc;

// Index = uint32_t: every linear index < 2^32.
template <int N>
struct OffsetCalc<N, uint32_t> {
  int ndim = 0;
  FastDivider32 sizes[kMaxDims];
  int64_t strides[kMaxDims][N];
  OffsetCalc() = default;
  explicit OffsetCalc(const StridedLayout<N>& l) : ndim(l.ndim) {
    for (int d = 0; d < ndim; ++d) {
      sizes[d] = FastDivider32(static_cast<uint32_t>(l.shape[d]));
      for (int k = 0; k < N; ++k) strides[d][k] = l.strides[k][d];
    }
  }
  __device__ __forceinline__ void get(uint32_t index, int64_t (&offsets)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) offsets[k] = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d >= ndim) continue;
      const uint32_t q = sizes[d].div(index);
      const uint32_t i = index - q * sizes[d].divisor;
      index = q;
#pragma unroll
      for (int k = 0; k < N; ++k) offsets[k] += static_cast<int64_t>(i) * strides[d][k];
    }
  }
};

// Index = uint64_t: any size.
template <int N>
struct OffsetCalc<N, uint64_t> {
  int ndim = 0;
  uint64_t sizes[kMaxDims];
  int64_t strides[kMaxDims][N];
  OffsetCalc() = default;
  explicit OffsetCalc(const StridedLayout<N>& l) : ndim(l.ndim) {
    for (int d = 0; d < ndim; ++d) {
      sizes[d] = static_cast<uint64_t>(l.shape[d]);
      for (int k = 0; k < N; ++k) strides[d][k] = l.strides[k][d];
    }
  }
  __device__ __forceinline__ void get(uint64_t index, int64_t (&offsets)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) offsets[k] = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d >= ndim) continue;
      const uint64_t q = index / sizes[d];
      const uint64_t i = index - q * sizes[d];
      index = q;
#pragma unroll
      for (int k = 0; k < N; ++k) offsets[k] += static_cast<int64_t>(i) * strides[d][k];
    }
  }
};

// Calls body(Index{}) with the narrowest index type that holds `count`.
template <class Body>
void dispatch_index(int64_t count, Body&& body) {
  if (count <= int64_t{UINT32_MAX}) body(uint32_t{});
  else body(uint64_t{});
}

}  // namespace oprt::nvidia

#endif
