// Private: the vectorised mean-pooling and L2-normalisation row kernels, one template for every ISA (S from
// simd.h). Included by pooling_avx512.cc and pooling_avx2.cc only.
#pragma once

#include <cmath>

#include "cpu_kernels.h"
#include "simd.h"

namespace brisk::kernels::cpu {
namespace {

// out[b, :] = sum_{t < len} hidden[b, t, :] / max(len, 1e-9), for b in [b_begin, b_end). The dimension is
// walked in blocks of four vectors held in registers while t runs over the sequence.
template <class S>
void mean_pool_rows(const MeanPoolArgs& a, int64_t b_begin, int64_t b_end) {
  using V = typename S::V;
  constexpr int64_t W = S::kWidth;
  const int64_t dim = a.dim;
  const int64_t dim_vec = dim - dim % W;
  const bool has_tail = dim_vec < dim;
  const typename S::Tail tail = S::tail_mask(has_tail ? dim - dim_vec : 0);
  for (int64_t b = b_begin; b < b_end; ++b) {
    int64_t len = a.lengths != nullptr ? a.lengths[b] : a.seq;
    len = len < 0 ? 0 : (len > a.seq ? a.seq : len);
    // sentence-transformers: sum / clamp(count, min=1e-9); a zero count has a zero sum.
    const V inv = S::set1(len > 0 ? static_cast<float>(1.0 / static_cast<double>(len)) : 0.0f);
    const float* h = a.hidden + b * a.seq * dim;
    float* out = a.out + b * dim;
    int64_t d = 0;
    for (; d + 4 * W <= dim_vec; d += 4 * W) {
      V s0 = S::zero(), s1 = S::zero(), s2 = S::zero(), s3 = S::zero();
      for (int64_t t = 0; t < len; ++t) {
        const float* row = h + t * dim + d;
        s0 = S::add(s0, S::load(row));
        s1 = S::add(s1, S::load(row + W));
        s2 = S::add(s2, S::load(row + 2 * W));
        s3 = S::add(s3, S::load(row + 3 * W));
      }
      S::store(out + d, S::mul(s0, inv));
      S::store(out + d + W, S::mul(s1, inv));
      S::store(out + d + 2 * W, S::mul(s2, inv));
      S::store(out + d + 3 * W, S::mul(s3, inv));
    }
    for (; d < dim_vec; d += W) {
      V s0 = S::zero(), s1 = S::zero();
      int64_t t = 0;
      for (; t + 2 <= len; t += 2) {
        s0 = S::add(s0, S::load(h + t * dim + d));
        s1 = S::add(s1, S::load(h + (t + 1) * dim + d));
      }
      if (t < len) s0 = S::add(s0, S::load(h + t * dim + d));
      S::store(out + d, S::mul(S::add(s0, s1), inv));
    }
    if (has_tail) {
      V s0 = S::zero();
      for (int64_t t = 0; t < len; ++t) s0 = S::add(s0, S::load_partial(h + t * dim + d, tail));
      S::store_partial(out + d, S::mul(s0, inv), tail);
    }
  }
}

// x[r, :] /= max(||x[r, :]||, eps).
template <class S>
void l2_normalize_rows(float* x, int64_t cols, float eps, int64_t row_begin, int64_t row_end) {
  using V = typename S::V;
  constexpr int64_t W = S::kWidth;
  const int64_t n_vec = cols - cols % W;
  const bool has_tail = n_vec < cols;
  const typename S::Tail tail = S::tail_mask(has_tail ? cols - n_vec : 0);
  for (int64_t r = row_begin; r < row_end; ++r) {
    float* p = x + r * cols;
    // The sum of squares in double, as the scalar reference does: finite floats cannot overflow it (a float one
    // overflows past |x| ~ 1e19 and would skip the normalisation), and 384 terms cost nothing next to pooling.
    double sq = 0.0;
    for (int64_t j = 0; j < cols; ++j) sq += static_cast<double>(p[j]) * p[j];
    const double norm = std::sqrt(sq);
    if (norm > 1e37) {  // 1 / norm is no normal float: divide in double (values near FLT_MAX only)
      for (int64_t j = 0; j < cols; ++j) p[j] = static_cast<float>(p[j] / norm);
      continue;
    }
    const V scale = S::set1(static_cast<float>(1.0 / (norm > eps ? norm : static_cast<double>(eps))));
    int64_t i = 0;
    for (; i < n_vec; i += W) S::store(p + i, S::mul(S::load(p + i), scale));
    if (has_tail) S::store_partial(p + i, S::mul(S::load_partial(p + i, tail), scale), tail);
  }
}

}  // namespace
}  // namespace brisk::kernels::cpu
