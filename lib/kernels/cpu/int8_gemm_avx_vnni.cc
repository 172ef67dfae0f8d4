// The AVX-VNNI kernels of int8_gemm.h (VEX vpdpbusd on ymm: Alder Lake and later, Zen 5; this file alone is
// compiled with -mavxvnni): the VNNI arithmetic of int8_gemm_avx512.cc in tiles of up to 6 rows x 16 columns (12
// accumulators, 2 weight registers, 1 broadcast).
#include "int8_gemm_impl.h"

namespace brisk::kernels::cpu {
namespace {

struct YmmVnni {
  using I = __m256i;
  static constexpr int kLanes = 8;
  static BRISK_SIMD_INLINE I load(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static BRISK_SIMD_INLINE void store(int32_t* p, I v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static BRISK_SIMD_INLINE I set1(int32_t v) { return _mm256_set1_epi32(v); }
  static BRISK_SIMD_INLINE I dpbusd(I c, I a, I b) { return _mm256_dpbusd_avx_epi32(c, a, b); }
};

}  // namespace

void int8_gemm_block_avx_vnni(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                              int64_t panel_end) {
  gemm_block<Avx2, VnniDot<YmmVnni>, 6, 2>(a, row_begin, row_end, panel_begin, panel_end);
}

void quantize_activation_rows_avx_vnni(const QuantizeActivationsArgs& a, int64_t row_begin, int64_t row_end) {
  quantize_rows<Avx2, uint8_t>(a, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
