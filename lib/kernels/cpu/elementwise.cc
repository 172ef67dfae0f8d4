// The scalar reference of the element-wise row kernel (bias_gelu, vector_exp/erf/tanh), on std:: functions.
#include <cmath>

#include "cpu_kernels.h"

namespace brisk::kernels::cpu {
namespace {

template <ElementwiseOp kOp>
float apply_scalar(float x) {
  if constexpr (kOp == ElementwiseOp::kExp) return std::exp(x);
  if constexpr (kOp == ElementwiseOp::kErf) return std::erf(x);
  if constexpr (kOp == ElementwiseOp::kTanh) return std::tanh(x);
  if constexpr (kOp == ElementwiseOp::kGeluErf) return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
  if constexpr (kOp == ElementwiseOp::kGeluTanh) {
    constexpr float kSqrt2OverPi = 0.79788456080286536f;
    return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
  }
  if constexpr (kOp == ElementwiseOp::kSilu) return x / (1.0f + std::exp(-x));
}

template <ElementwiseOp kOp>
void rows_scalar(const ElementwiseArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* in = a.in + r * a.cols;
    float* out = a.out + r * a.cols;
    for (int64_t i = 0; i < a.cols; ++i) out[i] = apply_scalar<kOp>(a.bias != nullptr ? in[i] + a.bias[i] : in[i]);
  }
}

}  // namespace

void elementwise_rows_scalar(const ElementwiseArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.op) {
    case ElementwiseOp::kExp: return rows_scalar<ElementwiseOp::kExp>(a, row_begin, row_end);
    case ElementwiseOp::kErf: return rows_scalar<ElementwiseOp::kErf>(a, row_begin, row_end);
    case ElementwiseOp::kTanh: return rows_scalar<ElementwiseOp::kTanh>(a, row_begin, row_end);
    case ElementwiseOp::kGeluErf: return rows_scalar<ElementwiseOp::kGeluErf>(a, row_begin, row_end);
    case ElementwiseOp::kGeluTanh: return rows_scalar<ElementwiseOp::kGeluTanh>(a, row_begin, row_end);
    case ElementwiseOp::kSilu: return rows_scalar<ElementwiseOp::kSilu>(a, row_begin, row_end);
  }
}

}  // namespace brisk::kernels::cpu
