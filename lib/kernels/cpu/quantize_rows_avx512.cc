// The int8/bf16 row kernels for avx512 (this file is compiled with the avx512 ISA flags). Same results as the
// scalar references in quantize_rows.cc: both round to nearest even.
#include "quantize_rows_impl.h"
#include "simd.h"  // <immintrin.h> without g++ 12's false -Wmaybe-uninitialized inside it

namespace brisk::kernels::cpu {
namespace {

using S = Avx512;

template <bool kChannelScale>
void quantize_rows_s8_impl(const QuantizeRowsArgs& a, int64_t row_begin, int64_t row_end) {
  const int64_t cols = a.cols;
  // x[c], times the channel scale when there is one (SmoothQuant).
  const auto load = [&](const float* x, int64_t c, S::Tail mask) {
    if constexpr (kChannelScale)
      return S::mul(S::load_partial(x + c, mask), S::load_partial(a.channel_scale + c, mask));
    return S::load_partial(x + c, mask);
  };
  const S::Tail full = S::tail_mask(S::kWidth);
  const S::V lo = S::set1(-127.0f), hi = S::set1(127.0f);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + r * cols;
    float scale = a.static_scale;
    if (!(scale > 0.0f)) {
      S::V vmax = S::zero();
      for (int64_t c = 0; c < cols; c += S::kWidth) {
        vmax = S::max(vmax, S::abs(load(x, c, c + S::kWidth <= cols ? full : S::tail_mask(cols - c))));
      }
      const float m = S::reduce_max(vmax);
      scale = m > 0.0f ? m / 127.0f : 1.0f;
    }
    a.row_scales[r] = scale;
    const S::V inv = S::set1(1.0f / scale);
    int8_t* q = a.q + r * a.ldq;
    int64_t c = 0;
    for (; c + S::kWidth <= cols; c += S::kWidth) {
      const S::V v = S::min(S::max(S::mul(load(x, c, full), inv), lo), hi);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + c), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(v)));
    }
    const float inv_s = 1.0f / scale;
    for (; c < cols; ++c) q[c] = quantize_one(scaled_input(a, x, c), inv_s);
    for (; c < a.ldq; ++c) q[c] = 0;
  }
}

}  // namespace

void quantize_rows_s8_avx512(const QuantizeRowsArgs& a, int64_t row_begin, int64_t row_end) {
  if (a.channel_scale != nullptr) {
    quantize_rows_s8_impl<true>(a, row_begin, row_end);
  } else {
    quantize_rows_s8_impl<false>(a, row_begin, row_end);
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
    for (; j < a.cols; ++j) dequantize_one(a, r, j);
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
