// Scalar references of the int8/bf16 row kernels (cpu_kernels.h), and the row-wise int8 ops built on them;
// quantize_rows_avx512.cc holds the vector kernels.
#include "brisk/core/parallel.h"
#include "cpu_ops.h"
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

void quantize_rows_int8(const float* x, int64_t rows, int64_t cols, int8_t* q, float* row_scales) {
  const QuantizeRowsArgs args{x, nullptr, cols, q, cols, row_scales, 0.0f};
  const auto kernel = select_kernel(&quantize_rows_s8_scalar, &quantize_rows_s8_scalar, &quantize_rows_s8_avx512);
  parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
}

void dequantize_rows_int8(const int32_t* acc, const float* row_scales, const float* col_scales, int64_t n_col_scales,
                          const float* bias, GemmEpilogue epilogue, float* y, int64_t ldy, int64_t rows, int64_t cols) {
  const DequantizeRowsArgs args{
      acc, cols, row_scales, col_scales, n_col_scales == 1, bias, y, ldy, epilogue == GemmEpilogue::kBiasAccumulate};
  const auto kernel = select_kernel(&dequantize_rows_scalar, &dequantize_rows_scalar, &dequantize_rows_avx512);
  parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
  switch (epilogue) {
    case GemmEpilogue::kBias:
    case GemmEpilogue::kBiasAccumulate: break;
    case GemmEpilogue::kBiasGeluErf:
    case GemmEpilogue::kBiasGeluTanh: {
      const GeluApproximation approx =
          epilogue == GemmEpilogue::kBiasGeluErf ? GeluApproximation::kErf : GeluApproximation::kTanh;
      if (ldy == cols) {
        bias_gelu(y, nullptr, rows, cols, approx);
      } else {
        for (int64_t r = 0; r < rows; ++r) bias_gelu(y + r * ldy, nullptr, 1, cols, approx);
      }
      break;
    }
    case GemmEpilogue::kBiasRelu:
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) y[r * ldy + c] = std::max(y[r * ldy + c], 0.0f);
      }
      break;
  }
}

}  // namespace brisk::kernels::cpu
