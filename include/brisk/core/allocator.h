// Device memory allocation behind Tensor. CPU memory is 64-byte aligned; CUDA memory comes from cudaMalloc when
// the build has CUDA, and is an error otherwise.
//
//   BRISK_ASSIGN_OR_RETURN(void* p, allocate(Device::kCPU, bytes));
//   deallocate(Device::kCPU, p);
//
// Thread safety: all functions may be called concurrently.
#pragma once

#include <cstddef>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

BRISK_API StatusOr<void*> allocate(Device device, size_t bytes);
BRISK_API void deallocate(Device device, void* ptr);

// Number of CUDA devices visible to this process; 0 in a build without CUDA or on a machine without a GPU.
BRISK_API int cuda_device_count();

}  // namespace brisk
