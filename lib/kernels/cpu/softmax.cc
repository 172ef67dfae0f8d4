// masked_softmax on the CPU: the scalar reference and the ISA choice behind the three entry points.

#include <cmath>

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "cpu_ops.h"

namespace brisk {
namespace kernels::cpu {
namespace {

void softmax_rows_scalar(const SoftmaxArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    float* p = a.x + r * a.ld;
    int64_t v = a.group_valid_cols != nullptr ? a.group_valid_cols[r / a.rows_per_group] : a.valid_cols;
    v = v < 0 ? 0 : (v > a.cols ? a.cols : v);
    float m = -INFINITY;
    for (int64_t i = 0; i < v; ++i) m = std::fmax(m, a.scale * p[i]);
    if (!(m > -INFINITY)) v = 0;  // empty row, or every valid score is -inf
    double sum = 0.0;
    for (int64_t i = 0; i < v; ++i) {
      p[i] = std::exp(a.scale * p[i] - m);
      sum += p[i];
    }
    const float inv = v > 0 ? static_cast<float>(1.0 / sum) : 0.0f;
    for (int64_t i = 0; i < v; ++i) p[i] *= inv;
    for (int64_t i = v; i < a.cols; ++i) p[i] = 0.0f;
  }
}

}  // namespace

void masked_softmax(float* x, int64_t rows, int64_t cols, int64_t ld, int64_t valid_cols, int64_t rows_per_group,
                    const int32_t* lengths, float scale) {
  const SoftmaxArgs args{
      x, ld, cols, rows_per_group > 0 ? rows_per_group : 1, rows_per_group > 0 ? lengths : nullptr, valid_cols, scale};
  const auto kernel = select_kernel(&softmax_rows_scalar, &softmax_rows_avx2, &softmax_rows_avx512);
  // exp makes softmax compute-heavier than a copy: smaller tasks than the memory-bound grain.
  parallel_for(0, rows, row_grain(cols) / 4 + 1, [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
}

}  // namespace kernels::cpu
}  // namespace brisk
