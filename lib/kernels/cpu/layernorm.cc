// layer_norm_bias_residual on the CPU: the scalar reference and the ISA choice.

#include <algorithm>
#include <cmath>

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "cpu_ops.h"

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

void layer_norm_bias_residual(const float* x, const float* bias, const float* residual, const float* gamma,
                              const float* beta, float epsilon, float* out, int64_t rows, int64_t cols,
                              const std::function<void(int64_t, int64_t)>& then) {
  const LayerNormArgs args{x, bias, residual, gamma, beta, epsilon, out, cols};
  const auto kernel = select_kernel(&layer_norm_rows_scalar, &layer_norm_rows_avx2, &layer_norm_rows_avx512);
  // With `then`, blocks of rows that stay in L1 (16 KiB of output) between the two.
  const int64_t block = std::max<int64_t>(1, 4096 / std::max<int64_t>(cols, 1));
  parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) {
    if (!then) return kernel(args, begin, end);
    for (int64_t b = begin; b < end; b += block) {
      const int64_t e = std::min(end, b + block);
      kernel(args, b, e);
      then(b, e);
    }
  });
}

}  // namespace kernels::cpu
}  // namespace brisk
