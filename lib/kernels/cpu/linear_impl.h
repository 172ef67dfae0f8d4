// Private to lib/kernels: the CPU implementations behind brisk::Linear, one per weight dtype.
#pragma once

#include <cstdint>
#include <memory>

#include "brisk/kernels/gemm.h"

namespace brisk {

struct Linear::Impl {
  virtual ~Impl() = default;
  // Arguments are checked by Linear::forward: rows > 0, non-null pointers, ldy >= n, activation epilogues only
  // with ldy == n.
  virtual Status forward(const float* x, int64_t rows, float* y, GemmEpilogue epilogue, int64_t ldy) const = 0;
};

namespace kernels::cpu {

// f32 or bf16 weights on oneDNN matmul (gemm_dnnl.cc).
StatusOr<std::shared_ptr<const Linear::Impl>> make_dnnl_linear(const Tensor& weight, const Tensor& bias);
// i8 weights: s8 x s8 -> s32 oneDNN matmul plus brisk's quantize and dequantize row kernels (gemm_int8.cc).
StatusOr<std::shared_ptr<const Linear::Impl>> make_int8_linear(const Tensor& weight, const Tensor& bias,
                                                               const QuantScales& scales);

}  // namespace kernels::cpu
}  // namespace brisk
