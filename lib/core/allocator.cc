// Aligned CPU allocation, and the device-dispatching entry points of the caching CUDA allocator (allocator.h).
#include "brisk/core/allocator.h"

#include <cstdlib>
#include <limits>

namespace brisk {

// Defined in allocator_cuda.cc when the build has CUDA, and below otherwise.
StatusOr<void*> cuda_allocate(size_t bytes);
void cuda_deallocate(void* ptr);
int cuda_device_count_impl();
Status cuda_set_memory_limit(size_t bytes);
DeviceMemoryStats cuda_memory_stats();
void cuda_release_cached();

StatusOr<void*> allocate(Device device, size_t bytes) {
  switch (device) {
    case Device::kCPU: {
      // aligned_alloc needs a size that is a multiple of the alignment, and never returns null for 0 here.
      if (bytes > std::numeric_limits<size_t>::max() - kTensorAlignment) {
        return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes of cpu memory"));
      }
      const size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
      void* p = std::aligned_alloc(kTensorAlignment, rounded == 0 ? kTensorAlignment : rounded);
      if (p == nullptr) {
        return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes of cpu memory"));
      }
      return p;
    }
    case Device::kCUDA: return cuda_allocate(bytes);
  }
  return absl::InvalidArgumentError("unknown device; expected cpu or cuda");
}

void deallocate(Device device, void* ptr) {
  if (ptr == nullptr) return;
  if (device == Device::kCPU) {
    std::free(ptr);
  } else {
    cuda_deallocate(ptr);
  }
}

int cuda_device_count() { return cuda_device_count_impl(); }

Status set_device_memory_limit(Device device, size_t bytes) {
  if (device == Device::kCUDA) return cuda_set_memory_limit(bytes);
  return absl::InvalidArgumentError(absl::StrCat("set_device_memory_limit: device is ", device_name(device),
                                                 ", which has no memory cap; expected cuda"));
}

DeviceMemoryStats device_memory_stats(Device device) {
  return device == Device::kCUDA ? cuda_memory_stats() : DeviceMemoryStats{};
}

void release_cached_device_memory(Device device) {
  if (device == Device::kCUDA) cuda_release_cached();
}

#if !defined(BRISK_HAVE_CUDA)
StatusOr<void*> cuda_allocate(size_t) {
  return absl::UnimplementedError(
      "this brisk build has no CUDA support (built with BRISK_WITH_CUDA=OFF); expected device cpu");
}
void cuda_deallocate(void*) {}
int cuda_device_count_impl() { return 0; }
Status cuda_set_memory_limit(size_t) {
  return absl::UnimplementedError(
      "set_device_memory_limit: this brisk build has no CUDA support (built with BRISK_WITH_CUDA=OFF); expected "
      "device cpu, which has no cap");
}
DeviceMemoryStats cuda_memory_stats() { return {}; }
void cuda_release_cached() {}
#endif

}  // namespace brisk
