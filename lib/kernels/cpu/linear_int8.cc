// CPU Linear for i8 weights: brisk's int8 GEMM (int8_gemm.h) on the kernel of the ISA level in use when the Linear
// is created, for dynamic (per-token) and static (per-tensor) activation scales alike. The activations are
// quantized in one pass (SmoothQuant's division included), or by the op that produced them (quantize_rows, for a
// QuantizedInput), and the dequantisation, bias and GeLU/ReLU/residual epilogues are fused into the GEMM's store. The
// weights are kept once, in the kernels' packed layout.
#include <vector>

#include "brisk/core/cpu_features.h"
#include "cpu_kernels.h"
#include "int8_gemm.h"
#include "cpu_linears.h"

namespace brisk::kernels::cpu {
namespace {

Int8Epilogue int8_epilogue(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::kBias: return Int8Epilogue::kBias;
    case GemmEpilogue::kBiasGeluErf: return Int8Epilogue::kBiasGeluErf;
    case GemmEpilogue::kBiasGeluTanh: return Int8Epilogue::kBiasGeluTanh;
    case GemmEpilogue::kBiasRelu: return Int8Epilogue::kBiasRelu;
    case GemmEpilogue::kBiasAccumulate: return Int8Epilogue::kBiasAccumulate;
  }
  return Int8Epilogue::kBias;
}

class Int8Linear final : public Linear::Impl {
 public:
  Int8Linear(const Tensor& weight, const Tensor& bias, const QuantScales& scales)
      : bias_(bias),
        activation_scale_(scales.activation_scale),
        kernel_(int8_kernel_for(kernel_isa())),
        packed_(pack_int8_weights(weight.data<int8_t>(), weight.dim(0), weight.dim(1))) {
    const int64_t n = weight.dim(0);
    const float* s = scales.weight_scale.data<float>();
    col_scales_.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) col_scales_[j] = s[scales.weight_scale.numel() == 1 ? 0 : j];
    if (scales.input_scale.defined()) {
      const float* in = scales.input_scale.data<float>();
      inv_input_scale_.resize(static_cast<size_t>(weight.dim(1)));
      for (size_t c = 0; c < inv_input_scale_.size(); ++c) inv_input_scale_[c] = 1.0f / in[c];
    }
  }

  Status forward(const void* x, int64_t rows, void* y, GemmEpilogue epilogue, int64_t ldy) const override;
  std::string kernel_name() const override { return int8_kernel_name(kernel_); }
  int64_t quantized_row_bytes() const override { return packed_.k_padded * int8_activation_bytes(kernel_); }
  void quantize_rows(const float* x, int64_t begin, int64_t end, uint8_t* codes, float* row_scales) const override {
    const QuantizeActivationsArgs args{x,     packed_.k,  channel_scale(),  packed_.k, packed_.k_padded,
                                       codes, row_scales, activation_scale_};
    int8_row_kernels(kernel_).quantize(args, begin, end);
  }
  Status forward_quantized(const uint8_t* codes, const float* row_scales, int64_t rows, float* y, GemmEpilogue epilogue,
                           int64_t ldy, const RowsDone* then) const override {
    const float* bias = bias_.defined() && bias_.numel() > 0 ? bias_.data<float>() : nullptr;
    if (then != nullptr) {
      int8_gemm(kernel_, codes, packed_.k_padded, row_scales, rows, packed_, col_scales_.data(), bias,
                int8_epilogue(epilogue), y, *then);
    } else {
      int8_gemm(kernel_, codes, packed_.k_padded, row_scales, rows, packed_, col_scales_.data(), bias,
                int8_epilogue(epilogue), y, ldy);
    }
    return absl::OkStatus();
  }

 private:
  const float* channel_scale() const { return inv_input_scale_.empty() ? nullptr : inv_input_scale_.data(); }

  Tensor bias_;
  float activation_scale_ = 0.0f;  // 0: dynamic
  Int8Kernel kernel_;
  Int8PackedWeights packed_;
  std::vector<float> col_scales_;       // per output channel
  std::vector<float> inv_input_scale_;  // SmoothQuant: 1 / input_scale, or empty
};

Status Int8Linear::forward(const void* xv, int64_t rows, void* yv, GemmEpilogue epilogue, int64_t ldy) const {
  thread_local std::vector<uint8_t> xq;
  thread_local std::vector<float> row_scales;
  const auto bytes = static_cast<size_t>(rows * quantized_row_bytes());
  if (xq.size() < bytes) xq.resize(bytes);
  if (row_scales.size() < static_cast<size_t>(rows)) row_scales.resize(static_cast<size_t>(rows));
  quantize_activations(kernel_, static_cast<const float*>(xv), rows, packed_.k, packed_.k_padded, xq.data(),
                       row_scales.data(), channel_scale(), activation_scale_);
  return forward_quantized(xq.data(), row_scales.data(), rows, static_cast<float*>(yv), epilogue, ldy, nullptr);
}

}  // namespace

StatusOr<std::shared_ptr<const Linear::Impl>> make_int8_linear(const Tensor& weight, const Tensor& bias,
                                                               const QuantScales& scales) {
  return std::shared_ptr<const Linear::Impl>(std::make_shared<Int8Linear>(weight, bias, scales));
}

}  // namespace brisk::kernels::cpu
