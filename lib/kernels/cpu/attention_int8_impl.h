// Private: the vector kernels of int8 self-attention (attention_int8.h), one template over simd.h's S for every ISA.
// Included by attention_int8_avx512.cc and attention_int8_avx2.cc only. They give the scalar references' codes
// (attention_int8.cc): values are clamped, then rounded half to even by adding and subtracting 1.5 * 2^23 (exact
// for |v| < 2^22); only the softmax's exp is shorter than std::exp (exp_nonpositive), which moves a code by one at
// most.
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
// W integral floats in [-32768, 32767] -> W int16.
template <class S>
BRISK_SIMD_INLINE void store_int16(int16_t* p, typename S::V v) {
  if constexpr (S::kWidth == 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(v)));
  } else {
    const __m256i i = _mm256_cvtps_epi32(v);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1)));
  }
}

template <class S, typename Code>
BRISK_SIMD_INLINE void store_codes(Code* p, typename S::V v) {
  if constexpr (sizeof(Code) == 1) {
    store_bytes<S>(p, v);
  } else {
    store_int16<S>(p, v);
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

// e^x for x <= 0, to the precision 8-bit codes need: relative error ~3e-6 (degree-5 Taylor of e^r, |r| <= ln 2 / 2),
// against the ~20 operations of simd_math.h's full-range exp; 0 (a code of 0) below -87.3.
template <class S>
BRISK_SIMD_INLINE typename S::V exp_nonpositive(typename S::V x) {
  using V = typename S::V;
  const V magic = S::set1(12583039.0f);  // 1.5 * 2^23 + 127: rounds x log2(e) and biases the exponent (simd_math.h)
  const V xc = S::max(x, S::set1(-87.3f));
  const V t = S::fmadd(xc, S::set1(1.44269504088896341f), magic);
  const V k = S::sub(t, magic);
  V r = S::fnmadd(k, S::set1(0.693359375f), xc);
  r = S::fnmadd(k, S::set1(-2.12194440e-4f), r);
  V y = S::fmadd(S::set1(1.0f / 120.0f), r, S::set1(1.0f / 24.0f));
  y = S::fmadd(y, r, S::set1(1.0f / 6.0f));
  y = S::fmadd(y, r, S::set1(0.5f));
  y = S::fmadd(y, r, S::set1(1.0f));
  y = S::fmadd(y, r, S::set1(1.0f));
  return S::mul(y, S::shift_to_exponent(t));
}

template <class S, typename Code>
void softmax_codes(const float* s, int64_t len, float scale, Code* codes, int64_t ldp, float* row_scale) {
  constexpr int64_t W = S::kWidth;
  typename S::V vmax = S::set1(-__builtin_inff());
  int64_t j = 0;
  for (; j + W <= len; j += W) vmax = S::max(vmax, S::load(s + j));
  if (j < len) vmax = S::max(vmax, S::keep(S::tail_mask(len - j), S::load_partial(s + j, S::tail_mask(len - j)), vmax));
  const typename S::V vscale = S::set1(scale);
  const typename S::V neg_m = S::set1(-(S::reduce_max(vmax) * scale));  // scale > 0: max(s) * scale = max(s * scale)
  const typename S::V k255 = S::set1(255.0f);
  typename S::V sum = S::zero();
  auto code_of = [&](typename S::V x) {
    return round_even<S>(S::mul(k255, exp_nonpositive<S>(S::fmadd(x, vscale, neg_m))));
  };
  for (j = 0; j + W <= len; j += W) {
    const typename S::V q = code_of(S::load(s + j));
    sum = S::add(sum, q);
    store_codes<S>(codes + j, q);
  }
  for (; j < ldp; j += W) {  // the last partial vector and the zero padding, through a buffer: codes end at ldp
    const int64_t valid = std::max<int64_t>(0, len - j);
    typename S::V q = S::zero();
    if (valid > 0) q = S::keep(S::tail_mask(valid), code_of(S::load_partial(s + j, S::tail_mask(valid))), S::zero());
    sum = S::add(sum, q);
    alignas(64) Code tail[W];
    store_codes<S>(tail, q);
    std::memcpy(codes + j, tail, static_cast<size_t>(std::min<int64_t>(W, ldp - j)) * sizeof(Code));
  }
  *row_scale = 1.0f / S::reduce_add(sum);
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
  void softmax_codes_##name(const float* s, int64_t len, float scale, void* codes, int64_t ldp, bool wide,      \
                            float* row_scale) {                                                                 \
    if (wide) {                                                                                                 \
      softmax_codes<S>(s, len, scale, static_cast<int16_t*>(codes), ldp, row_scale);                            \
    } else {                                                                                                    \
      softmax_codes<S>(s, len, scale, static_cast<uint8_t*>(codes), ldp, row_scale);                            \
    }                                                                                                           \
  }
