// layer_norm_bias_residual on the CPU: the scalar reference and the one ISA dispatch point.
#include "brisk/kernels/layernorm.h"

#include <cmath>

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"

namespace brisk {
namespace kernels::cpu {
namespace {

// Scalar reference: the same shifted two-pass as the vector kernels, with double accumulation.
void layer_norm_rows_scalar(const LayerNormArgs& a, int64_t row_begin, int64_t row_end) {
  const int64_t n = a.cols;
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + r * n;
    const float* res = a.residual != nullptr ? a.residual + r * n : nullptr;
    float* out = a.out + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      float y = x[i];
      if (a.bias != nullptr) y += a.bias[i];
      if (res != nullptr) y += res[i];
      out[i] = y;
      sum += y;
    }
    const double mean = sum / static_cast<double>(n);
    double sq = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = out[i] - mean;
      sq += d * d;
    }
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(n) + static_cast<double>(a.epsilon));
    for (int64_t i = 0; i < n; ++i) {
      out[i] = static_cast<float>((out[i] - mean) * rstd * a.gamma[i] + a.beta[i]);
    }
  }
}

}  // namespace
}  // namespace kernels::cpu

template <>
void layer_norm_bias_residual<Device::kCPU>(const float* x, const float* bias, const float* residual,
                                            const float* gamma, const float* beta, float epsilon, float* out,
                                            int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return;
  namespace cpu = kernels::cpu;
  const cpu::LayerNormArgs args{x, bias, residual, gamma, beta, epsilon, out, cols};
  const auto kernel =
      cpu::select_kernel(&cpu::layer_norm_rows_scalar, &cpu::layer_norm_rows_avx2, &cpu::layer_norm_rows_avx512);
  parallel_for(0, rows, cpu::row_grain(cols), [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
}

}  // namespace brisk
