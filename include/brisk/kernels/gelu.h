// Bias add fused with GeLU, the activation of BERT's intermediate (FFN) layer, in place:
//
//   x[r, c] = gelu(x[r, c] + bias[c])
//
//   BRISK_RETURN_IF_ERROR(brisk::kernels::bias_gelu(Device::kCPU, ffn, b_i, tokens, 1536,
//   brisk::kernels::GeluApproximation::kErf));
//
// x is [rows, cols], row-major and contiguous; bias is [cols] or null (no bias). T is float (CPU and CUDA), or on
// CUDA float16_t / bfloat16_t (fp32 arithmetic, rounded once on the store).
//   kErf   gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), the exact form: HF "gelu" (BERT, MiniLM). The vectorised erf
//          has an absolute error <= 1e-6 over the whole float range.
//   kTanh  gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the FastGeLU form: HF "gelu_new",
//          "gelu_pytorch_tanh". Evaluated as x / (1 + exp(-2u)), the same function without tanh's cancellation.
// rows == 0 or cols == 0 does nothing.
//
// Dispatch: one switch on `device`. The CPU picks AVX-512, AVX2+FMA or the scalar reference (std::erf, std::tanh)
// at run time and splits rows over brisk::parallel_for; CUDA runs a vectorised grid-stride kernel on the calling
// thread's stream; a build without CUDA returns UNIMPLEMENTED naming BRISK_WITH_CUDA.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>
#include <type_traits>

#include "brisk/core/export.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk::kernels {

enum class GeluApproximation : uint8_t {
  kErf,   // exact
  kTanh,  // FastGeLU
};

template <typename T>
BRISK_API Status bias_gelu(Device device, T* x, const std::type_identity_t<T>* bias, int64_t rows, int64_t cols,
                           GeluApproximation approx);

}  // namespace brisk::kernels
