// Private: the vector kernels of int8 self-attention (attention_int8.h), one template over simd.h's S for every ISA.
// Included by attention_int8_avx512.cc and attention_int8_avx2.cc only. They give the scalar references' codes
// (attention_int8.cc): values are clamped, then rounded half to even by adding and subtracting 1.5 * 2^23 (exact
// for |v| < 2^22); only the softmax's exp is shorter than std::exp (code_value), which moves a code by one at most.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "attention_int8.h"
#include "simd.h"

namespace brisk::kernels::cpu {
namespace {

template <class S>
BRISK_SIMD_INLINE typename S::V round_even(typename S::V v) {
  const typename S::V magic = S::set1(12582912.0f);
  return S::sub(S::add(v, magic), magic);
}

// W integral floats in [-128, 255] -> W bytes (int8 or uint8 by value).
template <class S>
BRISK_SIMD_INLINE void store_bytes(void* p, typename S::V v) {
  if constexpr (S::kWidth == 16) {
    _mm_storeu_si128(static_cast<__m128i*>(p), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
  } else {
    const __m256i i = _mm256_cvtps_epi32(v);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
    // Values in [-128, 255]: keep the low byte of each int16 (packs/packus would saturate one side).
    const __m128i bytes = _mm_shuffle_epi8(w, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1));
    _mm_storel_epi64(static_cast<__m128i*>(p), bytes);
  }
}
template <class S>
BRISK_SIMD_INLINE typename S::V load_n(const float* p, int64_t n) {  // lanes >= n read as 0
  return n >= S::kWidth ? S::load(p) : S::load_partial(p, S::tail_mask(n));
}

template <class S>
BRISK_SIMD_INLINE typename S::V quantize_s8(typename S::V x, typename S::V inv) {
  return round_even<S>(S::min(S::max(S::mul(x, inv), S::set1(-127.0f)), S::set1(127.0f)));
}

template <class S>
void column_absmax(const float* x, int64_t ld, int64_t rows, int64_t cols, float* absmax) {
  constexpr int64_t W = S::kWidth;
  std::fill_n(absmax, cols, 0.0f);
  // Column blocks of 8 vectors stay in registers over all rows.
  for (int64_t c0 = 0; c0 < cols; c0 += 8 * W) {
    typename S::V m[8];
    for (auto& v : m) v = S::zero();
    const int64_t vectors = std::min<int64_t>(8, (cols - c0 + W - 1) / W);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * ld + c0;
      for (int64_t i = 0; i < vectors; ++i) m[i] = S::max(m[i], S::abs(load_n<S>(row + i * W, cols - c0 - i * W)));
    }
    for (int64_t i = 0; i < vectors; ++i) {
      alignas(64) float out[W];
      S::store(out, m[i]);
      std::copy_n(out, std::min<int64_t>(W, cols - c0 - i * W), absmax + c0 + i * W);
    }
  }
}

// 16 floats of a row (lanes >= n read as 0) quantized with the per-lane inverse scales `inv`, as 16 s8 bytes.
template <class S>
BRISK_SIMD_INLINE __m128i codes16(const float* x, const float* inv, int64_t n) {
  alignas(16) int8_t out[16];
  for (int64_t c = 0; c < 16; c += S::kWidth) {
    const int64_t valid = std::max<int64_t>(0, std::min<int64_t>(S::kWidth, n - c));
    const typename S::V v = valid > 0 ? load_n<S>(x + c, valid) : S::zero();
    store_bytes<S>(out + c, quantize_s8<S>(v, S::load(inv + c)));
  }
  return _mm_load_si128(reinterpret_cast<const __m128i*>(out));
}

template <class S>
void pack_keys(const float* k, int64_t ldk, int64_t len, int64_t d, float inv_scale, Int8PackedWeights& w) {
  reshape_packed(w, len, d);
  alignas(64) float inv[16];
  std::fill_n(inv, 16, inv_scale);
  const int64_t groups = w.k_padded / 4;
  for (int64_t j = 0; j < len; ++j) {
    int8_t* dst = packed_group(w, j, 0);
    const int64_t stride = group_stride(w, j);
    int64_t sum = 0;
    for (int64_t c = 0; c < w.k_padded; c += 16) {  // 16 channels: 4 groups of 4 bytes
      const __m128i q = codes16<S>(k + j * ldk + c, inv, d - c);
      // The sum of the codes: psadbw adds the 16 bytes as u8 (code + 128 after the flip) in two halves.
      const __m128i sad = _mm_sad_epu8(_mm_xor_si128(q, _mm_set1_epi8(-128)), _mm_setzero_si128());
      sum += _mm_cvtsi128_si64(sad) + _mm_extract_epi64(sad, 1) - 128 * 16;
      const int64_t g0 = c / 4;
      alignas(16) int32_t four[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(four), q);
      for (int64_t g = g0; g < std::min(groups, g0 + 4); ++g) std::memcpy(dst + g * stride, &four[g - g0], 4);
    }
    w.compensation[static_cast<size_t>(j)] = static_cast<int32_t>(-128 * sum);
  }
}

template <class S>
void pack_values(const float* v, int64_t ldv, int64_t len, int64_t d, const float* inv, Int8PackedWeights& w) {
  reshape_packed(w, d, len);
  // Per group of 4 tokens and 16 channels, 4 rows of 16 codes transposed into 16 columns x 4 bytes.
  for (int64_t g = 0; g < w.k_padded / 4; ++g) {
    for (int64_t c = 0; c < w.n_padded; c += 16) {
      __m128i r[4];
      for (int64_t b = 0; b < 4; ++b) {
        const int64_t t = 4 * g + b;
        r[b] = t < len ? codes16<S>(v + t * ldv + c, inv + c, d - c) : _mm_setzero_si128();
      }
      const __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]), hi01 = _mm_unpackhi_epi8(r[0], r[1]);
      const __m128i lo23 = _mm_unpacklo_epi8(r[2], r[3]), hi23 = _mm_unpackhi_epi8(r[2], r[3]);
      auto* dst = reinterpret_cast<__m128i*>(packed_group(w, c, g));
      _mm_storeu_si128(dst, _mm_unpacklo_epi16(lo01, lo23));
      _mm_storeu_si128(dst + 1, _mm_unpackhi_epi16(lo01, lo23));
      _mm_storeu_si128(dst + 2, _mm_unpacklo_epi16(hi01, hi23));
      _mm_storeu_si128(dst + 3, _mm_unpackhi_epi16(hi01, hi23));
    }
  }
  std::fill_n(w.compensation.begin(), d, 0);
}

// ---- Softmax codes from integer scores ----

// The int32 lanes a float vector of S holds, and the few integer operations the softmax needs.
template <class S>
struct Lanes;
#if defined(__AVX512F__)
template <>
struct Lanes<Avx512> {
  using I = __m512i;
  static BRISK_SIMD_INLINE __m512 load(const int32_t* p) { return _mm512_cvtepi32_ps(_mm512_loadu_si512(p)); }
  static BRISK_SIMD_INLINE __m512 load_partial(const int32_t* p, __mmask16 m) {
    return _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, p));
  }
  static BRISK_SIMD_INLINE I zero() { return _mm512_setzero_si512(); }
  static BRISK_SIMD_INLINE I round(__m512 v) { return _mm512_cvtps_epi32(v); }  // half to even (MXCSR's default)
  static BRISK_SIMD_INLINE I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static BRISK_SIMD_INLINE __m512 to_float(I v) { return _mm512_cvtepi32_ps(v); }
  static BRISK_SIMD_INLINE void store(uint8_t* p, I v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v));
  }
  static BRISK_SIMD_INLINE void store(int16_t* p, I v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(v));
  }
};
#endif
#if defined(__AVX2__)
template <>
struct Lanes<Avx2> {
  using I = __m256i;
  static BRISK_SIMD_INLINE __m256 load(const int32_t* p) {
    return _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static BRISK_SIMD_INLINE __m256 load_partial(const int32_t* p, __m256i m) {
    return _mm256_cvtepi32_ps(_mm256_maskload_epi32(p, m));
  }
  static BRISK_SIMD_INLINE I zero() { return _mm256_setzero_si256(); }
  static BRISK_SIMD_INLINE I round(__m256 v) { return _mm256_cvtps_epi32(v); }
  static BRISK_SIMD_INLINE I add(I a, I b) { return _mm256_add_epi32(a, b); }
  static BRISK_SIMD_INLINE __m256 to_float(I v) { return _mm256_cvtepi32_ps(v); }
  static BRISK_SIMD_INLINE void store(uint8_t* p, I v) {  // codes in [0, 255]: the low byte of each int16
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(w, w));
  }
  static BRISK_SIMD_INLINE void store(int16_t* p, I v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
  }
};
#endif

// 255 e^(d scale) for d = s - max(s) <= 0, as 2^(d log2(e) scale + log2(255)): the exponent's integer part goes to
// the float's exponent bits, its fraction f in [-1/2, 1/2] through a degree-5 Taylor polynomial of 2^f (relative
// error ~2e-7, well inside the half code that rounding leaves). Exponents below -30 give 2^-30 (code 0).
template <class S>
BRISK_SIMD_INLINE typename S::V code_value(typename S::V d, typename S::V log2_scale) {
  using V = typename S::V;
  const V magic = S::set1(12583039.0f);  // 1.5 * 2^23 + 127: rounds y and biases the exponent (simd_math.h)
  const V y = S::max(S::fmadd(d, log2_scale, S::set1(7.99435343685885793f)), S::set1(-30.0f));
  const V t = S::add(y, magic);
  const V f = S::sub(y, S::sub(t, magic));
  V p = S::fmadd(S::set1(1.3333558146428443e-3f), f, S::set1(9.6181291076284772e-3f));  // ln(2)^n / n!
  p = S::fmadd(p, f, S::set1(5.5504108664821580e-2f));
  p = S::fmadd(p, f, S::set1(2.4022650695910071e-1f));
  p = S::fmadd(p, f, S::set1(6.9314718055994531e-1f));
  p = S::fmadd(p, f, S::set1(1.0f));
  return S::mul(p, S::shift_to_exponent(t));
}

// R score rows at once (independent chains for the out-of-order core: one row alone waits on its reductions).
template <class S, typename Code, int R>
void softmax_code_rows(const int32_t* s, int64_t lds, int64_t len, float scale, Code* codes, int64_t ldp,
                       float* row_scales) {
  using V = typename S::V;
  using L = Lanes<S>;
  constexpr int64_t W = S::kWidth;
  const int64_t full = len / W * W;
  const typename S::Tail tail = S::tail_mask(len - full);
  V top[R];
  for (int r = 0; r < R; ++r) top[r] = S::set1(-__builtin_inff());
  for (int64_t j = 0; j < full; j += W) {
    for (int r = 0; r < R; ++r) top[r] = S::max(top[r], L::load(s + r * lds + j));
  }
  if (full < len) {
    for (int r = 0; r < R; ++r)
      top[r] = S::max(top[r], S::keep(tail, L::load_partial(s + r * lds + full, tail), top[r]));
  }
  for (int r = 0; r < R; ++r) top[r] = S::set1(S::reduce_max(top[r]));
  const V log2_scale = S::set1(scale * 1.44269504088896341f);
  typename L::I sum[R];
  for (int r = 0; r < R; ++r) sum[r] = L::zero();
  for (int64_t j = 0; j < full; j += W) {
    for (int r = 0; r < R; ++r) {
      const typename L::I q = L::round(code_value<S>(S::sub(L::load(s + r * lds + j), top[r]), log2_scale));
      sum[r] = L::add(sum[r], q);
      L::store(codes + r * ldp + j, q);
    }
  }
  for (int64_t j = full; j < ldp; j += W) {  // the last partial vector and the zero padding, through a buffer
    const int64_t valid = std::max<int64_t>(0, len - j);
    for (int r = 0; r < R; ++r) {
      V value = S::zero();
      if (valid > 0) {
        const typename S::Tail m = S::tail_mask(valid);
        value = S::keep(m, code_value<S>(S::sub(L::load_partial(s + r * lds + j, m), top[r]), log2_scale), value);
      }
      const typename L::I q = L::round(value);
      sum[r] = L::add(sum[r], q);
      alignas(64) Code buffer[W];
      L::store(buffer, q);
      std::memcpy(codes + r * ldp + j, buffer, static_cast<size_t>(std::min<int64_t>(W, ldp - j)) * sizeof(Code));
    }
  }
  // Each lane's sum is at most 255 len / W: exact in float, and so is the total below 2^24.
  for (int r = 0; r < R; ++r) row_scales[r] = 1.0f / S::reduce_add(L::to_float(sum[r]));
}

template <class S, typename Code>
void softmax_codes(const int32_t* s, int64_t lds, int64_t rows, int64_t len, float scale, Code* codes, int64_t ldp,
                   float* row_scales) {
  constexpr int kRows = S::kWidth == 16 ? 4 : 2;  // what the registers hold: 32 zmm, 16 ymm
  int64_t i = 0;
  for (; i + kRows <= rows; i += kRows) {
    softmax_code_rows<S, Code, kRows>(s + i * lds, lds, len, scale, codes + i * ldp, ldp, row_scales + i);
  }
  for (; i < rows; ++i)
    softmax_code_rows<S, Code, 1>(s + i * lds, lds, len, scale, codes + i * ldp, ldp, row_scales + i);
}

}  // namespace
}  // namespace brisk::kernels::cpu

// Defines attention_int8.h's kernels for one ISA, in that ISA's translation unit: BRISK_DEFINE_ATTENTION_INT8(avx2,
// Avx2) in attention_int8_avx2.cc.
#define BRISK_DEFINE_ATTENTION_INT8(name, S)                                                                    \
  void column_absmax_##name(const float* x, int64_t ld, int64_t rows, int64_t cols, float* absmax) {            \
    column_absmax<S>(x, ld, rows, cols, absmax);                                                                \
  }                                                                                                             \
  void pack_keys_##name(const float* k, int64_t ldk, int64_t len, int64_t d, float inv, Int8PackedWeights& w) { \
    pack_keys<S>(k, ldk, len, d, inv, w);                                                                       \
  }                                                                                                             \
  void pack_values_##name(const float* v, int64_t ldv, int64_t len, int64_t d, const float* inv,                \
                          Int8PackedWeights& w) {                                                               \
    pack_values<S>(v, ldv, len, d, inv, w);                                                                     \
  }                                                                                                             \
  void softmax_codes_##name(const int32_t* s, int64_t lds, int64_t rows, int64_t len, float scale, void* codes, \
                            int64_t ldp, bool wide, float* row_scales) {                                        \
    if (wide) {                                                                                                 \
      softmax_codes<S>(s, lds, rows, len, scale, static_cast<int16_t*>(codes), ldp, row_scales);                \
    } else {                                                                                                    \
      softmax_codes<S>(s, lds, rows, len, scale, static_cast<uint8_t*>(codes), ldp, row_scales);                \
    }                                                                                                           \
  }
