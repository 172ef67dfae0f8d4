// The AVX-512 (F/BW/VL/DQ, no VNNI) kernels of int8_gemm.h: s8 weights widened to s16 (vpmovsxbw) and multiplied
// with s16 activations in vpmaddwd on zmm, in tiles of up to 4 rows x 32 columns (16 accumulators: each column's
// dot product in two int32 lanes until the end of the tile).
#include "int8_gemm_impl.h"

namespace brisk::kernels::cpu {
namespace {

struct ZmmInt16 {
  using I = __m512i;
  static constexpr int kLanes = 16;
  static BRISK_SIMD_INLINE I zero() { return _mm512_setzero_si512(); }
  // 8 columns x 4 s8 weights (32 bytes) as s16.
  static BRISK_SIMD_INLINE I widen(const int8_t* p) {
    return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static BRISK_SIMD_INLINE I set1_64(int64_t v) { return _mm512_set1_epi64(v); }
  static BRISK_SIMD_INLINE I madd(I a, I b) { return _mm512_madd_epi16(a, b); }
  static BRISK_SIMD_INLINE I add(I a, I b) { return _mm512_add_epi32(a, b); }
  // lo: columns 0-7, hi: 8-15, each column in lanes 2c and 2c + 1; out[c] = their sum.
  static BRISK_SIMD_INLINE void sum_pairs(I lo, I hi, int32_t* out) {
    const I even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const I odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    _mm512_storeu_si512(
        out, _mm512_add_epi32(_mm512_permutex2var_epi32(lo, even, hi), _mm512_permutex2var_epi32(lo, odd, hi)));
  }
};

}  // namespace

void int8_gemm_block_avx512(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                            int64_t panel_end) {
  gemm_block<Avx512, Int16Dot<ZmmInt16>, 4, 2>(a, row_begin, row_end, panel_begin, panel_end);
}

void quantize_activation_rows_avx512(const QuantizeActivationsArgs& a, int64_t row_begin, int64_t row_end) {
  quantize_rows<Avx512, int16_t>(a, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
