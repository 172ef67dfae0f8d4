// The AVX2 kernels of int8_gemm.h: s8 weights widened to s16 (vpmovsxbw) and multiplied with s16 activations in
// vpmaddwd on ymm, in tiles of up to 4 rows x 8 columns (8 accumulators: each column's dot product in two int32
// lanes until the end of the tile). No vpmaddubsw: its int16 pair sums saturate (int8_gemm.h).
#include "int8_gemm_impl.h"

namespace brisk::kernels::cpu {
namespace {

struct YmmInt16 {
  using I = __m256i;
  static constexpr int kLanes = 8;
  static BRISK_SIMD_INLINE I zero() { return _mm256_setzero_si256(); }
  // 4 columns x 4 s8 weights (16 bytes) as s16.
  static BRISK_SIMD_INLINE I widen(const int8_t* p) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static BRISK_SIMD_INLINE I set1_64(int64_t v) { return _mm256_set1_epi64x(v); }
  static BRISK_SIMD_INLINE I madd(I a, I b) { return _mm256_madd_epi16(a, b); }
  static BRISK_SIMD_INLINE I add(I a, I b) { return _mm256_add_epi32(a, b); }
  // lo: columns 0-3, hi: 4-7, each column in lanes 2c and 2c + 1. vphaddd sums the pairs within 128-bit halves
  // ([c0 c1 c4 c5 | c2 c3 c6 c7]); vpermq puts the column pairs in order.
  static BRISK_SIMD_INLINE void sum_pairs(I lo, I hi, int32_t* out) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), 0xD8));
  }
};

}  // namespace

void int8_gemm_block_avx2(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                          int64_t panel_end) {
  gemm_block<Avx2, Int16Dot<YmmInt16>, 4, 1>(a, row_begin, row_end, panel_begin, panel_end);
}

void quantize_activation_rows_avx2(const QuantizeActivationsArgs& a, int64_t row_begin, int64_t row_end) {
  quantize_rows<Avx2, int16_t>(a, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
