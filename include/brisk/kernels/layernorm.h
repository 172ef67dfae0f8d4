// LayerNorm fused with the bias add and the residual add that precede it in every BERT sub-layer:
//
//   out[r, :] = LayerNorm(x[r, :] + bias + residual[r, :]) * gamma + beta
//
//   // attention output: h = LN(attn_out + b_o + h), in place on the residual stream
//   BRISK_RETURN_IF_ERROR(brisk::kernels::layer_norm_bias_residual(Device::kCPU, attn_out, b_o, h, gamma, beta, 1e-12f,
//   h,
//                                                         tokens, hidden));
//   // the same, also quantizing each output row to int8 for an int8 linear layer that follows
//   BRISK_RETURN_IF_ERROR(brisk::kernels::layer_norm_bias_residual_quantize(device, x, b, h, gamma, beta, eps, h, q,
//                                                                  row_scales, tokens, hidden));
//
// Tensors are row-major and contiguous, all of one element type T (float; on CUDA also float16_t and bfloat16_t,
// with fp32 arithmetic inside): x, residual and out are [rows, cols]; bias, gamma and beta are [cols]. bias and
// residual may be null (skipped). out may be the same pointer as x or as residual (in place); other overlaps are
// not allowed. Mean and variance use fp32 arithmetic with a shifted two-pass over the row (the variance is taken
// around a first estimate of the mean, which is then corrected), so large residual magnitudes with a small spread
// (|mean| >> stddev) and BERT's epsilon of 1e-12 keep full precision. rows == 0 or cols == 0 does nothing.
//
// The quantizing variant also writes q[r, c] = saturate(round(out[r, c] / row_scales[r])) in [-127, 127] with
// row_scales[r] = max|out[r, :]| / 127 (1 for an all-zero row), from the rounded output values.
//
// Its Linear form (CPU, float) quantizes each output row for `consumer`, an int8 Linear
// (consumer.takes_quantized_input(), in_features == cols), into rows [first_row, first_row + rows) of q, in that
// Linear's own encoding (SmoothQuant's division and static scales included): block by block of rows, while each
// block is in cache, so that consumer.forward(q, ...) makes no pass of its own over out and gives the bits
// consumer.forward(out, ...) would. first_row 0 starts q afresh for consumer; a pass in row blocks continues it
// with first_row == q.rows().
//
// Dispatch: the one dispatch point switches on `device`. The CPU picks AVX-512, AVX2+FMA or the scalar reference at
// run time (brisk::cpu_isa()) and splits rows over brisk::parallel_for; it takes float only. CUDA runs one warp
// or block per row with vectorised loads on the calling thread's stream (device pointers); a build without CUDA
// returns UNIMPLEMENTED naming BRISK_WITH_CUDA.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>
#include <type_traits>

#include "brisk/core/export.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "brisk/kernels/linear.h"

namespace brisk::kernels {

template <typename T>
BRISK_API Status layer_norm_bias_residual(Device device, const T* x, const std::type_identity_t<T>* bias,
                                          const std::type_identity_t<T>* residual, const T* gamma, const T* beta,
                                          float epsilon, T* out, int64_t rows, int64_t cols);

template <typename T>
BRISK_API Status layer_norm_bias_residual_quantize(Device device, const T* x, const std::type_identity_t<T>* bias,
                                                   const std::type_identity_t<T>* residual, const T* gamma,
                                                   const T* beta, float epsilon, T* out, int8_t* q, float* row_scales,
                                                   int64_t rows, int64_t cols);

BRISK_API Status layer_norm_bias_residual_quantize(Device device, const float* x, const float* bias,
                                                   const float* residual, const float* gamma, const float* beta,
                                                   float epsilon, float* out, int64_t rows, int64_t cols,
                                                   const Linear& consumer, QuantizedInput& q, int64_t first_row = 0);

}  // namespace brisk::kernels
