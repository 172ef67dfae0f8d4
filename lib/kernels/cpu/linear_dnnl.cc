// CPU Linear on oneDNN matmul, for f32 and bf16 weights (packing, primitive cache and scratchpads: dnnl_matmul.h).
// bf16: each call rounds its activations to bf16 into a per-thread buffer; the matmul accumulates in f32 and writes
// f32, with the bias and epilogue fused as post-ops like the f32 path. That needs avx512_bf16: below that level
// (cpu_isa() at create(), or oneDNN's own cap), bf16 weights are widened to f32 once, at create(), and the Linear
// computes in f32.
#include <vector>

#include "brisk/core/cpu_features.h"
#include "brisk/core/half.h"
#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "dnnl_engine.h"
#include "dnnl_matmul.h"
#include "cpu_linears.h"

namespace brisk::kernels::cpu {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::post_ops epilogue_post_ops(GemmEpilogue epilogue) {
  dnnl::post_ops ops;
  switch (epilogue) {
    case GemmEpilogue::kBias: break;
    case GemmEpilogue::kBiasGeluErf: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f); break;
    case GemmEpilogue::kBiasGeluTanh: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f); break;
    case GemmEpilogue::kBiasRelu: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f); break;
    case GemmEpilogue::kBiasAccumulate: ops.append_sum(1.f); break;
  }
  return ops;
}

// The primitive cache's variant key: the epilogue and the output row stride.
int64_t variant_of(GemmEpilogue epilogue, int64_t ldy) { return ldy * 8 + static_cast<int64_t>(epilogue); }

class DnnlLinear final : public Linear::Impl {
 public:
  DnnlLinear(const Tensor& weight, const Tensor& bias, bool widened_from_bf16)
      : widened_from_bf16_(widened_from_bf16),
        bias_(bias),
        n_(weight.dim(0)),
        k_(weight.dim(1)),
        type_(weight.dtype() == DType::kBF16 ? dt::bf16 : dt::f32),
        matmul_(weight, type_, [this](int64_t rows, int64_t variant, const dnnl::memory::desc& weights) {
          return describe(rows, variant, weights);
        }) {}

  void pack() { matmul_.pack(); }
  Status forward(const void* x, int64_t rows, void* y, GemmEpilogue epilogue, int64_t ldy) const override;
  std::string kernel_name() const override;

 private:
  bool has_bias() const { return bias_.defined() && bias_.numel() > 0; }
  dnnl::matmul::primitive_desc describe(int64_t rows, int64_t variant, const dnnl::memory::desc& weights) const;

  bool widened_from_bf16_ = false;
  Tensor bias_;  // [n] f32, or undefined
  int64_t n_ = 0;
  int64_t k_ = 0;
  dt type_ = dt::f32;
  DnnlPackedMatmul matmul_;
};

dnnl::matmul::primitive_desc DnnlLinear::describe(int64_t rows, int64_t variant,
                                                  const dnnl::memory::desc& weights) const {
  const auto epilogue = static_cast<GemmEpilogue>(variant % 8);
  const int64_t ldy = variant == 0 ? n_ : variant / 8;  // variant 0: pack()'s probe
  dnnl::primitive_attr attr;
  attr.set_post_ops(epilogue_post_ops(epilogue));
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::memory::desc src({rows, k_}, type_, tag::ab);
  const dnnl::memory::desc dst({rows, n_}, dt::f32, dnnl::memory::dims{ldy, 1});
  if (has_bias()) {
    return {dnnl::matmul::desc(src, weights, dnnl::memory::desc({1, n_}, dt::f32, tag::ab), dst), attr, cpu_engine()};
  }
  return {dnnl::matmul::desc(src, weights, dst), attr, cpu_engine()};
}

std::string DnnlLinear::kernel_name() const {
  // The implementation oneDNN chose when the weights were packed (a 128-row probe of this shape): naming it builds
  // no primitive, so brisk info and Runtime::create pay nothing for it.
  std::string name = absl::StrCat("oneDNN ", matmul_.probe_implementation());
  if (widened_from_bf16_) name += " (bf16 weights widened to f32 at load: no avx512_bf16)";
  return name;
}

Status DnnlLinear::forward(const void* xv, int64_t rows, void* y, GemmEpilogue epilogue, int64_t ldy) const {
  const float* x = static_cast<const float*>(xv);
  thread_local std::vector<uint16_t> x_bf16;
  const void* src_data = x;
  if (type_ == dt::bf16) {
    if (x_bf16.size() < static_cast<size_t>(rows * k_)) x_bf16.resize(static_cast<size_t>(rows * k_));
    const Bf16RowsArgs args{x, k_, x_bf16.data()};
    const auto kernel = select_kernel(&bf16_rows_scalar, &bf16_rows_scalar, &bf16_rows_avx512);
    parallel_for(0, rows, row_grain(k_), [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
    src_data = x_bf16.data();
  }
  const dnnl::engine& eng = cpu_engine();
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory({{rows, k_}, type_, tag::ab}, eng, const_cast<void*>(src_data))},
      {DNNL_ARG_DST, dnnl::memory({{rows, n_}, dt::f32, dnnl::memory::dims{ldy, 1}}, eng, y)}};
  if (has_bias()) {
    args.emplace(DNNL_ARG_BIAS, dnnl::memory({{1, n_}, dt::f32, tag::ab}, eng, const_cast<void*>(bias_.raw_data())));
  }
  return matmul_.run(rows, variant_of(epilogue, ldy), std::move(args));
}

}  // namespace

StatusOr<std::shared_ptr<const Linear::Impl>> make_dnnl_linear(const Tensor& weight, const Tensor& bias) {
  const bool widen = weight.dtype() == DType::kBF16 && (cpu_isa() < CpuIsa::kAvx512Bf16 || !dnnl_runs_bf16());
  Tensor weights = weight;
  if (widen) {
    BRISK_ASSIGN_OR_RETURN(weights, Tensor::empty({weight.dim(0), weight.dim(1)}, DType::kF32, Device::kCPU));
    const uint16_t* from = static_cast<const uint16_t*>(weight.raw_data());
    float* to = weights.data<float>();
    for (int64_t i = 0; i < weight.numel(); ++i) to[i] = bf16_to_float(from[i]);
  }
  auto impl = std::make_shared<DnnlLinear>(weights, bias, widen);
  try {
    impl->pack();
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat("oneDNN could not pack Linear weights ", dtype_name(weight.dtype()), " ",
                                            weight.shape_string(), ": ", e.what()));
  }
  return std::shared_ptr<const Linear::Impl>(std::move(impl));
}

}  // namespace brisk::kernels::cpu
