// mean_pool, cls_pool and l2_normalize on the CPU: the scalar references and the one ISA dispatch point per op.
#include "brisk/kernels/pooling.h"

#include <cmath>
#include <cstring>

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"

namespace brisk {
namespace kernels::cpu {
namespace {

void mean_pool_rows_scalar(const MeanPoolArgs& a, int64_t b_begin, int64_t b_end) {
  for (int64_t b = b_begin; b < b_end; ++b) {
    int64_t len = a.lengths != nullptr ? a.lengths[b] : a.seq;
    len = len < 0 ? 0 : (len > a.seq ? a.seq : len);
    const float* h = a.hidden + b * a.seq * a.dim;
    float* out = a.out + b * a.dim;
    const double inv = len > 0 ? 1.0 / static_cast<double>(len) : 0.0;
    for (int64_t d = 0; d < a.dim; ++d) {
      double sum = 0.0;
      for (int64_t t = 0; t < len; ++t) sum += h[t * a.dim + d];
      out[d] = static_cast<float>(sum * inv);
    }
  }
}

void l2_normalize_rows_scalar(float* x, int64_t cols, float eps, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    float* p = x + r * cols;
    double sq = 0.0;
    for (int64_t i = 0; i < cols; ++i) sq += static_cast<double>(p[i]) * p[i];
    const double norm = std::sqrt(sq);
    const double inv = 1.0 / (norm > eps ? norm : static_cast<double>(eps));
    for (int64_t i = 0; i < cols; ++i) p[i] = static_cast<float>(p[i] * inv);
  }
}

}  // namespace
}  // namespace kernels::cpu

template <>
void mean_pool<Device::kCPU>(const float* hidden, const int32_t* lengths, int64_t batch, int64_t seq, int64_t dim,
                             float* out) {
  if (batch <= 0 || dim <= 0) return;
  namespace cpu = kernels::cpu;
  if (seq < 0) seq = 0;
  const cpu::MeanPoolArgs args{hidden, lengths, seq, dim, out};
  const auto kernel =
      cpu::select_kernel(&cpu::mean_pool_rows_scalar, &cpu::mean_pool_rows_avx2, &cpu::mean_pool_rows_avx512);
  parallel_for(0, batch, cpu::row_grain(seq * dim), [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
}

template <>
void cls_pool<Device::kCPU>(const float* hidden, int64_t batch, int64_t seq, int64_t dim, float* out) {
  if (batch <= 0 || seq <= 0 || dim <= 0) return;
  for (int64_t b = 0; b < batch; ++b) {
    std::memcpy(out + b * dim, hidden + b * seq * dim, static_cast<size_t>(dim) * sizeof(float));
  }
}

template <>
void l2_normalize<Device::kCPU>(float* x, int64_t rows, int64_t cols, float eps) {
  if (rows <= 0 || cols <= 0) return;
  namespace cpu = kernels::cpu;
  const auto kernel =
      cpu::select_kernel(&cpu::l2_normalize_rows_scalar, &cpu::l2_normalize_rows_avx2, &cpu::l2_normalize_rows_avx512);
  parallel_for(0, rows, cpu::row_grain(cols), [&](int64_t begin, int64_t end) { kernel(x, cols, eps, begin, end); });
}

}  // namespace brisk
