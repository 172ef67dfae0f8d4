// LayerNorm fused with the bias add and the residual add that precede it in every BERT sub-layer:
//
//   out[r, :] = LayerNorm(x[r, :] + bias + residual[r, :]) * gamma + beta
//
//   // attention output: h = LN(attn_out + b_o + h), in place on the residual stream
//   brisk::layer_norm_bias_residual<brisk::Device::kCPU>(attn_out, b_o, h, gamma, beta, 1e-12f, h,
//                                                                 tokens, hidden);
//
// All tensors are fp32, row-major and contiguous: x, residual and out are [rows, cols]; bias, gamma and beta
// are [cols]. bias and residual may be null (skipped). out may be the same pointer as x or as residual (in
// place); other overlaps are not allowed. Mean and variance use fp32 arithmetic with a shifted two-pass over the
// row (the variance is taken around a first estimate of the mean, which is then corrected), so large residual
// magnitudes with a small spread (|mean| >> stddev) and BERT's epsilon of 1e-12 keep full precision.
// rows <= 0 or cols <= 0 does nothing.
//
// Dispatch: one template per device. The CPU specialisation picks AVX-512, AVX2+FMA or the scalar reference at
// run time (brisk::cpu_isa()) and splits rows over brisk::parallel_for. There is no CUDA specialisation yet; the
// template's Device parameter leaves room for one that takes device pointers.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>

#include "brisk/core/export.h"
#include "brisk/core/tensor.h"

namespace brisk {

template <Device D>
BRISK_API void layer_norm_bias_residual(const float* x, const float* bias, const float* residual, const float* gamma,
                                        const float* beta, float epsilon, float* out, int64_t rows, int64_t cols);

template <>
BRISK_API void layer_norm_bias_residual<Device::kCPU>(const float* x, const float* bias, const float* residual,
                                                      const float* gamma, const float* beta, float epsilon, float* out,
                                                      int64_t rows, int64_t cols);

}  // namespace brisk
