// The fixed-order GEMM: the scalar reference and the one ISA dispatch point (AVX2 and AVX-512 versions are in
// gemm_fixed_order_avx2.cc and gemm_fixed_order_avx512.cc). Compiled with -ffp-contract=off.
#include "gemm_fixed_order.h"

#include <algorithm>
#include <vector>

#include "brisk/core/cpu_features.h"
#include "brisk/core/parallel.h"

namespace brisk::kernels::cpu {

void gemm_fixed_order_rows_scalar(const FixedOrderGemmArgs& g, int64_t row_begin, int64_t row_end) {
  thread_local std::vector<float> sums;
  sums.resize(static_cast<size_t>(g.n));
  for (int64_t i = row_begin; i < row_end; ++i) {
    // p outside, j inside: each sum still takes its products in the order p = 0 .. k-1.
    std::fill(sums.begin(), sums.end(), 0.0f);
    const float* a = g.a + i * g.lda;
    for (int64_t p = 0; p < g.k; ++p) {
      const float x = a[p];
      const float* b = g.b + p * g.ldb;
      for (int64_t j = 0; j < g.n; ++j) sums[j] = sums[j] + x * b[j];
    }
    float* c = g.c + i * g.ldc;
    for (int64_t j = 0; j < g.n; ++j) {
      float s = sums[j];
      if (g.bias != nullptr) s = s + g.bias[j];
      c[j] = g.accumulate ? c[j] + s : s;
    }
  }
}

void gemm_fixed_order(const FixedOrderGemmArgs& g, int64_t m) {
  if (m <= 0 || g.n <= 0) return;
  const CpuIsa isa = cpu_isa();
  const auto kernel = isa >= CpuIsa::kAvx512 ? &gemm_fixed_order_rows_avx512
                      : isa >= CpuIsa::kAvx2 ? &gemm_fixed_order_rows_avx2
                                             : &gemm_fixed_order_rows_scalar;
  // Rows per task: at least 4 (a tile) and some 64K multiply-adds.
  const int64_t grain = std::max<int64_t>(4, (int64_t{64} << 10) / std::max<int64_t>(1, g.n * g.k));
  parallel_for(0, m, grain, [&](int64_t begin, int64_t end) { kernel(g, begin, end); });
}

}  // namespace brisk::kernels::cpu
