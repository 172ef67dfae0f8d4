// bias_gelu: argument checks and the one dispatch point on the device.
#include "brisk/kernels/gelu.h"

#include "cpu/cpu_ops.h"
#include "cuda/cuda_kernels.h"
#include "dispatch.h"

namespace brisk::kernels {

template <typename T>
Status bias_gelu(Device device, T* x, const std::type_identity_t<T>* bias, int64_t rows, int64_t cols,
                 GeluApproximation approx) {
  constexpr const char* kOp = "bias_gelu";
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(kOp, {{"rows", rows}, {"cols", cols}}));
  if (rows == 0 || cols == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(kOp, {{"x", x}}));
  switch (device) {
    case Device::kCPU:
      BRISK_RETURN_IF_ERROR(kernels::cpu_needs_f32<T>(kOp));
      if constexpr (std::is_same_v<T, float>) kernels::cpu::bias_gelu(x, bias, rows, cols, approx);
      return absl::OkStatus();
    case Device::kCUDA: return kernels::cuda::bias_gelu(x, bias, rows, cols, approx);
  }
  return kernels::unknown_device(kOp, device);
}

#define BRISK_INSTANTIATE(T) \
  template BRISK_API Status bias_gelu<T>(Device, T*, const T*, int64_t, int64_t, GeluApproximation);
BRISK_FOR_EACH_FLOAT_TYPE(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels
