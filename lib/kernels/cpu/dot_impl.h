// Private: the dot product, one template for every ISA (S from simd.h). Included by dot_avx2.cc and
// dot_avx512.cc only; the scalar reference and the dispatch are in dot.cc.
#pragma once

#include "cpu_kernels.h"
#include "simd.h"

namespace brisk::kernels::cpu {
namespace {

template <class S>
float dot_impl(const float* a, const float* b, int64_t n) {
  constexpr int64_t W = S::kWidth;
  // Two accumulators: the fused multiply-adds are latency-bound.
  typename S::V acc0 = S::zero(), acc1 = S::zero();
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 = S::fmadd(S::load(a + i), S::load(b + i), acc0);
    acc1 = S::fmadd(S::load(a + i + W), S::load(b + i + W), acc1);
  }
  for (; i + W <= n; i += W) acc0 = S::fmadd(S::load(a + i), S::load(b + i), acc0);
  float s = S::reduce_add(S::add(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace
}  // namespace brisk::kernels::cpu
