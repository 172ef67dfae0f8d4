// The int8/bf16 row kernels for avx512 (this file is compiled with the avx512 ISA flags). Same results as the
// scalar references in quantize_rows.cc: both round to nearest even.
#include "quantize_rows_impl.h"
#include "simd.h"  // <immintrin.h> without g++ 12's false -Wmaybe-uninitialized inside it

namespace brisk::kernels::cpu {
namespace {

float absmax_avx512(const float* x, int64_t cols) {
  __m512 m = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + c)));
  if (c < cols) {
    const __mmask16 k = static_cast<__mmask16>((1u << (cols - c)) - 1u);
    m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_maskz_loadu_ps(k, x + c)));
  }
  return _mm512_reduce_max_ps(m);
}

}  // namespace

void quantize_rows_s8_avx512(const QuantizeRowsArgs& a, int64_t row_begin, int64_t row_end) {
  const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + r * a.cols;
    float scale = a.static_scale;
    if (!(scale > 0.0f)) {
      const float m = absmax_avx512(x, a.cols);
      scale = m > 0.0f ? m / 127.0f : 1.0f;
    }
    a.row_scales[r] = scale;
    const __m512 inv = _mm512_set1_ps(1.0f / scale);
    int8_t* q = a.q + r * a.ldq;
    int64_t c = 0;
    for (; c + 16 <= a.cols; c += 16) {
      const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(x + c), inv), lo), hi);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + c), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(v)));
    }
    const float inv_s = 1.0f / scale;
    for (; c < a.cols; ++c) q[c] = quantize_one(x[c], inv_s);
    for (; c < a.ldq; ++c) q[c] = 0;
  }
}

void dequantize_rows_avx512(const DequantizeRowsArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int32_t* acc = a.acc + r * a.cols;
    float* y = a.y + r * a.ldy;
    const __m512 rs = _mm512_set1_ps(a.row_scales[r]);
    int64_t j = 0;
    for (; j + 16 <= a.cols; j += 16) {
      const __m512 cs = a.per_tensor_weights ? _mm512_set1_ps(a.col_scales[0]) : _mm512_loadu_ps(a.col_scales + j);
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(acc + j)), _mm512_mul_ps(rs, cs));
      if (a.bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(a.bias + j));
      if (a.accumulate) v = _mm512_add_ps(v, _mm512_loadu_ps(y + j));
      _mm512_storeu_ps(y + j, v);
    }
    for (; j < a.cols; ++j) {
      const float s = a.row_scales[r] * a.col_scales[a.per_tensor_weights ? 0 : j];
      const float v = static_cast<float>(acc[j]) * s + (a.bias != nullptr ? a.bias[j] : 0.0f);
      y[j] = a.accumulate ? y[j] + v : v;
    }
  }
}

void bf16_rows_avx512(const Bf16RowsArgs& a, int64_t row_begin, int64_t row_end) {
  // Round to nearest even with integer arithmetic (avx512f only; no avx512_bf16 needed).
  const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
  int64_t i = row_begin * a.cols;
  const int64_t end = row_end * a.cols;
  for (; i + 16 <= end; i += 16) {
    const __m512i bits = _mm512_castps_si512(_mm512_loadu_ps(a.x + i));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), one);
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(bias, lsb)), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.out + i), _mm512_cvtepi32_epi16(rounded));
  }
  for (; i < end; ++i) a.out[i] = float_to_bf16(a.x[i]);
}

}  // namespace brisk::kernels::cpu
