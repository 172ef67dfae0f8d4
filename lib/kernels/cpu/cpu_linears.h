// Private to lib/kernels: the CPU implementations behind brisk::kernels::Linear, one per weight dtype.
#pragma once

#include <cstdint>
#include <memory>

#include "../linear_impl.h"
#include "brisk/kernels/linear.h"

namespace brisk::kernels {
namespace cpu {

// f32 or bf16 weights on oneDNN matmul (linear_dnnl.cc).
StatusOr<std::shared_ptr<const Linear::Impl>> make_dnnl_linear(const Tensor& weight, const Tensor& bias);
// f32 or bf16 weights on the fixed-order GEMM, for reproducible arithmetic (linear_fixed_order.cc).
StatusOr<std::shared_ptr<const Linear::Impl>> make_fixed_order_linear(const Tensor& weight, const Tensor& bias);
// i8 weights: brisk's int8 GEMM of the ISA level in use, with its quantize and fused dequantize (linear_int8.cc).
StatusOr<std::shared_ptr<const Linear::Impl>> make_int8_linear(const Tensor& weight, const Tensor& bias,
                                                               const QuantScales& scales);

}  // namespace cpu
}  // namespace brisk::kernels
