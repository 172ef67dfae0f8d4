// vector_exp, vector_erf and vector_tanh: argument checks and the one dispatch point on the device.
#include "brisk/kernels/vector_math.h"

#include "cpu/cpu_ops.h"
#include "cuda/cuda_kernels.h"
#include "dispatch.h"

namespace brisk::kernels {
namespace {

Status unary(const char* op, Device device, kernels::UnaryOp unary_op, const float* x, float* out, int64_t n) {
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(op, {{"n", n}}));
  if (n == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(op, {{"x", x}, {"out", out}}));
  switch (device) {
    case Device::kCPU: kernels::cpu::vector_unary(unary_op, x, out, n); return absl::OkStatus();
    case Device::kCUDA: return kernels::cuda::vector_unary(unary_op, x, out, n);
  }
  return kernels::unknown_device(op, device);
}

}  // namespace

Status vector_exp(Device device, const float* x, float* out, int64_t n) {
  return unary("vector_exp", device, kernels::UnaryOp::kExp, x, out, n);
}

Status vector_erf(Device device, const float* x, float* out, int64_t n) {
  return unary("vector_erf", device, kernels::UnaryOp::kErf, x, out, n);
}

Status vector_tanh(Device device, const float* x, float* out, int64_t n) {
  return unary("vector_tanh", device, kernels::UnaryOp::kTanh, x, out, n);
}

}  // namespace brisk::kernels
