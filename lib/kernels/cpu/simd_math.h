// Private to lib/kernels/cpu: vectorised exp, erf, tanh and the two GeLU forms, written once over the ISA
// wrappers of simd.h (S = Avx512 or Avx2) and shared by every op. Include from *_avx512.cc / *_avx2.cc only.
//
//   using S = Avx512;
//   S::V y = vmath::exp<S>(S::load(p));
//
// Accuracy, measured against double-precision std:: functions by tests/kernels/vector_math_test.cc through the
// public vector_exp/erf/tanh of include/brisk/kernels/vector_math.h:
//   exp   relative error <= 2e-7 (measured 7.5e-8) for x in [-87.3, 88.37]; exactly 0 below -87.3 (never a
//         denormal), +inf above ln(FLT_MAX) = 88.72; saturates at ~2.4e38 in (88.37, 88.72].
//   erf   absolute error <= 1e-6 (measured 3.8e-7 on zmm, 4.0e-7 on ymm, near |x| = 4) over the
//         whole float range: Eigen's and XLA's rational minimax on [-3.9195, 3.9195], exactly +-1 beyond; the
//         quotient by a Newton-refined reciprocal (S::recip), not a division: 3-6% off the int8 GEMM with the GeLU
//         epilogue on Emerald Rapids.
//   gelu_erf on zmm: E's absolute error <= 1.2e-7 (8.2e-8 by the table's generator), so gelu's <= 1.2e-7 |x|;
//         exactly x or 0 from |x| >= 5.5 (tests/kernels/gelu_test.cc).
//   tanh  absolute error <= 2e-7 (measured 8.2e-8): Cephes' odd polynomial for |x| <= 0.625 (relatively accurate
//         near 0), 1 - 2/(exp(2|x|)+1) above.
// NaN propagation is not guaranteed (clamps use min/max).
//
// Thread safety: pure functions.
#pragma once

#include "gelu_erf_table.h"
#include "simd.h"

namespace brisk::kernels::cpu {
namespace {
namespace vmath {

// e^x = 2^k * e^r with k = round(x / ln 2) and |r| <= ln(2)/2; e^r = 1 + r + r^2 P(r) with Cephes' degree-5
// minimax P.
template <class S>
BRISK_SIMD_INLINE typename S::V exp(typename S::V x) {
  using V = typename S::V;
  const V lo = S::set1(-87.3f);                     // e^-87.3 = 1.26e-38 > FLT_MIN: below it return 0, no denormals
  const V hi = S::set1(88.3762626647949f);          // largest input with k <= 127
  const V inf_above = S::set1(88.72283935546875f);  // ln(FLT_MAX)
  // 1.5 * 2^23 + 127: adding it rounds x * log2(e) to the nearest integer k and leaves k + 127 in the low
  // mantissa bits, which shift_to_exponent turns into the float 2^k.
  const V magic = S::set1(12583039.0f);
  const V xc = S::min(S::max(x, lo), hi);
  const V t = S::fmadd(xc, S::set1(1.44269504088896341f), magic);
  const V k = S::sub(t, magic);
  V r = S::fnmadd(k, S::set1(0.693359375f), xc);  // ln 2 split in a short high part (exact k * hi) ...
  r = S::fnmadd(k, S::set1(-2.12194440e-4f), r);  // ... and the low remainder
  // 1 + r + r^2 P(r), in Horner form (7 FMAs).
  V y = S::set1(1.9875691500e-4f);
  y = S::fmadd(y, r, S::set1(1.3981999507e-3f));
  y = S::fmadd(y, r, S::set1(8.3334519073e-3f));
  y = S::fmadd(y, r, S::set1(4.1665795894e-2f));
  y = S::fmadd(y, r, S::set1(1.6666665459e-1f));
  y = S::fmadd(y, r, S::set1(5.0000001201e-1f));
  y = S::fmadd(y, r, S::set1(1.0f));
  y = S::fmadd(y, r, S::set1(1.0f));
  y = S::mul(y, S::shift_to_exponent(t));
  y = S::select(S::lt(x, lo), S::zero(), y);
  return S::select(S::gt(x, inf_above), S::set1(__builtin_inff()), y);
}

// erf(x) = x * P(x^2) / Q(x^2) on [-4, 4] (Eigen's generic_fast_erf_float), +-1 outside.
template <class S>
BRISK_SIMD_INLINE typename S::V erf(typename S::V a) {
  using V = typename S::V;
  const V x = S::min(S::max(a, S::set1(-4.0f)), S::set1(4.0f));
  const V x2 = S::mul(x, x);
  V p = S::fmadd(x2, S::set1(-2.72614225801306e-10f), S::set1(2.77068142495902e-08f));
  p = S::fmadd(x2, p, S::set1(-2.10102402082508e-06f));
  p = S::fmadd(x2, p, S::set1(-5.69250639462346e-05f));
  p = S::fmadd(x2, p, S::set1(-7.34990630326855e-04f));
  p = S::fmadd(x2, p, S::set1(-2.95459980854025e-03f));
  p = S::fmadd(x2, p, S::set1(-1.60960333262415e-02f));
  p = S::mul(x, p);
  V q = S::fmadd(x2, S::set1(-1.45660718464996e-05f), S::set1(-2.13374055278905e-04f));
  q = S::fmadd(x2, q, S::set1(-1.68282697438203e-03f));
  q = S::fmadd(x2, q, S::set1(-7.37332916720468e-03f));
  q = S::fmadd(x2, q, S::set1(-1.42647390514189e-02f));
  // q is in [-2.4, -0.014], never near 0 or denormal. Past |a| = 3.9195 the float nearest erf(a) is +-1 (erfc(3.9195) =
  // 2^-25): that is returned exactly, not p / q through a reciprocal whose last bits depend on the CPU (vrcpps is
  // vendor-specific: on a Zen 4 p * recip(q) at a = -4 was -1 + 2.4e-7, so gelu(-1e20) came out 1.2e13, not 0).
  return S::select(S::gt(S::abs(a), S::set1(3.9195f)), S::bit_or(S::set1(1.0f), S::sign_bits(a)),
                   S::mul(p, S::recip(q)));
}

template <class S>
BRISK_SIMD_INLINE typename S::V tanh(typename S::V x) {
  using V = typename S::V;
  const V one = S::set1(1.0f);
  const V ax = S::abs(x);
  // |x| <= 0.625: x + x^3 * P(x^2).
  const V z = S::mul(x, x);
  V p = S::set1(-5.70498872745e-3f);
  p = S::fmadd(p, z, S::set1(2.06390887954e-2f));
  p = S::fmadd(p, z, S::set1(-5.37397155531e-2f));
  p = S::fmadd(p, z, S::set1(1.33314422036e-1f));
  p = S::fmadd(p, z, S::set1(-3.33332819422e-1f));
  const V small = S::fmadd(S::mul(p, z), x, x);
  // |x| > 0.625: sign(x) * (1 - 2 / (e^(2|x|) + 1)); e^(2|x|) = inf gives exactly 1.
  const V e = exp<S>(S::add(ax, ax));
  const V large = S::bit_or(S::sub(one, S::div(S::set1(2.0f), S::add(e, one))), S::sign_bits(x));
  return S::select(S::gt(ax, S::set1(0.625f)), large, small);
}

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)). On zmm: x / 2 + |x| E(|x|) with E(t) = erf(t / sqrt 2) / 2 the piecewise
// quartic of gelu_erf_table.h (32 intervals on [0, 8), looked up by two-table permutes; E within 8.2e-8): 17
// instructions against the rational erf's 27, and 11% fewer cpu-clock samples in the int8 GEMMs' epilogues of the
// MiniLM encoder at 32x128 on Emerald Rapids. On ymm (8-entry permutes only) through erf.
template <class S>
BRISK_SIMD_INLINE typename S::V gelu_erf(typename S::V x) {
  const typename S::V half_x = S::mul(x, S::set1(0.5f));
#if defined(__AVX512F__)
  if constexpr (S::kWidth == 16) {
    const __m512 t = S::abs(x);
    // s = 4t, clamped inside the last interval (there E is the constant 1/2, so u does not matter); i = floor(s).
    const __m512 s = _mm512_min_ps(_mm512_mul_ps(t, _mm512_set1_ps(4.0f)), _mm512_set1_ps(kGeluErfIntervals - 0.5f));
    const __m512i i = _mm512_cvttps_epi32(s);
    const __m512 u = _mm512_sub_ps(s, _mm512_cvtepi32_ps(i));
    const auto c = [&](int d) {
      return _mm512_permutex2var_ps(_mm512_load_ps(kGeluErfTable[d]), i, _mm512_load_ps(kGeluErfTable[d] + 16));
    };
    __m512 e = c(4);
    e = _mm512_fmadd_ps(e, u, c(3));
    e = _mm512_fmadd_ps(e, u, c(2));
    e = _mm512_fmadd_ps(e, u, c(1));
    e = _mm512_fmadd_ps(e, u, c(0));
    return _mm512_fmadd_ps(t, e, half_x);
  }
#endif
  return S::fmadd(half_x, erf<S>(S::mul(x, S::set1(0.70710678118654752f))), half_x);
}

// gelu_tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), evaluated as x / (1 + e^(-2u)), which
// is the same function without tanh's cancellation; x -> -inf gives -0, x -> +inf gives x.
template <class S>
BRISK_SIMD_INLINE typename S::V gelu_tanh(typename S::V x) {
  using V = typename S::V;
  constexpr float kSqrt2OverPi = 0.79788456080286536f;
  const V u = S::mul(x, S::fmadd(S::mul(x, x), S::set1(kSqrt2OverPi * 0.044715f), S::set1(kSqrt2OverPi)));
  const V e = exp<S>(S::mul(u, S::set1(-2.0f)));
  return S::div(x, S::add(e, S::set1(1.0f)));
}

}  // namespace vmath
}  // namespace
}  // namespace brisk::kernels::cpu
