// Scalar references of the int8/bf16 row kernels (cpu_kernels.h); quantize_rows_avx512.cc holds the vector ones.
#include "quantize_rows_impl.h"

namespace brisk::kernels::cpu {

void quantize_rows_s8_scalar(const QuantizeRowsArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + r * a.cols;
    float scale = a.static_scale;
    if (!(scale > 0.0f)) {
      float m = 0.0f;
      for (int64_t c = 0; c < a.cols; ++c) m = std::max(m, std::fabs(scaled_input(a, x, c)));
      scale = m > 0.0f ? m / 127.0f : 1.0f;
    }
    a.row_scales[r] = scale;
    const float inv = 1.0f / scale;
    int8_t* q = a.q + r * a.ldq;
    for (int64_t c = 0; c < a.cols; ++c) q[c] = quantize_one(scaled_input(a, x, c), inv);
    for (int64_t c = a.cols; c < a.ldq; ++c) q[c] = 0;
  }
}

void dequantize_rows_scalar(const DequantizeRowsArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    for (int64_t j = 0; j < a.cols; ++j) dequantize_one(a, r, j);
  }
}

void bf16_rows_scalar(const Bf16RowsArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t i = row_begin * a.cols; i < row_end * a.cols; ++i) a.out[i] = float_to_bf16(a.x[i]);
}

}  // namespace brisk::kernels::cpu
