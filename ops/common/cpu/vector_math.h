// AVX2 helpers for the CPU kernels: eight-wide loads/stores that widen and
// narrow every storage type (plain and non-temporal), and exp (one for
// arguments <= 0, one for any).
#ifndef OPRT_COMMON_CPU_VECTOR_MATH_H_
#define OPRT_COMMON_CPU_VECTOR_MATH_H_

#include "reduce_cpu.h"

#ifdef __AVX2__
namespace oprt::cpu {

// Eight floats rounded to 16-bit storage (bfloat16: nearest even; a NaN
// keeps its sign and turns quiet).
inline __m128i narrow8(half*, __m256 v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline __m128i narrow8(bfloat16*, __m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8));
}

inline void store8(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
template <class T>
inline void store8(T* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), narrow8(p, v));
}

// Non-temporal forms for outputs larger than the cache: the line is written
// without being read first, and does not evict data still to be read. `p`
// must be aligned to the bytes stored (32 for float, 16 for 16-bit types).
inline void stream8(float* p, __m256 v) { _mm256_stream_ps(p, v); }
template <class T>
inline void stream8(T* p, __m256 v) {
  _mm_stream_si128(reinterpret_cast<__m128i*>(p), narrow8(p, v));
}

// Four double lanes: float64 kernels.
inline __m256d load4(const double* p) { return _mm256_loadu_pd(p); }
inline void store4(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
inline void stream4(double* p, __m256d v) { _mm256_stream_pd(p, v); }  // p 32-byte aligned

// exp(x) for x <= 0 (including -inf -> 0); max relative error ~2 ulp.
// Cody-Waite reduction x = k ln2 + r, a degree-6 polynomial for e^r, then
// 2^k built in the exponent bits. Below -87.3 the result is flushed to 0.
inline __m256 exp8_nonpositive(__m256 x) {
  const __m256 lowest = _mm256_set1_ps(-87.3f);
  const __m256 underflow = _mm256_cmp_ps(x, lowest, _CMP_LT_OQ);
  x = _mm256_max_ps(x, lowest);
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

// exp(x) for any x: exp8_nonpositive of -|x|, inverted where x > 0 (about
// 3 ulp; inf past ~87.3, where exp(-x) flushes to 0); NaN stays NaN.
inline __m256 exp8(__m256 x) {
  const __m256 e = exp8_nonpositive(_mm256_or_ps(x, _mm256_set1_ps(-0.0f)));
  const __m256 positive = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
  const __m256 r = _mm256_blendv_ps(e, _mm256_div_ps(_mm256_set1_ps(1.0f), e), positive);
  return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}
inline float horizontal_sum(__m256 v) {  // a fixed tree: deterministic
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

}  // namespace oprt::cpu
#endif

#endif
