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
    V q0 = S::zero(), q1 = S::zero(), q2 = S::zero(), q3 = S::zero();
    int64_t i = 0;
    for (; i + 4 * W <= n_vec; i += 4 * W) {
      const V v0 = S::load(p + i), v1 = S::load(p + i + W), v2 = S::load(p + i + 2 * W), v3 = S::load(p + i + 3 * W);
      q0 = S::fmadd(v0, v0, q0);
      q1 = S::fmadd(v1, v1, q1);
      q2 = S::fmadd(v2, v2, q2);
      q3 = S::fmadd(v3, v3, q3);
    }
    for (; i < n_vec; i += W) {
      const V v0 = S::load(p + i);
      q0 = S::fmadd(v0, v0, q0);
    }
    if (has_tail) {
      const V v0 = S::load_partial(p + i, tail);
      q1 = S::fmadd(v0, v0, q1);
    }
    const double norm = std::sqrt(static_cast<double>(S::reduce_add(S::add(S::add(q0, q1), S::add(q2, q3)))));
    const V scale = S::set1(static_cast<float>(1.0 / (norm > eps ? norm : static_cast<double>(eps))));
    i = 0;
    for (; i < n_vec; i += W) S::store(p + i, S::mul(S::load(p + i), scale));
    if (has_tail) S::store_partial(p + i, S::mul(S::load_partial(p + i, tail), scale), tail);
  }
}

}  // namespace
}  // namespace brisk::kernels::cpu
