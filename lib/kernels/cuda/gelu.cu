// CUDA bias + GeLU in place (erf and tanh forms), and the element-wise exp / erf / tanh of vector_math.h.
//
// bias_gelu: several rows per block (launch::plan_items), 16-byte accesses when cols and the pointers allow; x is
// read once and written once, the bias row comes from cache. vector_unary: a flat grid-stride kernel over
// float4 chunks with an element-wise tail (launch::plan_flat).
#include <cuda_runtime.h>

#include "cuda_kernels.h"
#include "kernel_util.cuh"

namespace brisk::kernels::cuda {
namespace {

// Mapping: launch::ItemPlan over rows (items) and column chunks.
template <typename D, int kVec, GeluApproximation kApprox>
__global__ void __launch_bounds__(1024) bias_gelu_kernel(D* x, const D* bias, int64_t rows, int64_t cols) {
  const int64_t chunks = cols / kVec;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    D* xr = x + r * cols;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[kVec];
      load_floats<kVec>(xr + c * kVec, v);
      if (bias != nullptr) {
        float b[kVec];
        load_floats<kVec>(bias + c * kVec, b);
#pragma unroll
        for (int j = 0; j < kVec; ++j) v[j] += b[j];
      }
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] = kApprox == GeluApproximation::kTanh ? gelu_tanh(v[j]) : gelu_erf(v[j]);
      store_floats<kVec>(xr + c * kVec, v);
    }
  }
}

template <typename D, int kVec>
Status launch_bias_gelu(D* x, const D* bias, int64_t rows, int64_t cols, GeluApproximation approx) {
  const launch::ItemPlan plan = launch::plan_items(rows, cols / kVec);
  const dim3 block(plan.block_x, plan.block_y);
  const LaunchCheck check("bias_gelu");
  if (approx == GeluApproximation::kTanh) {
    bias_gelu_kernel<D, kVec, GeluApproximation::kTanh>
        <<<grid_dim(plan.grid), block, 0, cudaStreamPerThread>>>(x, bias, rows, cols);
  } else {
    bias_gelu_kernel<D, kVec, GeluApproximation::kErf>
        <<<grid_dim(plan.grid), block, 0, cudaStreamPerThread>>>(x, bias, rows, cols);
  }
  return check.status();
}

template <UnaryOp kOp>
__device__ __forceinline__ float unary(float v) {
  if constexpr (kOp == UnaryOp::kExp) return expf(v);
  if constexpr (kOp == UnaryOp::kErf) return erff(v);
  return tanhf(v);
}

// Mapping: launch::FlatPlan; chunk c covers [c * kVec, min(c * kVec + kVec, n)).
template <UnaryOp kOp, int kVec>
__global__ void __launch_bounds__(1024) unary_kernel(const float* x, float* out, int64_t n) {
  const int64_t chunks = (n + kVec - 1) / kVec;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = c * kVec;
    if (i + kVec <= n) {
      float v[kVec];
      load_floats<kVec>(x + i, v);
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] = unary<kOp>(v[j]);
      store_floats<kVec>(out + i, v);
    } else {
      for (int64_t k = i; k < n; ++k) out[k] = unary<kOp>(x[k]);
    }
  }
}

template <UnaryOp kOp>
Status launch_unary(const float* x, float* out, int64_t n) {
  constexpr int kVec = 4;
  // The tail is element-wise, so only the base addresses decide.
  const bool vec = launch::vector_width(kVec, kVec, kVec, {{address(x), 4}, {address(out), 4}}) == kVec;
  const LaunchCheck check("vector_unary");
  if (vec) {
    const launch::FlatPlan plan = launch::plan_flat(n, kVec);
    unary_kernel<kOp, kVec><<<grid_dim(plan.grid), plan.threads, 0, cudaStreamPerThread>>>(x, out, n);
  } else {
    const launch::FlatPlan plan = launch::plan_flat(n, 1);
    unary_kernel<kOp, 1><<<grid_dim(plan.grid), plan.threads, 0, cudaStreamPerThread>>>(x, out, n);
  }
  return check.status();
}

}  // namespace

template <typename T>
Status bias_gelu(T* x, const T* bias, int64_t rows, int64_t cols, GeluApproximation approx) {
  if (rows <= 0 || cols <= 0) return absl::OkStatus();
  const int width =
      launch::vector_width_or_scalar(kFullWidth<T>, cols, cols, {{address(x), sizeof(T)}, {address(bias), sizeof(T)}});
  if (width == kFullWidth<T>) {
    return launch_bias_gelu<DeviceType<T>, kFullWidth<T>>(device_ptr(x), device_ptr(bias), rows, cols, approx);
  }
  return launch_bias_gelu<DeviceType<T>, 1>(device_ptr(x), device_ptr(bias), rows, cols, approx);
}

Status vector_unary(UnaryOp op, const float* x, float* out, int64_t n) {
  if (n <= 0) return absl::OkStatus();
  switch (op) {
    case UnaryOp::kExp: return launch_unary<UnaryOp::kExp>(x, out, n);
    case UnaryOp::kErf: return launch_unary<UnaryOp::kErf>(x, out, n);
    case UnaryOp::kTanh: return launch_unary<UnaryOp::kTanh>(x, out, n);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("vector_unary: op is ", static_cast<int>(op), "; expected kExp, kErf or kTanh"));
}

template Status bias_gelu<float>(float*, const float*, int64_t, int64_t, GeluApproximation);
template Status bias_gelu<float16_t>(float16_t*, const float16_t*, int64_t, int64_t, GeluApproximation);
template Status bias_gelu<bfloat16_t>(bfloat16_t*, const bfloat16_t*, int64_t, int64_t, GeluApproximation);

}  // namespace brisk::kernels::cuda
