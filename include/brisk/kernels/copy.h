// Moving and converting data between the host and a device, for the encoder's inputs, weights and outputs.
//
//   BRISK_RETURN_IF_ERROR(copy_bytes(Device::kCUDA, d_ids, Device::kCPU, ids.data(), ids.size() * 4));
//   BRISK_RETURN_IF_ERROR(convert(Device::kCUDA, d_hidden_f16, d_hidden_f32, n));   // on the device
//   BRISK_RETURN_IF_ERROR(synchronize(Device::kCUDA));   // the host may now read what was copied back
//
//   copy_bytes   between any two of host and device memory. CUDA copies are asynchronous on the calling thread's
//                stream: host memory must stay alive and unchanged until synchronize(). CPU to CPU is memcpy.
//   convert      out[i] = in[i] converted between float, float16_t and bfloat16_t (round to nearest even; beyond the
//                f16 range gives inf), in and out on `device`.
//   synchronize  waits for the calling thread's CUDA stream; reports a kernel that failed on it. A no-op for cpu.
//
// Thread safety: reentrant. On CUDA each thread has its own stream (cudaStreamPerThread), so the batcher's
// executors, each a thread, overlap on the device; work a thread queued is ordered only with that thread's work.
#pragma once

#include <cstddef>
#include <cstdint>

#include "brisk/core/export.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk::kernels {

BRISK_API Status copy_bytes(Device dst_device, void* dst, Device src_device, const void* src, size_t bytes);

template <typename From, typename To>
BRISK_API Status convert(Device device, const From* in, To* out, int64_t n);

BRISK_API Status synchronize(Device device);

}  // namespace brisk::kernels
