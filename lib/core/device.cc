// Device names and the availability check behind RuntimeOptions::device and the tools' --device.
#include "brisk/core/device.h"

#include <charconv>

#include "brisk/core/allocator.h"

namespace brisk {

StatusOr<DeviceSpec> parse_device(std::string_view text) {
  if (text == "cpu") return DeviceSpec{Device::kCPU, 0};
  if (text == "cuda") return DeviceSpec{Device::kCUDA, 0};
  if (text.starts_with("cuda:")) {
    const std::string_view digits = text.substr(5);
    int index = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && !digits.empty() && index >= 0) {
      return DeviceSpec{Device::kCUDA, index};
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("device '", std::string(text), "' is not a device; expected cpu, cuda or cuda:N (N a GPU ordinal)"));
}

std::string device_string(const DeviceSpec& spec) {
  return spec.type == Device::kCPU ? std::string("cpu") : absl::StrCat("cuda:", spec.index);
}

bool device_runs_activation(Device device, DType activation) {
  return activation == DType::kF32 ||
         (device == Device::kCUDA && (activation == DType::kF16 || activation == DType::kBF16));
}

bool built_with_cuda() {
#if defined(BRISK_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

Status check_device_available(const DeviceSpec& spec) {
  if (spec.type == Device::kCPU) return absl::OkStatus();
  const std::string name = device_string(spec);
  if (!built_with_cuda()) {
    return absl::UnimplementedError(absl::StrCat("device ", name,
                                                 ": this brisk build has no CUDA support (configured with "
                                                 "BRISK_WITH_CUDA=OFF or without nvcc); expected device cpu, or a "
                                                 "build with -DBRISK_WITH_CUDA=ON"));
  }
  const int count = cuda_device_count();
  if (spec.index < 0 || spec.index >= count) {
    return absl::NotFoundError(absl::StrCat("device ", name, " is not present: this machine has ", count,
                                            " visible CUDA device", count == 1 ? "" : "s",
                                            count == 0 ? "; expected an NVIDIA GPU and its driver"
                                                       : absl::StrCat("; expected cuda:0 to cuda:", count - 1)));
  }
  return absl::OkStatus();
}

}  // namespace brisk
