// Linear layers: y = epilogue(x · Wᵀ + b), with W in PyTorch's [out_features, in_features] layout. On CPU this is
// a oneDNN matmul whose bias, GeLU and residual-add run as fused post-ops; primitives are cached per row count.
// The weight's dtype picks the precision:
//   f32  fp32 throughout.
//   bf16 activations rounded to bf16, bf16 x bf16 products accumulated in f32 (oneDNN's avx512_bf16 path).
//   i8   symmetric int8 weights with QuantScales; activations quantized to s8 per token (dynamic) or with one
//        calibrated scale (static); s8 x s8 products accumulated in s32, then scaled back to f32 before the
//        bias and the epilogue (VNNI on this CPU).
//
//   BRISK_ASSIGN_OR_RETURN(Linear fc, Linear::create(weight /*[n, k] f32*/, bias /*[n] f32*/, Device::kCPU));
//   BRISK_RETURN_IF_ERROR(fc.forward(x, rows, y, GemmEpilogue::kBiasGeluErf));   // y[rows, n]
//   BRISK_RETURN_IF_ERROR(fc.forward(x, rows, h, GemmEpilogue::kBiasAccumulate)); // h += x · Wᵀ + b
//
// Thread safety: a Linear is immutable after create(); forward() may run concurrently on distinct outputs.
#pragma once

#include <cstdint>
#include <memory>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

enum class GemmEpilogue : uint8_t {
  kBias,            // y = x · Wᵀ + b
  kBiasGeluErf,     // y = gelu_erf(x · Wᵀ + b)
  kBiasGeluTanh,    // y = gelu_tanh(x · Wᵀ + b)
  kBiasRelu,        // y = max(x · Wᵀ + b, 0)
  kBiasAccumulate,  // y = y + x · Wᵀ + b   (residual connections: y holds the residual on entry)
};

// The scales of an i8 weight: y ≈ (x / activation_scale) · (W / weight_scale)ᵀ · activation_scale · weight_scale.
struct BRISK_API QuantScales {
  Tensor weight_scale;            // f32 [out_features] (per output channel) or [1] (per tensor)
  float activation_scale = 0.0f;  // 0: dynamic, one scale per token (row) at run time; > 0: static, per tensor
  // Optional f32 [in_features], SmoothQuant: x is divided by it channel by channel before it is quantized (the
  // weight's columns were multiplied by it), moving outlier channels' range from the activations to the weights.
  Tensor input_scale;
};

class BRISK_API Linear {
 public:
  // `weight` is f32, bf16 or i8 [out_features, in_features] (i8 needs `scales`); `bias` is f32 [out_features] or
  // an undefined Tensor for none. The Linear keeps its own copy (or a shared reference) of both.
  static StatusOr<Linear> create(const Tensor& weight, const Tensor& bias, Device device,
                                 const QuantScales& scales = {});

  Linear() = default;
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  DType weight_dtype() const { return weight_dtype_; }

  // x: [rows, in_features] row-major; y: [rows, out_features] with rows ldy floats apart (0: out_features), both
  // on this Linear's device. The activation epilogues (GeLU, ReLU) need ldy == out_features.
  Status forward(const float* x, int64_t rows, float* y, GemmEpilogue epilogue, int64_t ldy = 0) const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
  int64_t in_features_ = 0;
  int64_t out_features_ = 0;
  DType weight_dtype_ = DType::kF32;
};

}  // namespace brisk
