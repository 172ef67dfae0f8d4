// Private to lib/kernels/cuda/*.cu: the device helpers every fused kernel shares — brisk's 16-bit types mapped to
// CUDA's, vector loads and stores of packed elements converted to fp32, warp and block reductions, and the launch
// error check.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "launch.h"

namespace brisk::kernels::cuda {

// brisk's element types as the CUDA types with the same bits (half.h: layout-compatible two-byte structs).
template <typename T>
struct DeviceTypeOf {
  using type = T;
};
template <>
struct DeviceTypeOf<float16_t> {
  using type = __half;
};
template <>
struct DeviceTypeOf<bfloat16_t> {
  using type = __nv_bfloat16;
};
template <typename T>
using DeviceType = typename DeviceTypeOf<T>::type;

template <typename T>
const DeviceType<T>* device_ptr(const T* p) {
  return reinterpret_cast<const DeviceType<T>*>(p);
}
template <typename T>
DeviceType<T>* device_ptr(T* p) {
  return reinterpret_cast<DeviceType<T>*>(p);
}

inline uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Elements of one 16-byte access.
template <typename T>
inline constexpr int kFullWidth = static_cast<int>(16 / sizeof(T));

// Values a thread of a row kernel keeps in registers (RowPlan::iters * width): 32 fp32 values plus addresses fit
// the 128 registers a 512-thread block leaves each thread.
inline constexpr int kMaxRowValues = 32;

// The plan's max_iters for a row kernel of vector width `width`.
inline constexpr int max_row_iters(int width) { return kMaxRowValues / width < 8 ? kMaxRowValues / width : 8; }

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename D>
__device__ __forceinline__ D from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// N consecutive elements moved as one access (N * sizeof(D) is 1, 2, 4, 8 or 16 bytes; the address must be
// aligned to it, which launch::vector_width guarantees).
template <typename D, int N>
struct alignas(sizeof(D) * N) Pack {
  D v[N];
};

template <int N, typename D>
__device__ __forceinline__ void load_floats(const D* p, float (&out)[N]) {
  const Pack<D, N> pk = *reinterpret_cast<const Pack<D, N>*>(p);
#pragma unroll
  for (int j = 0; j < N; ++j) out[j] = to_float(pk.v[j]);
}

// v += the N values at p (a bias, a residual, an embedding row).
template <int N, typename D>
__device__ __forceinline__ void add_floats(const D* p, float (&v)[N]) {
  float b[N];
  load_floats<N>(p, b);
#pragma unroll
  for (int j = 0; j < N; ++j) v[j] += b[j];
}

template <int N, typename D>
__device__ __forceinline__ void store_floats(D* p, const float (&in)[N]) {
  Pack<D, N> pk;
#pragma unroll
  for (int j = 0; j < N; ++j) pk.v[j] = from_float<D>(in[j]);
  *reinterpret_cast<Pack<D, N>*>(p) = pk;
}

template <int N, typename D>
__device__ __forceinline__ void store_zeros(D* p) {
  float z[N];
#pragma unroll
  for (int j = 0; j < N; ++j) z[j] = 0.0f;
  store_floats<N>(p, z);
}

// The value a D store would keep, back in fp32 (the quantizing kernels quantize what they stored).
template <typename D>
__device__ __forceinline__ float round_to(float v) {
  return to_float(from_float<D>(v));
}

// q = saturate(round-half-even(v * inv)) into [-127, 127], as the CPU's nearbyint in the default rounding mode.
__device__ __forceinline__ int8_t quantize_one(float v, float inv) {
  const float r = fminf(fmaxf(rintf(v * inv), -127.0f), 127.0f);
  return static_cast<int8_t>(static_cast<int>(r));
}

// GeLU, exact form (HF "gelu").
__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

// GeLU, tanh form: x / (1 + exp(-2u)) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), as the CPU evaluates
// it.
__device__ __forceinline__ float gelu_tanh(float v) {
  constexpr float kSqrt2OverPi = 0.79788456080286536f;
  const float u = v * fmaf(v * v, kSqrt2OverPi * 0.044715f, kSqrt2OverPi);
  return v / (1.0f + expf(-2.0f * u));
}

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Over a block of blockDim.x threads (a multiple of 32, blockDim.y == 1), every thread receives the result. Every
// thread of the block must call it.
template <class Op>
__device__ __forceinline__ float block_reduce(float v, Op op, float identity) {
  __shared__ float partial[32];
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  v = warp_reduce(v, op);
  __syncthreads();  // the previous call's readers are done with partial
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x >> 5) ? partial[lane] : identity;
  return warp_reduce(v, op);
}

// The reduction over the threads of one row: a warp (blockDim.x == 32, warp per row) or the whole block.
template <class Op>
__device__ __forceinline__ float row_reduce(float v, Op op, float identity) {
  return blockDim.x == 32 ? warp_reduce(v, op) : block_reduce(v, op, identity);
}
__device__ __forceinline__ float row_sum(float v) { return row_reduce(v, SumOp{}, 0.0f); }
__device__ __forceinline__ float row_max(float v) { return row_reduce(v, MaxOp{}, -INFINITY); }

// Two sums in one round of shared memory.
__device__ __forceinline__ void row_sum2(float& a, float& b) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, offset);
    b += __shfl_xor_sync(0xffffffffu, b, offset);
  }
  if (blockDim.x == 32) return;
  __shared__ float2 partial[32];
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  __syncthreads();
  if (lane == 0) partial[warp] = make_float2(a, b);
  __syncthreads();
  const float2 p = lane < static_cast<int>(blockDim.x >> 5) ? partial[lane] : make_float2(0.0f, 0.0f);
  a = p.x;
  b = p.y;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, offset);
    b += __shfl_xor_sync(0xffffffffu, b, offset);
  }
}

// The error codes launch.h attributes, as the runtime defines them.
static_assert(launch::kCudaSuccess == cudaSuccess);
static_assert(launch::kCudaErrorMemoryAllocation == cudaErrorMemoryAllocation);
static_assert(launch::kCudaErrorInvalidConfiguration == cudaErrorInvalidConfiguration);
static_assert(launch::kCudaErrorLaunchOutOfResources == cudaErrorLaunchOutOfResources);
static_assert(launch::kCudaErrorECCUncorrectable == cudaErrorECCUncorrectable);
static_assert(launch::kCudaErrorContained == cudaErrorContained);
static_assert(launch::kCudaErrorIllegalAddress == cudaErrorIllegalAddress);
static_assert(launch::kCudaErrorLaunchTimeout == cudaErrorLaunchTimeout);
static_assert(launch::kCudaErrorAssert == cudaErrorAssert);
static_assert(launch::kCudaErrorHardwareStackError == cudaErrorHardwareStackError);
static_assert(launch::kCudaErrorIllegalInstruction == cudaErrorIllegalInstruction);
static_assert(launch::kCudaErrorMisalignedAddress == cudaErrorMisalignedAddress);
static_assert(launch::kCudaErrorInvalidAddressSpace == cudaErrorInvalidAddressSpace);
static_assert(launch::kCudaErrorInvalidPc == cudaErrorInvalidPc);
static_assert(launch::kCudaErrorLaunchFailure == cudaErrorLaunchFailure);
static_assert(launch::kCudaErrorTensorMemoryLeak == cudaErrorTensorMemoryLeak);
static_assert(launch::kCudaErrorExternalDevice == cudaErrorExternalDevice);

inline launch::CudaError cuda_error(cudaError_t e) {
  return {static_cast<int>(e), cudaGetErrorName(e), cudaGetErrorString(e)};
}

// INTERNAL with launch::launch_error_message when the errors taken before (`pending`) and after a launch say
// something went wrong, attributed to whoever caused it; OK otherwise.
inline Status launch_status(const char* kernel, cudaError_t pending, cudaError_t after) {
  if (pending == cudaSuccess && after == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(launch::launch_error_message(kernel, cuda_error(pending), cuda_error(after)));
}

// Brackets one launch so that its status names the launch's own error, and an earlier one as earlier (every
// launch in lib/kernels/cuda/*.cu goes through one):
//   LaunchCheck check("bias_gelu");                    // takes (and clears) an error left pending before
//   bias_gelu_kernel<<<grid, block, 0, cudaStreamPerThread>>>(...);
//   return check.status();
class LaunchCheck {
 public:
  explicit LaunchCheck(const char* kernel) : kernel_(kernel), pending_(cudaGetLastError()) {}
  Status status() const { return launch_status(kernel_, pending_, cudaGetLastError()); }

 private:
  const char* kernel_;
  cudaError_t pending_;
};

inline dim3 grid_dim(int64_t grid) { return dim3(static_cast<unsigned>(grid)); }

// Calls f(std::integral_constant<int, I>{}) for the plan's iters: the register-resident variants a row kernel of
// width kVec is compiled for (iters * kVec <= kMaxRowValues), or 0 (streaming).
template <int kVec, class F>
Status dispatch_iters(int iters, const char* kernel, F&& f) {
  switch (iters) {
    case 0: return f(std::integral_constant<int, 0>{});
    case 1: return f(std::integral_constant<int, 1>{});
    case 2:
      if constexpr (2 * kVec <= kMaxRowValues) return f(std::integral_constant<int, 2>{});
      break;
    case 4:
      if constexpr (4 * kVec <= kMaxRowValues) return f(std::integral_constant<int, 4>{});
      break;
    case 8:
      if constexpr (8 * kVec <= kMaxRowValues) return f(std::integral_constant<int, 8>{});
      break;
    default: break;
  }
  return absl::InternalError(absl::StrCat("row plan of ", kernel, " has ", iters,
                                          " chunks per thread; expected 0, 1, 2, 4 or 8 with at most ", kMaxRowValues,
                                          " values per thread"));
}

}  // namespace brisk::kernels::cuda
