// Private: the fixed-order GEMM's vector form, one template for every ISA (S from simd.h). Included by
// gemm_fixed_order_avx2.cc and gemm_fixed_order_avx512.cc only; the scalar reference and the dispatch are in
// gemm_fixed_order.cc. See gemm_fixed_order.h for the order of the operations, which this keeps per lane.
#pragma once

#include <algorithm>

#include "gemm_fixed_order.h"
#include "simd.h"

namespace brisk::kernels::cpu {
namespace {

// A tile of R rows and two vectors of columns starting at column j (cols of them valid, 0 < cols <= 2 * width).
template <class S, int R>
BRISK_SIMD_INLINE void fixed_order_tile(const FixedOrderGemmArgs& g, int64_t i, int64_t j, int64_t cols) {
  using V = typename S::V;
  constexpr int64_t W = S::kWidth;
  const bool full = cols == 2 * W;
  const auto m0 = S::tail_mask(std::min(cols, W)), m1 = S::tail_mask(std::max<int64_t>(cols - W, 0));
  V acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = S::zero();
  const float* a = g.a + i * g.lda;
  for (int64_t p = 0; p < g.k; ++p) {
    const float* bp = g.b + p * g.ldb + j;
    const V b0 = full ? S::load(bp) : S::load_partial(bp, m0);
    const V b1 = full ? S::load(bp + W) : S::load_partial(bp + W, m1);
    for (int r = 0; r < R; ++r) {
      const V x = S::set1(a[r * g.lda + p]);
      acc[r][0] = S::add(acc[r][0], S::mul(x, b0));
      acc[r][1] = S::add(acc[r][1], S::mul(x, b1));
    }
  }
  for (int r = 0; r < R; ++r) {
    float* c = g.c + (i + r) * g.ldc + j;
    for (int h = 0; h < 2; ++h) {
      const auto m = h == 0 ? m0 : m1;
      V s = acc[r][h];
      if (g.bias != nullptr) s = S::add(s, full ? S::load(g.bias + j + h * W) : S::load_partial(g.bias + j + h * W, m));
      if (g.accumulate) s = S::add(full ? S::load(c + h * W) : S::load_partial(c + h * W, m), s);
      if (full) {
        S::store(c + h * W, s);
      } else {
        S::store_partial(c + h * W, s, m);
      }
    }
  }
}

template <class S>
void gemm_fixed_order_rows_impl(const FixedOrderGemmArgs& g, int64_t row_begin, int64_t row_end) {
  constexpr int64_t kRows = 4, kCols = 2 * S::kWidth;
  // Column panels outside, rows inside: a panel of B (k x kCols) stays in cache over the rows.
  for (int64_t j = 0; j < g.n; j += kCols) {
    const int64_t cols = std::min(kCols, g.n - j);
    int64_t i = row_begin;
    for (; i + kRows <= row_end; i += kRows) fixed_order_tile<S, kRows>(g, i, j, cols);
    switch (row_end - i) {
      case 3: fixed_order_tile<S, 3>(g, i, j, cols); break;
      case 2: fixed_order_tile<S, 2>(g, i, j, cols); break;
      case 1: fixed_order_tile<S, 1>(g, i, j, cols); break;
      default: break;
    }
  }
}

}  // namespace
}  // namespace brisk::kernels::cpu
