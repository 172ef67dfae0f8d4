// Private: the vectorised masked-softmax row kernel, one template for every ISA (S from simd.h). Included by
// softmax_avx512.cc and softmax_avx2.cc only.
//
// Per row, over the first v = valid_cols columns (in L1: a 128-float row is 512 bytes):
//   1. m = max(scale * x)   2. e = exp(scale * x - m) -> x, s = sum(e)          3. x *= 1 / s
// then columns [v, cols) are zeroed.
#pragma once

#include "cpu_kernels.h"
#include "simd.h"
#include "simd_math.h"

namespace brisk::kernels::cpu {
namespace {

template <class S>
BRISK_SIMD_INLINE void zero_range(float* p, int64_t begin, int64_t end) {
  constexpr int64_t W = S::kWidth;
  int64_t i = begin;
  for (; i + W <= end; i += W) S::store(p + i, S::zero());
  if (i < end) S::store_partial(p + i, S::zero(), S::tail_mask(end - i));
}

// max (kMax) or min of p[0:n], n = v_vec full vectors plus the masked tail.
template <class S, bool kMax>
BRISK_SIMD_INLINE float row_extreme(const float* p, int64_t v_vec, bool has_tail, typename S::Tail tail) {
  using V = typename S::V;
  constexpr int64_t W = S::kWidth;
  const V fill = S::set1(kMax ? -__builtin_inff() : __builtin_inff());
  auto op = [](V a, V b) { return kMax ? S::max(a, b) : S::min(a, b); };
  V m0 = fill, m1 = fill, m2 = fill, m3 = fill;
  int64_t i = 0;
  for (; i + 4 * W <= v_vec; i += 4 * W) {
    m0 = op(m0, S::load(p + i));
    m1 = op(m1, S::load(p + i + W));
    m2 = op(m2, S::load(p + i + 2 * W));
    m3 = op(m3, S::load(p + i + 3 * W));
  }
  for (; i < v_vec; i += W) m0 = op(m0, S::load(p + i));
  if (has_tail) m1 = op(m1, S::keep(tail, S::load_partial(p + i, tail), fill));
  const V m = op(op(m0, m1), op(m2, m3));
  return kMax ? S::reduce_max(m) : S::reduce_min(m);
}

template <class S>
void softmax_row(float* p, int64_t cols, int64_t v, float scale) {
  using V = typename S::V;
  constexpr int64_t W = S::kWidth;
  if (v <= 0) {
    zero_range<S>(p, 0, cols);
    return;
  }
  const int64_t v_vec = v - v % W;
  const bool has_tail = v_vec < v;
  const typename S::Tail tail = S::tail_mask(has_tail ? v - v_vec : 0);
  const V scale_v = S::set1(scale);

  // Pass 1: m = max(scale * x) = scale * (scale >= 0 ? max(x) : min(x)), one op per element.
  const float m = scale * (scale >= 0.0f ? row_extreme<S, true>(p, v_vec, has_tail, tail)
                                         : row_extreme<S, false>(p, v_vec, has_tail, tail));
  if (!(m > -__builtin_inff())) {  // every valid score is -inf: no weight anywhere
    zero_range<S>(p, 0, cols);
    return;
  }
  const V neg_m = S::set1(-m);

  // Pass 2: e = exp(scale * x - m), stored in place, and its sum.
  V s0 = S::zero(), s1 = S::zero(), s2 = S::zero(), s3 = S::zero();
  auto exp_at = [&](int64_t j) {
    const V e = vmath::exp<S>(S::fmadd(S::load(p + j), scale_v, neg_m));
    S::store(p + j, e);
    return e;
  };
  int64_t i = 0;
  for (; i + 4 * W <= v_vec; i += 4 * W) {
    s0 = S::add(s0, exp_at(i));
    s1 = S::add(s1, exp_at(i + W));
    s2 = S::add(s2, exp_at(i + 2 * W));
    s3 = S::add(s3, exp_at(i + 3 * W));
  }
  for (; i < v_vec; i += W) s0 = S::add(s0, exp_at(i));
  if (has_tail) {
    const V e = S::keep(tail, vmath::exp<S>(S::fmadd(S::load_partial(p + i, tail), scale_v, neg_m)), S::zero());
    S::store_partial(p + i, e, tail);
    s1 = S::add(s1, e);
  }
  // The maximum contributes exp(0) = 1, so the sum is >= 1.
  const V inv = S::set1(1.0f / S::reduce_add(S::add(S::add(s0, s1), S::add(s2, s3))));

  // Pass 3: normalise.
  i = 0;
  for (; i < v_vec; i += W) S::store(p + i, S::mul(S::load(p + i), inv));
  if (has_tail) S::store_partial(p + i, S::mul(S::load_partial(p + i, tail), inv), tail);

  zero_range<S>(p, v, cols);
}

template <class S>
void softmax_rows(const SoftmaxArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    int64_t v = a.valid_cols;
    if (a.group_valid_cols != nullptr) v = a.group_valid_cols[r / a.rows_per_group];
    v = v < 0 ? 0 : (v > a.cols ? a.cols : v);
    softmax_row<S>(a.x + r * a.ld, a.cols, v, a.scale);
  }
}

}  // namespace
}  // namespace brisk::kernels::cpu
