// layer_norm_bias_residual and its quantizing variant: argument checks and the one dispatch point on the device.
#include "brisk/kernels/layernorm.h"

#include "cpu/cpu_ops.h"
#include "cuda/cuda_kernels.h"
#include "dispatch.h"
#include "linear_impl.h"

namespace brisk::kernels {
namespace {

template <typename T>
Status layer_norm(const char* op, Device device, const T* x, const T* bias, const T* residual, const T* gamma,
                  const T* beta, float epsilon, T* out, int8_t* q, float* row_scales, int64_t rows, int64_t cols) {
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(op, {{"rows", rows}, {"cols", cols}}));
  if (rows == 0 || cols == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(op, {{"x", x}, {"gamma", gamma}, {"beta", beta}, {"out", out}}));
  switch (device) {
    case Device::kCPU:
      BRISK_RETURN_IF_ERROR(kernels::cpu_needs_f32<T>(op));
      if constexpr (std::is_same_v<T, float>) {
        kernels::cpu::layer_norm_bias_residual(x, bias, residual, gamma, beta, epsilon, out, rows, cols);
        if (q != nullptr) kernels::cpu::quantize_rows_int8(out, rows, cols, q, row_scales);
      }
      return absl::OkStatus();
    case Device::kCUDA:
      return kernels::cuda::layer_norm_bias_residual(x, bias, residual, gamma, beta, epsilon, out, q, row_scales, rows,
                                                     cols);
  }
  return kernels::unknown_device(op, device);
}

}  // namespace

template <typename T>
Status layer_norm_bias_residual(Device device, const T* x, const std::type_identity_t<T>* bias,
                                const std::type_identity_t<T>* residual, const T* gamma, const T* beta, float epsilon,
                                T* out, int64_t rows, int64_t cols) {
  return layer_norm("layer_norm_bias_residual", device, x, bias, residual, gamma, beta, epsilon, out, nullptr, nullptr,
                    rows, cols);
}

template <typename T>
Status layer_norm_bias_residual_quantize(Device device, const T* x, const std::type_identity_t<T>* bias,
                                         const std::type_identity_t<T>* residual, const T* gamma, const T* beta,
                                         float epsilon, T* out, int8_t* q, float* row_scales, int64_t rows,
                                         int64_t cols) {
  constexpr const char* kOp = "layer_norm_bias_residual_quantize";
  if (rows > 0 && cols > 0) BRISK_RETURN_IF_ERROR(kernels::check_pointers(kOp, {{"q", q}, {"row_scales", row_scales}}));
  return layer_norm(kOp, device, x, bias, residual, gamma, beta, epsilon, out, q, row_scales, rows, cols);
}

Status layer_norm_bias_residual_quantize(Device device, const float* x, const float* bias, const float* residual,
                                         const float* gamma, const float* beta, float epsilon, float* out, int64_t rows,
                                         int64_t cols, const Linear& consumer, QuantizedInput& q, int64_t first_row) {
  constexpr const char* kOp = "layer_norm_bias_residual_quantize";
  if (device != Device::kCPU) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, " for a Linear on ", device_name(device),
                                                   "; expected cpu (the int8 Linears that take quantized input)"));
  }
  BRISK_RETURN_IF_ERROR(LinearAccess::check_consumer(kOp, consumer, cols, "cols"));
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(kOp, {{"rows", rows}, {"cols", cols}, {"first_row", first_row}}));
  const Linear::Impl& impl = *LinearAccess::impl(consumer);
  if (first_row > 0 && (LinearAccess::owner(q) != &impl || q.rows() != first_row)) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": first_row is ", first_row, "; expected 0 or the ", q.rows(),
                                                   " rows the QuantizedInput holds",
                                                   LinearAccess::owner(q) != nullptr && LinearAccess::owner(q) != &impl
                                                       ? " for this Linear (it holds another Linear's)"
                                                       : ""));
  }
  if (rows > 0) {
    BRISK_RETURN_IF_ERROR(kernels::check_pointers(kOp, {{"x", x}, {"gamma", gamma}, {"beta", beta}, {"out", out}}));
  }
  LinearAccess::prepare(q, impl, first_row, rows);
  if (rows == 0) return absl::OkStatus();
  kernels::cpu::layer_norm_bias_residual(
      x, bias, residual, gamma, beta, epsilon, out, rows, cols, [&](int64_t begin, int64_t end) {
        LinearAccess::quantize_block(q, impl, out + begin * cols, first_row + begin, end - begin);
      });
  return absl::OkStatus();
}

#define BRISK_INSTANTIATE(T)                                                                                      \
  template BRISK_API Status layer_norm_bias_residual<T>(Device, const T*, const T*, const T*, const T*, const T*, \
                                                        float, T*, int64_t, int64_t);                             \
  template BRISK_API Status layer_norm_bias_residual_quantize<T>(                                                 \
      Device, const T*, const T*, const T*, const T*, const T*, float, T*, int8_t*, float*, int64_t, int64_t);
BRISK_FOR_EACH_FLOAT_TYPE(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels
