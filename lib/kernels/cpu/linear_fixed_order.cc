// CPU Linear of reproducible arithmetic (brisk/core/internal/reproducible.h), for f32 and bf16 weights: the
// fixed-order GEMM (gemm_fixed_order.h) over the weights transposed once at create() (bf16 widened to f32 there),
// then the activation epilogue on the scalar element-wise kernel. Its bits do not depend on the CPU, the ISA level
// or the threads.
#include <algorithm>
#include <vector>

#include "brisk/core/half.h"
#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "cpu_linears.h"
#include "gemm_fixed_order.h"

namespace brisk::kernels::cpu {
namespace {

class FixedOrderLinear final : public Linear::Impl {
 public:
  FixedOrderLinear(std::vector<float> transposed, const Tensor& bias, int64_t n, int64_t k, bool widened_from_bf16)
      : transposed_(std::move(transposed)), bias_(bias), n_(n), k_(k), widened_from_bf16_(widened_from_bf16) {}

  Status forward(const void* x, int64_t rows, void* yv, GemmEpilogue epilogue, int64_t ldy) const override {
    float* y = static_cast<float*>(yv);
    const bool has_bias = bias_.defined() && bias_.numel() > 0;
    const FixedOrderGemmArgs g{static_cast<const float*>(x),
                               k_,
                               transposed_.data(),
                               n_,
                               has_bias ? bias_.data<float>() : nullptr,
                               epilogue == GemmEpilogue::kBiasAccumulate,
                               y,
                               ldy,
                               n_,
                               k_};
    gemm_fixed_order(g, rows);
    if (epilogue == GemmEpilogue::kBias || epilogue == GemmEpilogue::kBiasAccumulate) return absl::OkStatus();
    // The activations need ldy == n (Linear::forward checked it): the rows are contiguous.
    if (epilogue == GemmEpilogue::kBiasRelu) {
      for (int64_t i = 0; i < rows * n_; ++i) y[i] = std::max(y[i], 0.0f);
      return absl::OkStatus();
    }
    const ElementwiseArgs gelu{
        y, y, nullptr, n_, epilogue == GemmEpilogue::kBiasGeluErf ? ElementwiseOp::kGeluErf : ElementwiseOp::kGeluTanh};
    parallel_for(0, rows, row_grain(n_),
                 [&](int64_t begin, int64_t end) { elementwise_rows_scalar(gelu, begin, end); });
    return absl::OkStatus();
  }

  std::string kernel_name() const override {
    return widened_from_bf16_ ? "fixed-order f32 GEMM (reproducible; bf16 weights widened to f32 at load)"
                              : "fixed-order f32 GEMM (reproducible)";
  }

 private:
  std::vector<float> transposed_;  // [k, n]
  Tensor bias_;                    // [n] f32, or undefined
  int64_t n_ = 0;
  int64_t k_ = 0;
  bool widened_from_bf16_ = false;
};

}  // namespace

StatusOr<std::shared_ptr<const Linear::Impl>> make_fixed_order_linear(const Tensor& weight, const Tensor& bias) {
  const int64_t n = weight.dim(0), k = weight.dim(1);
  const bool bf16 = weight.dtype() == DType::kBF16;
  std::vector<float> transposed(static_cast<size_t>(n * k));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < k; ++p) {
      const int64_t i = j * k + p;
      transposed[static_cast<size_t>(p * n + j)] =
          bf16 ? bf16_to_float(static_cast<const uint16_t*>(weight.raw_data())[i]) : weight.data<float>()[i];
    }
  }
  return std::shared_ptr<const Linear::Impl>(
      std::make_shared<FixedOrderLinear>(std::move(transposed), bias, n, k, bf16));
}

}  // namespace brisk::kernels::cpu
