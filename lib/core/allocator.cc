// Aligned CPU allocation (and the CUDA allocation entry points) behind Tensor's storage.
#include "brisk/core/allocator.h"

#include <cstdlib>

namespace brisk {

// Defined in allocator_cuda.cc when the build has CUDA, and below otherwise.
StatusOr<void*> cuda_allocate(size_t bytes);
void cuda_deallocate(void* ptr);
int cuda_device_count_impl();

StatusOr<void*> allocate(Device device, size_t bytes) {
  switch (device) {
    case Device::kCPU: {
      // aligned_alloc needs a size that is a multiple of the alignment, and never returns null for 0 here.
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

#if !defined(BRISK_HAVE_CUDA)
StatusOr<void*> cuda_allocate(size_t) {
  return absl::UnimplementedError("this brisk build has no CUDA support; expected device cpu");
}
void cuda_deallocate(void*) {}
int cuda_device_count_impl() { return 0; }
#endif

}  // namespace brisk

namespace brisk {
// Placeholder until the caching allocator lands (branch wt-alloc replaces this file).
Status set_device_memory_limit(Device, size_t) { return absl::UnimplementedError("device memory limit"); }
}  // namespace brisk
