// Private: the vectorised element-wise row kernel behind bias_gelu and vector_exp/erf/tanh, one template for
// every ISA (S from simd.h). Included by elementwise_avx512.cc and elementwise_avx2.cc only.
//
//   out[r, c] = op(in[r, c] + bias[c])      (bias nullable; out may equal in)
#pragma once

#include "cpu_kernels.h"
#include "simd.h"
#include "simd_math.h"

namespace brisk::kernels::cpu {
namespace {

template <class S, ElementwiseOp kOp>
BRISK_SIMD_INLINE typename S::V apply_elementwise(typename S::V x) {
  if constexpr (kOp == ElementwiseOp::kExp) return vmath::exp<S>(x);
  if constexpr (kOp == ElementwiseOp::kErf) return vmath::erf<S>(x);
  if constexpr (kOp == ElementwiseOp::kTanh) return vmath::tanh<S>(x);
  if constexpr (kOp == ElementwiseOp::kGeluErf) return vmath::gelu_erf<S>(x);
  if constexpr (kOp == ElementwiseOp::kGeluTanh) return vmath::gelu_tanh<S>(x);
  if constexpr (kOp == ElementwiseOp::kSilu) {  // x / (1 + e^-x); e^-x saturates to +inf, giving -0 for x < -88
    return S::div(x, S::add(S::set1(1.0f), vmath::exp<S>(S::sub(S::set1(0.0f), x))));
  }
}

template <class S, ElementwiseOp kOp, bool kBias>
void elementwise_rows_impl(const ElementwiseArgs& a, int64_t row_begin, int64_t row_end) {
  using V = typename S::V;
  constexpr int64_t W = S::kWidth;
  const int64_t n = a.cols;
  const int64_t n_vec = n - n % W;
  const bool has_tail = n_vec < n;
  const typename S::Tail tail = S::tail_mask(has_tail ? n - n_vec : 0);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* in = a.in + r * n;
    float* out = a.out + r * n;
    int64_t i = 0;
    // Two independent vectors per iteration: the polynomial chains are latency-bound.
    for (; i + 2 * W <= n_vec; i += 2 * W) {
      V x0 = S::load(in + i);
      V x1 = S::load(in + i + W);
      if constexpr (kBias) {
        x0 = S::add(x0, S::load(a.bias + i));
        x1 = S::add(x1, S::load(a.bias + i + W));
      }
      S::store(out + i, apply_elementwise<S, kOp>(x0));
      S::store(out + i + W, apply_elementwise<S, kOp>(x1));
    }
    for (; i < n_vec; i += W) {
      V x0 = S::load(in + i);
      if constexpr (kBias) x0 = S::add(x0, S::load(a.bias + i));
      S::store(out + i, apply_elementwise<S, kOp>(x0));
    }
    if (has_tail) {
      V x0 = S::load_partial(in + i, tail);
      if constexpr (kBias) x0 = S::add(x0, S::load_partial(a.bias + i, tail));
      S::store_partial(out + i, apply_elementwise<S, kOp>(x0), tail);
    }
  }
}

template <class S, ElementwiseOp kOp>
void elementwise_rows_op(const ElementwiseArgs& a, int64_t row_begin, int64_t row_end) {
  if (a.bias != nullptr) {
    elementwise_rows_impl<S, kOp, true>(a, row_begin, row_end);
  } else {
    elementwise_rows_impl<S, kOp, false>(a, row_begin, row_end);
  }
}

template <class S>
void elementwise_rows(const ElementwiseArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.op) {
    case ElementwiseOp::kExp: return elementwise_rows_op<S, ElementwiseOp::kExp>(a, row_begin, row_end);
    case ElementwiseOp::kErf: return elementwise_rows_op<S, ElementwiseOp::kErf>(a, row_begin, row_end);
    case ElementwiseOp::kTanh: return elementwise_rows_op<S, ElementwiseOp::kTanh>(a, row_begin, row_end);
    case ElementwiseOp::kGeluErf: return elementwise_rows_op<S, ElementwiseOp::kGeluErf>(a, row_begin, row_end);
    case ElementwiseOp::kGeluTanh: return elementwise_rows_op<S, ElementwiseOp::kGeluTanh>(a, row_begin, row_end);
    case ElementwiseOp::kSilu: return elementwise_rows_op<S, ElementwiseOp::kSilu>(a, row_begin, row_end);
  }
}

}  // namespace
}  // namespace brisk::kernels::cpu
