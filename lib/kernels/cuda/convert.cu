// CUDA element type conversion between float, float16_t and bfloat16_t (round to nearest even), byte copies in any
// direction, and the wait on the calling thread's stream.
//
// convert: a flat grid-stride kernel (launch::plan_flat) over chunks of 4 elements (16-byte float accesses, 8-byte
// 16-bit ones) with an element-wise tail; in is read once and out written once.
#include <cuda_runtime.h>

#include "cuda_kernels.h"
#include "kernel_util.cuh"

namespace brisk::kernels::cuda {
namespace {

// Mapping: launch::FlatPlan; chunk c covers [c * kVec, min(c * kVec + kVec, n)).
template <typename From, typename To, int kVec>
__global__ void __launch_bounds__(1024) convert_kernel(const From* in, To* out, int64_t n) {
  const int64_t chunks = (n + kVec - 1) / kVec;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = c * kVec;
    if (i + kVec <= n) {
      float v[kVec];
      load_floats<kVec>(in + i, v);
      store_floats<kVec>(out + i, v);
    } else {
      for (int64_t k = i; k < n; ++k) out[k] = from_float<To>(to_float(in[k]));
    }
  }
}

}  // namespace

template <typename From, typename To>
Status convert(const From* in, To* out, int64_t n) {
  if (n <= 0) return absl::OkStatus();
  using DF = DeviceType<From>;
  using DT = DeviceType<To>;
  constexpr int kVec = 4;
  // The tail is element-wise, so only the base addresses decide.
  const bool vec =
      launch::vector_width(kVec, kVec, kVec, {{address(in), sizeof(From)}, {address(out), sizeof(To)}}) == kVec;
  const LaunchCheck check("convert");
  if (vec) {
    const launch::FlatPlan plan = launch::plan_flat(n, kVec);
    convert_kernel<DF, DT, kVec>
        <<<grid_dim(plan.grid), plan.threads, 0, cudaStreamPerThread>>>(device_ptr(in), device_ptr(out), n);
  } else {
    const launch::FlatPlan plan = launch::plan_flat(n, 1);
    convert_kernel<DF, DT, 1>
        <<<grid_dim(plan.grid), plan.threads, 0, cudaStreamPerThread>>>(device_ptr(in), device_ptr(out), n);
  }
  return check.status();
}

Status copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  const cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cudaStreamPerThread);
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cudaMemcpyAsync of ", bytes, " bytes failed: ", cudaGetErrorName(err), " (",
                                          cudaGetErrorString(err), ")"));
}

Status synchronize() {
  const cudaError_t err = cudaStreamSynchronize(cudaStreamPerThread);
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("synchronizing the calling thread's CUDA stream failed: ", cudaGetErrorName(err), " (",
                   cudaGetErrorString(err), "); a kernel or copy queued on it since the last synchronize failed"));
}

#define BRISK_INSTANTIATE(From, To) template Status convert<From, To>(const From*, To*, int64_t);
BRISK_FOR_EACH_CONVERSION(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels::cuda
