// Linear layers: y = epilogue(x · Wᵀ + b), with W in PyTorch's [out_features, in_features] layout. On CPU this is
// a oneDNN matmul whose bias, GeLU and residual-add run as fused post-ops; primitives are cached per row count.
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

class BRISK_API Linear {
 public:
  // `weight` is f32 [out_features, in_features]; `bias` is f32 [out_features] or an undefined Tensor for none.
  // The Linear keeps its own copy (or a shared reference) of both.
  static StatusOr<Linear> create(const Tensor& weight, const Tensor& bias, Device device);

  Linear() = default;
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

  // x: [rows, in_features] row-major; y: [rows, out_features] row-major; both on this Linear's device.
  Status forward(const float* x, int64_t rows, float* y, GemmEpilogue epilogue) const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
  int64_t in_features_ = 0;
  int64_t out_features_ = 0;
};

}  // namespace brisk
