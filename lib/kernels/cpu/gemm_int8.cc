// CPU Linear for i8 weights, two implementations, picked per call:
// - brisk's VNNI kernel (int8_gemm.h), for per-token (dynamic) activations on CPUs with avx512_vnni: activations
//   quantized to u8 per row, vpdpbusd micro-kernel, dequantization, bias and GeLU/residual fused into its store.
//   It beats oneDNN at 16 rows (the latency-bound B=1 case) and saves the separate dequantize pass everywhere.
// - oneDNN's s8 x s8 -> s32 matmul (weights packed once at creation) between brisk's quantize and dequantize row
//   kernels: static scales, and CPUs without VNNI. oneDNN 2.6 could fuse per-channel output scales, but not a
//   per-row (per-token) scale: with one it falls back to its reference implementation.
#include <optional>
#include <vector>

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "cpu_ops.h"
#include "brisk/core/cpu_features.h"
#include "dnnl_engine.h"
#include "dnnl_matmul.h"
#include "int8_gemm.h"
#include "linear_impl.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace brisk::kernels::cpu {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

class Int8Linear final : public Linear::Impl {
 public:
  Int8Linear(const Tensor& weight, const Tensor& bias, const QuantScales& scales)
      : weight_(weight),
        bias_(bias),
        scales_(scales),
        n_(weight.dim(0)),
        k_(weight.dim(1)),
        matmul_(weight, dt::s8,
                [this](int64_t rows, int64_t, const dnnl::memory::desc& weights) { return describe(rows, weights); }) {}

  void pack_weights();
  Status forward(const void* x, int64_t rows, void* y, GemmEpilogue epilogue, int64_t ldy) const override;

 private:
  void forward_vnni(const float* x, int64_t rows, float* y, GemmEpilogue epilogue, int64_t ldy) const;
  Status forward_dnnl(const float* x, int64_t rows, float* y, GemmEpilogue epilogue, int64_t ldy) const;
  dnnl::matmul::primitive_desc describe(int64_t rows, const dnnl::memory::desc& weights) const;

  Tensor weight_;  // [n, k] s8, plain layout
  Tensor bias_;
  QuantScales scales_;
  int64_t n_ = 0;
  int64_t k_ = 0;
  DnnlPackedMatmul matmul_;                // s8 x s8 -> s32
  std::optional<Int8PackedWeights> vnni_;  // dynamic activations on a VNNI CPU
  std::vector<float> col_scales_;          // per output channel, for the VNNI kernel
  std::vector<float> inv_input_scale_;     // SmoothQuant: 1 / input_scale, or empty
};

dnnl::matmul::primitive_desc Int8Linear::describe(int64_t rows, const dnnl::memory::desc& weights) const {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::memory::desc src({rows, k_}, dt::s8, tag::ab);
  const dnnl::memory::desc dst({rows, n_}, dt::s32, tag::ab);
  return {dnnl::matmul::desc(src, weights, dst), attr, cpu_engine()};
}

void Int8Linear::pack_weights() {
  if (scales_.input_scale.defined()) {
    const float* s = scales_.input_scale.data<float>();
    inv_input_scale_.resize(static_cast<size_t>(k_));
    for (int64_t c = 0; c < k_; ++c) inv_input_scale_[c] = 1.0f / s[c];
  }
  if (scales_.activation_scale == 0.0f && cpu_isa() >= CpuIsa::kAvx512Vnni) {
    vnni_ = pack_int8_weights(weight_.data<int8_t>(), n_, k_);
    const float* s = scales_.weight_scale.data<float>();
    col_scales_.resize(static_cast<size_t>(n_));
    for (int64_t j = 0; j < n_; ++j) col_scales_[j] = s[scales_.weight_scale.numel() == 1 ? 0 : j];
  }
  matmul_.pack();
}

void Int8Linear::forward_vnni(const float* x, int64_t rows, float* y, GemmEpilogue epilogue, int64_t ldy) const {
  thread_local std::vector<uint8_t> xq;
  thread_local std::vector<float> row_scales;
  const int64_t ldq = vnni_->k_padded;
  if (xq.size() < static_cast<size_t>(rows * ldq)) xq.resize(static_cast<size_t>(rows * ldq));
  if (row_scales.size() < static_cast<size_t>(rows)) row_scales.resize(static_cast<size_t>(rows));
  quantize_rows_u8(x, rows, k_, ldq, xq.data(), row_scales.data(),
                   inv_input_scale_.empty() ? nullptr : inv_input_scale_.data());
  const bool has_bias = bias_.defined() && bias_.numel() > 0;
  Int8Epilogue e = Int8Epilogue::kBias;
  switch (epilogue) {
    case GemmEpilogue::kBias: e = Int8Epilogue::kBias; break;
    case GemmEpilogue::kBiasGeluErf: e = Int8Epilogue::kBiasGeluErf; break;
    case GemmEpilogue::kBiasGeluTanh: e = Int8Epilogue::kBiasGeluTanh; break;
    case GemmEpilogue::kBiasRelu: e = Int8Epilogue::kBiasRelu; break;
    case GemmEpilogue::kBiasAccumulate: e = Int8Epilogue::kBiasAccumulate; break;
  }
  int8_gemm(xq.data(), ldq, row_scales.data(), rows, *vnni_, col_scales_.data(),
            has_bias ? bias_.data<float>() : nullptr, e, y, ldy);
}

Status Int8Linear::forward(const void* xv, int64_t rows, void* yv, GemmEpilogue epilogue, int64_t ldy) const {
  const float* x = static_cast<const float*>(xv);
  float* y = static_cast<float*>(yv);
  if (vnni_.has_value() && cpu_isa() >= CpuIsa::kAvx512Vnni) {
    forward_vnni(x, rows, y, epilogue, ldy);
    return absl::OkStatus();
  }
  return forward_dnnl(x, rows, y, epilogue, ldy);
}

Status Int8Linear::forward_dnnl(const float* x, int64_t rows, float* y, GemmEpilogue epilogue, int64_t ldy) const {
  thread_local std::vector<int8_t> xq;
  thread_local std::vector<float> row_scales;
  thread_local std::vector<int32_t> acc;
  if (xq.size() < static_cast<size_t>(rows * k_)) xq.resize(static_cast<size_t>(rows * k_));
  if (row_scales.size() < static_cast<size_t>(rows)) row_scales.resize(static_cast<size_t>(rows));
  if (acc.size() < static_cast<size_t>(rows * n_)) acc.resize(static_cast<size_t>(rows * n_));

  // SmoothQuant's division runs inside the quantize pass, as on the VNNI path.
  const QuantizeRowsArgs qargs{x,
                               inv_input_scale_.empty() ? nullptr : inv_input_scale_.data(),
                               k_,
                               xq.data(),
                               k_,
                               row_scales.data(),
                               scales_.activation_scale};
  const auto quantize = select_kernel(&quantize_rows_s8_scalar, &quantize_rows_s8_scalar, &quantize_rows_s8_avx512);
  parallel_for(0, rows, row_grain(k_), [&](int64_t begin, int64_t end) { quantize(qargs, begin, end); });
  const dnnl::engine& eng = cpu_engine();
  BRISK_RETURN_IF_ERROR(matmul_.run(rows, 0,
                                    {{DNNL_ARG_SRC, dnnl::memory({{rows, k_}, dt::s8, tag::ab}, eng, xq.data())},
                                     {DNNL_ARG_DST, dnnl::memory({{rows, n_}, dt::s32, tag::ab}, eng, acc.data())}}));
  const bool has_bias = bias_.defined() && bias_.numel() > 0;
  dequantize_rows_int8(acc.data(), row_scales.data(), scales_.weight_scale.data<float>(), scales_.weight_scale.numel(),
                       has_bias ? bias_.data<float>() : nullptr, epilogue, y, ldy, rows, n_);
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::shared_ptr<const Linear::Impl>> make_int8_linear(const Tensor& weight, const Tensor& bias,
                                                               const QuantScales& scales) {
  auto impl = std::make_shared<Int8Linear>(weight, bias, scales);
  try {
    impl->pack_weights();
  } catch (const dnnl::error& e) {
    return absl::InternalError(
        absl::StrCat("oneDNN could not pack int8 Linear weights ", weight.shape_string(), ": ", e.what()));
  }
  return std::shared_ptr<const Linear::Impl>(std::move(impl));
}

}  // namespace brisk::kernels::cpu
