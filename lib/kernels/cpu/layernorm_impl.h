// Private: the vectorised LayerNorm(+bias+residual) row kernel, one template for every ISA (S from simd.h).
// Included by layernorm_avx512.cc and layernorm_avx2.cc only.
//
// Per row, three passes over data that stays in L1 (a 384-float row is 1.5 KB):
//   1. y = x + bias + residual, stored into out; s = sum(y)                    -> m0 = s / n
//   2. d = y - m0; s1 = sum(d), s2 = sum(d^2)                                   -> c = s1 / n, var = s2 / n - c^2
//   3. out = ((y - m0) - c) * rstd * gamma + beta,  rstd = 1 / sqrt(var + eps)
// The shift by m0 keeps the variance free of cancellation when |mean| >> stddev, and the correction c removes
// the rounding error of m0, so the result is as accurate as a double-precision two-pass would be, to ~1e-7.
// out may alias x or residual: every pass reads element i before writing element i.
#pragma once

#include <cmath>

#include "cpu_kernels.h"
#include "simd.h"

namespace brisk::kernels::cpu {
namespace {

template <class S, bool kBias, bool kResidual>
void layer_norm_rows_impl(const LayerNormArgs& a, int64_t row_begin, int64_t row_end) {
  using V = typename S::V;
  constexpr int64_t W = S::kWidth;
  const int64_t n = a.cols;
  const int64_t n_vec = n - n % W;  // columns covered by full vectors
  const bool has_tail = n_vec < n;
  const typename S::Tail tail = S::tail_mask(has_tail ? n - n_vec : 0);
  const double inv_n = 1.0 / static_cast<double>(n);

  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + r * n;
    const float* res = kResidual ? a.residual + r * n : nullptr;
    float* out = a.out + r * n;

    // Pass 1: y = x + bias + residual -> out, and its sum.
    auto sum_in = [&](int64_t i) {
      V y = S::load(x + i);
      if constexpr (kBias) y = S::add(y, S::load(a.bias + i));
      if constexpr (kResidual) y = S::add(y, S::load(res + i));
      S::store(out + i, y);
      return y;
    };
    V s0 = S::zero(), s1 = S::zero(), s2 = S::zero(), s3 = S::zero();
    int64_t i = 0;
    for (; i + 4 * W <= n_vec; i += 4 * W) {
      s0 = S::add(s0, sum_in(i));
      s1 = S::add(s1, sum_in(i + W));
      s2 = S::add(s2, sum_in(i + 2 * W));
      s3 = S::add(s3, sum_in(i + 3 * W));
    }
    for (; i < n_vec; i += W) s0 = S::add(s0, sum_in(i));
    if (has_tail) {
      V y = S::load_partial(x + i, tail);
      if constexpr (kBias) y = S::add(y, S::load_partial(a.bias + i, tail));
      if constexpr (kResidual) y = S::add(y, S::load_partial(res + i, tail));
      S::store_partial(out + i, y, tail);
      s1 = S::add(s1, y);  // masked-out lanes are 0
    }
    const float m0 =
        static_cast<float>(static_cast<double>(S::reduce_add(S::add(S::add(s0, s1), S::add(s2, s3)))) * inv_n);
    const V m0v = S::set1(m0);

    // Pass 2: sums of d = y - m0 and d^2.
    V d0 = S::zero(), d1 = S::zero(), q0 = S::zero(), q1 = S::zero();
    i = 0;
    for (; i + 2 * W <= n_vec; i += 2 * W) {
      const V e0 = S::sub(S::load(out + i), m0v);
      const V e1 = S::sub(S::load(out + i + W), m0v);
      d0 = S::add(d0, e0);
      d1 = S::add(d1, e1);
      q0 = S::fmadd(e0, e0, q0);
      q1 = S::fmadd(e1, e1, q1);
    }
    for (; i < n_vec; i += W) {
      const V e0 = S::sub(S::load(out + i), m0v);
      d0 = S::add(d0, e0);
      q0 = S::fmadd(e0, e0, q0);
    }
    if (has_tail) {
      const V e1 = S::keep(tail, S::sub(S::load_partial(out + i, tail), m0v), S::zero());
      d1 = S::add(d1, e1);
      q1 = S::fmadd(e1, e1, q1);
    }
    const double c = static_cast<double>(S::reduce_add(S::add(d0, d1))) * inv_n;
    double var = static_cast<double>(S::reduce_add(S::add(q0, q1))) * inv_n - c * c;
    if (var < 0.0) var = 0.0;
    const V cv = S::set1(static_cast<float>(c));
    const V rstd = S::set1(static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(a.epsilon))));

    // Pass 3: normalise, scale, shift.
    auto normalise = [&](V y, V g, V b) { return S::fmadd(S::mul(S::sub(S::sub(y, m0v), cv), rstd), g, b); };
    i = 0;
    for (; i < n_vec; i += W) {
      S::store(out + i, normalise(S::load(out + i), S::load(a.gamma + i), S::load(a.beta + i)));
    }
    if (has_tail) {
      S::store_partial(out + i,
                       normalise(S::load_partial(out + i, tail), S::load_partial(a.gamma + i, tail),
                                 S::load_partial(a.beta + i, tail)),
                       tail);
    }
  }
}

template <class S>
void layer_norm_rows(const LayerNormArgs& a, int64_t row_begin, int64_t row_end) {
  if (a.bias != nullptr) {
    if (a.residual != nullptr) {
      layer_norm_rows_impl<S, true, true>(a, row_begin, row_end);
    } else {
      layer_norm_rows_impl<S, true, false>(a, row_begin, row_end);
    }
  } else if (a.residual != nullptr) {
    layer_norm_rows_impl<S, false, true>(a, row_begin, row_end);
  } else {
    layer_norm_rows_impl<S, false, false>(a, row_begin, row_end);
  }
}

}  // namespace
}  // namespace brisk::kernels::cpu
