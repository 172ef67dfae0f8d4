// Who a CUDA launch error belongs to (lib/kernels/cuda/launch.h), on the host: a device fault raised by an earlier
// kernel (any thread's) is never reported as "failed to launch", nor is an error an earlier call left pending; the
// launch's own configuration errors still are. Runs in every build, GPU or not.
#include <catch2/catch.hpp>

#include <string>

#include "kernels/cuda/launch.h"

namespace brisk::kernels::cuda::launch {
namespace {

const CudaError kOk{kCudaSuccess, "cudaSuccess", "no error"};
const CudaError kIllegalAddress{kCudaErrorIllegalAddress, "cudaErrorIllegalAddress",
                                "an illegal memory access was encountered"};
const CudaError kBadConfig{kCudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
                           "invalid configuration argument"};
const CudaError kNoMemory{kCudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("launch errors: device faults are the sticky asynchronous kernel errors only", "[kernels][cuda-launch]") {
  for (const int fault : kDeviceFaults) CHECK(is_device_fault(fault));
  CHECK(is_device_fault(kCudaErrorIllegalAddress));
  CHECK(is_device_fault(kCudaErrorLaunchFailure));
  CHECK(is_device_fault(kCudaErrorAssert));
  CHECK_FALSE(is_device_fault(kCudaSuccess));
  CHECK_FALSE(is_device_fault(kCudaErrorInvalidConfiguration));
  CHECK_FALSE(is_device_fault(kCudaErrorLaunchOutOfResources));
  CHECK_FALSE(is_device_fault(kCudaErrorMemoryAllocation));
}

TEST_CASE("launch errors: each error is attributed to the call that caused it", "[kernels][cuda-launch]") {
  CHECK(attribute_launch_error(kCudaSuccess, kCudaSuccess) == LaunchFault::kNone);
  CHECK(attribute_launch_error(kCudaSuccess, kCudaErrorInvalidConfiguration) == LaunchFault::kLaunch);
  CHECK(attribute_launch_error(kCudaSuccess, kCudaErrorLaunchOutOfResources) == LaunchFault::kLaunch);
  // Another stream's kernel faulted; the fault is sticky, so this launch returns it too.
  CHECK(attribute_launch_error(kCudaSuccess, kCudaErrorIllegalAddress) == LaunchFault::kDeviceFault);
  CHECK(attribute_launch_error(kCudaErrorIllegalAddress, kCudaErrorIllegalAddress) == LaunchFault::kDeviceFault);
  // A failed allocation left its error behind; taking it before the launch cleared it.
  CHECK(attribute_launch_error(kCudaErrorMemoryAllocation, kCudaSuccess) == LaunchFault::kEarlierError);
  CHECK(attribute_launch_error(kCudaErrorMemoryAllocation, kCudaErrorInvalidConfiguration) ==
        LaunchFault::kEarlierError);
}

TEST_CASE("launch errors: an earlier asynchronous fault is not reported as a failed launch", "[kernels][cuda-launch]") {
  // Another executor's kernel faulted after the pending error was taken: only the error after the launch.
  const std::string m = launch_error_message("bias_gelu", kOk, kIllegalAddress);
  INFO(m);
  CHECK_FALSE(has(m, "failed to launch"));
  CHECK(has(m, "CUDA kernel bias_gelu was not run"));
  CHECK(has(m, "an earlier asynchronous CUDA error"));
  CHECK(has(m, "cudaErrorIllegalAddress (an illegal memory access was encountered)"));
  CHECK(has(m, "expected"));
  // Seen before the launch as well (LaunchCheck): the same attribution.
  CHECK(launch_error_message("bias_gelu", kIllegalAddress, kIllegalAddress) == m);
}

TEST_CASE("launch errors: an error pending from an earlier call is named as such", "[kernels][cuda-launch]") {
  const std::string launched = launch_error_message("convert", kNoMemory, kOk);
  INFO(launched);
  CHECK_FALSE(has(launched, "failed to launch"));
  CHECK(has(launched, "CUDA kernel convert was launched"));
  CHECK(has(launched, "an earlier CUDA error was pending on this thread: cudaErrorMemoryAllocation (out of memory)"));
  const std::string both = launch_error_message("convert", kNoMemory, kBadConfig);
  INFO(both);
  CHECK(has(both, "also failed to launch (cudaErrorInvalidConfiguration (invalid configuration argument))"));
  CHECK(has(both, "cudaErrorMemoryAllocation"));
}

TEST_CASE("launch errors: the launch's own error still reads as a failed launch", "[kernels][cuda-launch]") {
  CHECK(launch_error_message("softmax", kOk, kOk).empty());
  CHECK(launch_error_message("softmax", kOk, kBadConfig) ==
        "CUDA kernel softmax failed to launch: cudaErrorInvalidConfiguration (invalid configuration argument)");
}

}  // namespace brisk::kernels::cuda::launch
