// copy_bytes, convert and synchronize: argument checks and the one dispatch point on the device.
#include "brisk/kernels/copy.h"

#include <cstring>

#include "cpu/cpu_ops.h"
#include "cuda/cuda_kernels.h"
#include "dispatch.h"

namespace brisk::kernels {

Status copy_bytes(Device dst_device, void* dst, Device src_device, const void* src, size_t bytes) {
  constexpr const char* kOp = "copy_bytes";
  if (bytes == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(kOp, {{"dst", dst}, {"src", src}}));
  if (dst_device == Device::kCPU && src_device == Device::kCPU) {
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  for (Device d : {dst_device, src_device}) {
    if (d != Device::kCPU && d != Device::kCUDA) return kernels::unknown_device(kOp, d);
  }
  return kernels::cuda::copy_bytes(dst, src, bytes);
}

template <typename From, typename To>
Status convert(Device device, const From* in, To* out, int64_t n) {
  constexpr const char* kOp = "convert";
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(kOp, {{"n", n}}));
  if (n == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(kOp, {{"in", in}, {"out", out}}));
  switch (device) {
    case Device::kCPU: kernels::cpu::convert(in, out, n); return absl::OkStatus();
    case Device::kCUDA: return kernels::cuda::convert(in, out, n);
  }
  return kernels::unknown_device(kOp, device);
}

Status synchronize(Device device) {
  switch (device) {
    case Device::kCPU: return absl::OkStatus();
    case Device::kCUDA: return kernels::cuda::synchronize();
  }
  return kernels::unknown_device("synchronize", device);
}

#define BRISK_INSTANTIATE(From, To) template BRISK_API Status convert<From, To>(Device, const From*, To*, int64_t);
BRISK_FOR_EACH_CONVERSION(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels
