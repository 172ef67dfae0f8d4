// The AVX-512 VNNI kernels of int8_gemm.h (this file alone is compiled with -mavx512vnni): vpdpbusd on zmm, in
// tiles of up to 6 rows x 64 columns (24 accumulators, 4 weight registers, 1 broadcast). Per group of 4 k a tile
// loads the panel's 4 x 64 bytes once (contiguous, aligned), broadcasts each row's 4 activation bytes, and issues
// rows x 4 vpdpbusd; the accumulators start at the compensation (-128 * column sums), so they end as the exact
// signed dot products.
#include "int8_gemm_impl.h"

namespace brisk::kernels::cpu {
namespace {

struct ZmmVnni {
  using I = __m512i;
  static constexpr int kLanes = 16;
  static BRISK_SIMD_INLINE I load(const int32_t* p) { return _mm512_loadu_si512(p); }
  static BRISK_SIMD_INLINE void store(int32_t* p, I v) { _mm512_storeu_si512(p, v); }
  static BRISK_SIMD_INLINE I set1(int32_t v) { return _mm512_set1_epi32(v); }
  static BRISK_SIMD_INLINE I dpbusd(I c, I a, I b) { return _mm512_dpbusd_epi32(c, a, b); }
};

}  // namespace

void int8_gemm_block_avx512_vnni(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                                 int64_t panel_end) {
  gemm_block<Avx512, VnniDot<ZmmVnni>, 6, 4>(a, row_begin, row_end, panel_begin, panel_end);
}

void quantize_activation_rows_avx512_vnni(const QuantizeActivationsArgs& a, int64_t row_begin, int64_t row_end) {
  quantize_rows<Avx512, uint8_t>(a, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
