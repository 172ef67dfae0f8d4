// brisk::kernels::Linear: argument checks and the one dispatch point on device and weight dtype.
#include <cmath>

#include "brisk/core/device.h"
#include "brisk/core/internal/reproducible.h"
#include "brisk/kernels/linear.h"
#include "cpu/cpu_linears.h"
#include "cuda/cuda_kernels.h"
#include "dispatch.h"
#include "linear_impl.h"

namespace brisk::kernels {
namespace {

Status check_scales(const Tensor& weight, const QuantScales& scales) {
  const Tensor& s = scales.weight_scale;
  if (!s.defined() || s.dtype() != DType::kF32 || s.rank() != 1 || (s.dim(0) != 1 && s.dim(0) != weight.dim(0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear i8 weight_scale is ",
                     s.defined() ? absl::StrCat(dtype_name(s.dtype()), " ", s.shape_string()) : std::string("missing"),
                     "; expected f32 [", weight.dim(0), "] or [1]"));
  }
  const float* v = s.data<float>();
  for (int64_t i = 0; i < s.numel(); ++i) {
    if (!(v[i] > 0.0f) || !std::isfinite(v[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("Linear i8 weight_scale[", i, "] is ", v[i], "; expected a finite value > 0"));
    }
  }
  const Tensor& in = scales.input_scale;
  if (in.defined()) {
    if (in.dtype() != DType::kF32 || in.rank() != 1 || in.dim(0) != weight.dim(1) || !in.is_contiguous()) {
      return absl::InvalidArgumentError(absl::StrCat("Linear input_scale is ", dtype_name(in.dtype()), " ",
                                                     in.shape_string(), "; expected f32 [", weight.dim(1), "]"));
    }
    for (int64_t i = 0; i < in.numel(); ++i) {
      const float x = in.data<float>()[i];
      // The layer divides its input by it (multiplies by 1 / x): 1e-45 would make that infinite.
      if (!(x > 0.0f) || !std::isfinite(x) || !std::isfinite(1.0f / x)) {
        return absl::InvalidArgumentError(absl::StrCat("Linear input_scale[", i, "] is ", x,
                                                       "; expected a finite value > 0 whose inverse is finite"));
      }
    }
  }
  if (!(scales.activation_scale >= 0.0f) || !std::isfinite(scales.activation_scale) ||
      (scales.activation_scale > 0.0f && !std::isfinite(1.0f / scales.activation_scale))) {
    return absl::InvalidArgumentError(absl::StrCat("Linear activation_scale is ", scales.activation_scale,
                                                   "; expected 0 (dynamic) or a finite value > 0 (static) whose "
                                                   "inverse is finite"));
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<Linear> Linear::create(const Tensor& weight, const Tensor& bias, Device device, const QuantScales& scales,
                                DType activation) {
  const DType wt = weight.dtype();
  if (weight.rank() != 2 || !weight.is_contiguous() || (wt != DType::kF32 && wt != DType::kBF16 && wt != DType::kI8)) {
    return absl::InvalidArgumentError(absl::StrCat("Linear weight is ", dtype_name(wt), " ", weight.shape_string(),
                                                   "; expected a contiguous f32, bf16 or i8 [out, in] matrix"));
  }
  const bool has_bias = bias.defined() && bias.numel() > 0;
  if (has_bias && (bias.dtype() != DType::kF32 || bias.numel() != weight.dim(0) || !bias.is_contiguous())) {
    return absl::InvalidArgumentError(absl::StrCat("Linear bias is ", dtype_name(bias.dtype()), " ",
                                                   bias.shape_string(), "; expected f32 [", weight.dim(0), "]"));
  }
  if (wt == DType::kI8) BRISK_RETURN_IF_ERROR(check_scales(weight, scales));
  Linear linear;
  const Tensor no_bias;
  switch (device) {
    case Device::kCPU: {
      if (!device_runs_activation(device, activation)) {
        return absl::InvalidArgumentError(absl::StrCat("Linear activation dtype on cpu is ", dtype_name(activation),
                                                       "; expected f32 (f16 and bf16 activations run on cuda)"));
      }
      if (wt == DType::kI8) {
        BRISK_ASSIGN_OR_RETURN(linear.impl_, kernels::cpu::make_int8_linear(weight, has_bias ? bias : no_bias, scales));
      } else if (internal::reproducible_arithmetic()) {
        BRISK_ASSIGN_OR_RETURN(linear.impl_, kernels::cpu::make_fixed_order_linear(weight, has_bias ? bias : no_bias));
      } else {
        BRISK_ASSIGN_OR_RETURN(linear.impl_, kernels::cpu::make_dnnl_linear(weight, has_bias ? bias : no_bias));
      }
      break;
    }
    case Device::kCUDA: {
      if (!device_runs_activation(device, activation)) {
        return absl::InvalidArgumentError(
            absl::StrCat("Linear activation dtype is ", dtype_name(activation), "; expected f32, f16 or bf16"));
      }
      BRISK_ASSIGN_OR_RETURN(linear.impl_,
                             kernels::cuda::make_linear(weight, has_bias ? bias : no_bias, scales, activation));
      break;
    }
    default: return kernels::unknown_device("Linear::create", device);
  }
  linear.in_features_ = weight.dim(1);
  linear.out_features_ = weight.dim(0);
  linear.weight_dtype_ = wt;
  linear.activation_dtype_ = activation;
  linear.device_ = device;
  return linear;
}

std::string Linear::kernel_name() const { return impl_ != nullptr ? impl_->kernel_name() : std::string(); }

uint64_t cuda_int8_fallback_calls() { return cuda::int8_fallback_calls(); }

Status Linear::check_output(const void* y, int64_t rows, GemmEpilogue epilogue, int64_t& ldy) const {
  if (rows < 0) return absl::InvalidArgumentError(absl::StrCat("Linear::forward rows is ", rows, "; expected >= 0"));
  if (y == nullptr) return absl::InvalidArgumentError("Linear::forward got a null y; expected the output rows");
  if (ldy == 0) ldy = out_features_;
  if (ldy < out_features_) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear::forward ldy is ", ldy, "; expected 0 or at least out_features = ", out_features_));
  }
  const bool activation = epilogue != GemmEpilogue::kBias && epilogue != GemmEpilogue::kBiasAccumulate;
  if (activation && ldy != out_features_) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear::forward with an activation epilogue needs ldy = ", out_features_, "; got ", ldy));
  }
  return absl::OkStatus();
}

template <typename T>
Status Linear::forward(const T* x, int64_t rows, T* y, GemmEpilogue epilogue, int64_t ldy) const {
  if (impl_ == nullptr) return absl::FailedPreconditionError("Linear::forward on an empty Linear");
  if (kernels::dtype_of<T>() != activation_dtype_) {
    return absl::InvalidArgumentError(absl::StrCat("Linear::forward got ", dtype_name(kernels::dtype_of<T>()),
                                                   " activations; expected ", dtype_name(activation_dtype_),
                                                   " (the Linear's activation dtype)"));
  }
  if (rows == 0) return absl::OkStatus();
  if (x == nullptr) return absl::InvalidArgumentError("Linear::forward got a null x; expected the input rows");
  BRISK_RETURN_IF_ERROR(check_output(y, rows, epilogue, ldy));
  return impl_->forward(x, rows, y, epilogue, ldy);
}

bool Linear::takes_quantized_input() const { return impl_ != nullptr && impl_->quantized_row_bytes() > 0; }

Status LinearAccess::check_consumer(const char* op, const Linear& consumer, int64_t width, const char* width_name) {
  if (!consumer.takes_quantized_input()) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": the consuming Linear has ", dtype_name(consumer.weight_dtype()), " weights on ",
        device_name(consumer.device()), "; expected an int8 Linear on the cpu (Linear::takes_quantized_input)"));
  }
  if (consumer.in_features() != width) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": the consuming Linear's in_features is ",
                                                   consumer.in_features(), "; expected ", width_name, " = ", width));
  }
  return absl::OkStatus();
}

namespace {

// The checks of Linear::forward's QuantizedInput forms: x quantized for `impl`, and [first_row, first_row + rows)
// within it.
Status check_quantized_input(const Linear::Impl* impl, const QuantizedInput& x, int64_t first_row, int64_t rows) {
  if (impl == nullptr) return absl::FailedPreconditionError("Linear::forward on an empty Linear");
  if (LinearAccess::owner(x) != impl) {
    return absl::InvalidArgumentError(
        x.rows() == 0 ? "Linear::forward got an empty QuantizedInput; expected rows quantized for this Linear"
                      : "Linear::forward got a QuantizedInput quantized for another Linear; expected this one's");
  }
  if (first_row < 0 || rows < 0 || first_row + rows > x.rows()) {
    return absl::InvalidArgumentError(absl::StrCat("Linear::forward rows [", first_row, ", ", first_row + rows,
                                                   ") of a QuantizedInput; expected a range within its ", x.rows(),
                                                   " rows"));
  }
  return absl::OkStatus();
}

}  // namespace

Status Linear::forward(const QuantizedInput& x, int64_t first_row, int64_t rows, float* y, GemmEpilogue epilogue,
                       int64_t ldy) const {
  BRISK_RETURN_IF_ERROR(check_quantized_input(impl_.get(), x, first_row, rows));
  if (rows == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(check_output(y, rows, epilogue, ldy));
  return impl_->forward_quantized(LinearAccess::codes(x, first_row), LinearAccess::row_scales(x, first_row), rows, y,
                                  epilogue, ldy, nullptr);
}

Status Linear::forward(const QuantizedInput& x, int64_t first_row, int64_t rows, float* y, GemmEpilogue epilogue,
                       const Linear& consumer, QuantizedInput& q) const {
  BRISK_RETURN_IF_ERROR(check_quantized_input(impl_.get(), x, first_row, rows));
  BRISK_RETURN_IF_ERROR(
      LinearAccess::check_consumer("Linear::forward", consumer, out_features_, "this Linear's out_features"));
  if (&q == &x) {
    return absl::InvalidArgumentError(
        "Linear::forward got its input QuantizedInput as the consumer's; expected another one");
  }
  if (y == nullptr && epilogue == GemmEpilogue::kBiasAccumulate) {
    return absl::InvalidArgumentError(
        "Linear::forward with kBiasAccumulate got a null y; expected the output to add to (null y: kBias or an "
        "activation epilogue only)");
  }
  int64_t ldy = out_features_;
  // y may be null here: the output then reaches only q.
  if (rows > 0 && y != nullptr) BRISK_RETURN_IF_ERROR(check_output(y, rows, epilogue, ldy));
  const Impl& encoding = *consumer.impl_;
  LinearAccess::prepare(q, encoding, 0, rows);
  if (rows == 0) return absl::OkStatus();
  const RowsDone then = [&](int64_t begin, int64_t end, const float* block) {
    LinearAccess::quantize_block(q, encoding, block, begin, end - begin);
  };
  return impl_->forward_quantized(LinearAccess::codes(x, first_row), LinearAccess::row_scales(x, first_row), rows, y,
                                  epilogue, ldy, &then);
}

#define BRISK_INSTANTIATE(T) \
  template BRISK_API Status Linear::forward<T>(const T*, int64_t, T*, GemmEpilogue, int64_t) const;
BRISK_FOR_EACH_FLOAT_TYPE(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels
