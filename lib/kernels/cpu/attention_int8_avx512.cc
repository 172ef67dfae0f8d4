// int8 self-attention's per-(sequence, head) kernels for avx512 (this file is compiled with the avx512 ISA flags).
#include "attention_int8_impl.h"

namespace brisk::kernels::cpu {

void quantize_queries_avx512(const float* q, int64_t ldq, int64_t len, int64_t d, void* codes, int64_t ldc, bool wide,
                         float* scale) {
  if (wide) {
    quantize_queries<Avx512>(q, ldq, len, d, static_cast<int16_t*>(codes), ldc, scale);
  } else {
    quantize_queries<Avx512>(q, ldq, len, d, static_cast<uint8_t*>(codes), ldc, scale);
  }
}

void pack_keys_avx512(const float* k, int64_t ldk, int64_t len, int64_t d, Int8PackedWeights& w, float* scale) {
  pack_keys<Avx512>(k, ldk, len, d, w, scale);
}

void pack_values_avx512(const float* v, int64_t ldv, int64_t len, int64_t d, Int8PackedWeights& w, float* scales) {
  pack_values<Avx512>(v, ldv, len, d, w, scales);
}

void softmax_codes_avx512(const float* s, int64_t len, float scale, void* codes, int64_t ldp, bool wide,
                          float* row_scale) {
  if (wide) {
    softmax_codes<Avx512>(s, len, scale, static_cast<int16_t*>(codes), ldp, row_scale);
  } else {
    softmax_codes<Avx512>(s, len, scale, static_cast<uint8_t*>(codes), ldp, row_scale);
  }
}

}  // namespace brisk::kernels::cpu
