// Pooling and l2_normalize on the CPU: the scalar references and the ISA choice.

#include <cmath>
#include <algorithm>
#include <cstring>

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "cpu_ops.h"

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
    const double divisor = norm > eps ? norm : static_cast<double>(eps);
    for (int64_t i = 0; i < cols; ++i) p[i] = static_cast<float>(p[i] / divisor);
  }
}

}  // namespace

void pool_sequences(const float* hidden, const int32_t* starts, const int32_t* lengths, int64_t batch, int64_t seq,
                    int64_t dim, SequencePooling mode, bool normalize, float* out) {
  if (starts == nullptr && mode == SequencePooling::kMean) {
    // The [batch, seq, dim] layout: one kernel call over the whole batch.
    const MeanPoolArgs args{hidden, lengths, seq, dim, out};
    const auto kernel = select_kernel(&mean_pool_rows_scalar, &mean_pool_rows_avx2, &mean_pool_rows_avx512);
    parallel_for(0, batch, row_grain(seq * dim), [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
  } else {
    const auto kernel = select_kernel(&mean_pool_rows_scalar, &mean_pool_rows_avx2, &mean_pool_rows_avx512);
    parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t start = starts != nullptr ? starts[b] : b * seq;
        int32_t len = lengths != nullptr ? lengths[b] : static_cast<int32_t>(seq);
        if (starts == nullptr) len = static_cast<int32_t>(std::clamp<int64_t>(len, 0, seq));
        float* o = out + b * dim;
        if (len <= 0) {
          std::fill(o, o + dim, 0.0f);
        } else if (mode != SequencePooling::kMean) {
          const int64_t row = mode == SequencePooling::kCls ? start : start + len - 1;
          std::memcpy(o, hidden + row * dim, static_cast<size_t>(dim) * sizeof(float));
        } else {
          kernel(MeanPoolArgs{hidden + start * dim, &len, len, dim, o}, 0, 1);
        }
      }
    });
  }
  if (normalize) l2_normalize(out, batch, dim, 1e-12f);
}

void l2_normalize(float* x, int64_t rows, int64_t cols, float eps) {
  const auto kernel = select_kernel(&l2_normalize_rows_scalar, &l2_normalize_rows_avx2, &l2_normalize_rows_avx512);
  parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) { kernel(x, cols, eps, begin, end); });
}

}  // namespace kernels::cpu
}  // namespace brisk
