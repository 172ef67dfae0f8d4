// masked_softmax on the CPU: the scalar reference and the one ISA dispatch point behind the three entry points.
#include "brisk/kernels/softmax.h"

#include <cmath>

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"

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

void run_softmax(const SoftmaxArgs& args, int64_t rows) {
  if (rows <= 0 || args.cols <= 0) return;
  const auto kernel = select_kernel(&softmax_rows_scalar, &softmax_rows_avx2, &softmax_rows_avx512);
  // exp makes softmax compute-heavier than a copy: smaller tasks than the memory-bound grain.
  parallel_for(0, rows, row_grain(args.cols) / 4 + 1, [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
}

}  // namespace
}  // namespace kernels::cpu

template <>
void masked_softmax<Device::kCPU>(float* x, int64_t rows, int64_t cols, int64_t valid_cols, float scale) {
  kernels::cpu::run_softmax({x, cols, cols, 1, nullptr, valid_cols, scale}, rows);
}

template <>
void masked_softmax_strided<Device::kCPU>(float* x, int64_t rows, int64_t cols, int64_t ld, int64_t valid_cols,
                                          float scale) {
  kernels::cpu::run_softmax({x, ld, cols, 1, nullptr, valid_cols, scale}, rows);
}

template <>
void masked_softmax_batched<Device::kCPU>(float* x, int64_t batch, int64_t rows_per_group, int64_t cols, int64_t ld,
                                          const int32_t* lengths, float scale) {
  if (batch <= 0 || rows_per_group <= 0) return;
  kernels::cpu::run_softmax({x, ld, cols, rows_per_group, lengths, 0, scale}, batch * rows_per_group);
}

}  // namespace brisk
