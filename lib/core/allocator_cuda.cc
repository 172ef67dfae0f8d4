// CUDA device memory for Tensor; compiled only when the build has CUDA.
#include <cuda_runtime_api.h>

#include "brisk/core/allocator.h"

namespace brisk {

StatusOr<void*> cuda_allocate(size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (err != cudaSuccess) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cudaMalloc of ", bytes, " bytes failed: ", cudaGetErrorString(err)));
  }
  return p;
}

void cuda_deallocate(void* ptr) { cudaFree(ptr); }

int cuda_device_count_impl() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

}  // namespace brisk
