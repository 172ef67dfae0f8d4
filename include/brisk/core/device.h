// Device names as users write them ("cpu", "cuda", "cuda:1") and the one check that a device can run here.
//
//   BRISK_ASSIGN_OR_RETURN(DeviceSpec spec, parse_device("cuda:0"));
//   BRISK_RETURN_IF_ERROR(check_device_available(spec));   // UNIMPLEMENTED / NOT_FOUND naming the device
//
// Thread safety: all functions may be called concurrently.
#pragma once

#include <string>
#include <string_view>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

struct DeviceSpec {
  Device type = Device::kCPU;
  int index = 0;  // the CUDA device ordinal; 0 for cpu
};

// "cpu", "cuda" (device 0) or "cuda:N"; anything else is INVALID_ARGUMENT naming the text and the accepted forms.
BRISK_API StatusOr<DeviceSpec> parse_device(std::string_view text);
// "cpu" or "cuda:N".
BRISK_API std::string device_string(const DeviceSpec& spec);

// OK for cpu. For cuda: UNIMPLEMENTED when this build has no CUDA (naming the build option BRISK_WITH_CUDA),
// NOT_FOUND when the machine has no such GPU (naming the device and how many there are).
BRISK_API Status check_device_available(const DeviceSpec& spec);

// Whether `device` computes with `activation` as its activations' dtype: f32 everywhere, f16 and bf16 on cuda.
BRISK_API bool device_runs_activation(Device device, DType activation);

// Whether this build has CUDA support (BRISK_WITH_CUDA); false does not mean the machine lacks a GPU.
BRISK_API bool built_with_cuda();

}  // namespace brisk
