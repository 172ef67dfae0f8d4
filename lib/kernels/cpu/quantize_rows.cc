// Scalar references of the int8/bf16 row kernels (cpu_kernels.h); quantize_rows_avx512.cc holds the vector ones.
#include "quantize_rows_impl.h"

namespace brisk::kernels::cpu {

void quantize_rows_s8_scalar(const QuantizeRowsArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + r * a.cols;
    const float scale = a.static_scale > 0.0f ? a.static_scale : dynamic_row_scale(x, a.cols);
    a.row_scales[r] = scale;
    const float inv = 1.0f / scale;
    int8_t* q = a.q + r * a.ldq;
    for (int64_t c = 0; c < a.cols; ++c) q[c] = quantize_one(x[c], inv);
    for (int64_t c = a.cols; c < a.ldq; ++c) q[c] = 0;
  }
}

void dequantize_rows_scalar(const DequantizeRowsArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int32_t* acc = a.acc + r * a.cols;
    float* y = a.y + r * a.ldy;
    for (int64_t j = 0; j < a.cols; ++j) {
      const float s = a.row_scales[r] * a.col_scales[a.per_tensor_weights ? 0 : j];
      const float v = static_cast<float>(acc[j]) * s + (a.bias != nullptr ? a.bias[j] : 0.0f);
      y[j] = a.accumulate ? y[j] + v : v;
    }
  }
}

void bf16_rows_scalar(const Bf16RowsArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t i = row_begin * a.cols; i < row_end * a.cols; ++i) a.out[i] = float_to_bf16(a.x[i]);
}

}  // namespace brisk::kernels::cpu
