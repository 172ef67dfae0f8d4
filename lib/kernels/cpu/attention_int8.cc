// int8 self-attention's per-(sequence, head) kernels (attention_int8.h): the scalar references, which the vector
// kernels match code for code (both round half to even), except that their exp (attention_int8_impl.h) may move a
// softmax code by one; and the dispatch.
#include "attention_int8.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace brisk::kernels::cpu {
namespace {

int8_t to_s8(float v, float inv) { return static_cast<int8_t>(std::nearbyint(std::clamp(v * inv, -127.0f, 127.0f))); }

}  // namespace

void column_absmax_scalar(const float* x, int64_t ld, int64_t rows, int64_t cols, float* absmax) {
  std::fill_n(absmax, cols, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) absmax[c] = std::max(absmax[c], std::fabs(x[r * ld + c]));
  }
}

void pack_keys_scalar(const float* k, int64_t ldk, int64_t len, int64_t d, float inv, Int8PackedWeights& w) {
  reshape_packed(w, len, d);
  for (int64_t j = 0; j < len; ++j) {
    int32_t sum = 0;
    for (int64_t g = 0; g < w.k_padded / 4; ++g) {
      int8_t* dst = packed_group(w, j, g);
      for (int64_t b = 0; b < 4; ++b) {
        const int64_t c = 4 * g + b;
        dst[b] = c < d ? to_s8(k[j * ldk + c], inv) : 0;
        sum += dst[b];
      }
    }
    w.compensation[static_cast<size_t>(j)] = -128 * sum;
  }
}

void pack_values_scalar(const float* v, int64_t ldv, int64_t len, int64_t d, const float* inv, Int8PackedWeights& w) {
  reshape_packed(w, d, len);
  for (int64_t c = 0; c < d; ++c) {
    for (int64_t g = 0; g < w.k_padded / 4; ++g) {
      int8_t* dst = packed_group(w, c, g);
      for (int64_t b = 0; b < 4; ++b) {
        const int64_t t = 4 * g + b;
        dst[b] = t < len ? to_s8(v[t * ldv + c], inv[c]) : 0;
      }
    }
    w.compensation[static_cast<size_t>(c)] = 0;
  }
}

void softmax_codes_scalar(const int32_t* s, int64_t lds, int64_t rows, int64_t len, float scale, void* codes,
                          int64_t ldp, bool wide, float* row_scales) {
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t* row = s + i * lds;
    const int32_t m = *std::max_element(row, row + len);
    int32_t sum = 0;
    for (int64_t j = 0; j < ldp; ++j) {
      // The maximum gives exp(0) = 1: code 255, so the sum is >= 255.
      const int code =
          j < len ? static_cast<int>(std::nearbyint(255.0f * std::exp(static_cast<float>(row[j] - m) * scale))) : 0;
      sum += code;
      if (wide) {
        static_cast<int16_t*>(codes)[i * ldp + j] = static_cast<int16_t>(code);
      } else {
        static_cast<uint8_t*>(codes)[i * ldp + j] = static_cast<uint8_t>(code);
      }
    }
    row_scales[i] = 1.0f / static_cast<float>(sum);
  }
}

AttentionInt8Kernels attention_int8_kernels(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kAvx512Vnni:
    case Int8Kernel::kAvx512:
      return {&column_absmax_avx512, &pack_keys_avx512, &pack_values_avx512, &softmax_codes_avx512};
    case Int8Kernel::kAvxVnni:
    case Int8Kernel::kAvx2: return {&column_absmax_avx2, &pack_keys_avx2, &pack_values_avx2, &softmax_codes_avx2};
    case Int8Kernel::kScalar: break;
  }
  return {&column_absmax_scalar, &pack_keys_scalar, &pack_values_scalar, &softmax_codes_scalar};
}

}  // namespace brisk::kernels::cpu
