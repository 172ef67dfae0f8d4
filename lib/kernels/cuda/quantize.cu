// CUDA row-wise int8 quantization of activations (per-row absmax scale, or one static scale; SmoothQuant's 1 / s
// applied channel by channel in the same pass) and the dequantizing epilogue of an int8 GEMM (row scale x column
// scale, bias, then GeLU / ReLU / accumulate).
//
// quantize_rows_int8: one warp per row up to 1024 columns, one block per row above (launch::plan_rows); the row is
// read once into registers, its absmax reduced, and q written once (rows too long for registers read x twice).
// dequantize_rows_int8: element-wise over [rows, cols], several rows per block (launch::plan_items), 4 columns per
// access (16 bytes of int32 accumulators); acc is read once, y written once (read once more for kBiasAccumulate).
#include <cuda_runtime.h>

#include "cuda_kernels.h"
#include "kernel_util.cuh"

namespace brisk::kernels::cuda {
namespace {

// x[c .. c + kVec) as floats, times channel_scale[c ..] when there is one (SmoothQuant's 1 / s).
template <int kVec, typename D>
__device__ __forceinline__ void load_scaled(const D* x, const float* channel_scale, int64_t c, float (&v)[kVec]) {
  load_floats<kVec>(x + c, v);
  if (channel_scale != nullptr) {
    float s[kVec];
    load_floats<kVec>(channel_scale + c, s);
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] *= s[j];
  }
}

// Mapping: launch::RowPlan.
template <typename D, int kVec, int kIters>
__global__ void __launch_bounds__(launch::kMaxRowBlockThreads)
    quantize_rows_kernel(const D* x, int64_t rows, int64_t cols, Int8RowQuant rq, int8_t* q, float* row_scales) {
  const int64_t chunks = (cols + kVec - 1) / kVec;
  const int64_t tpr = blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const D* xr = x + r * cols;
    int8_t* qr = q + r * cols;
    float absmax = 0.0f;
    if constexpr (kIters > 0) {
      float v[kIters][kVec];
#pragma unroll
      for (int k = 0; k < kIters; ++k) {
        const int64_t c = threadIdx.x + k * tpr;
        if (c < chunks) {
          load_scaled<kVec>(xr, rq.channel_scale, c * kVec, v[k]);
#pragma unroll
          for (int j = 0; j < kVec; ++j) absmax = fmaxf(absmax, fabsf(v[k][j]));
        }
      }
      const float scale = rq.row_scale(row_max(absmax));
      const float inv = 1.0f / scale;
#pragma unroll
      for (int k = 0; k < kIters; ++k) {
        const int64_t c = threadIdx.x + k * tpr;
        if (c < chunks) {
          Pack<int8_t, kVec> pk;
#pragma unroll
          for (int j = 0; j < kVec; ++j) pk.v[j] = quantize_one(v[k][j], inv);
          *reinterpret_cast<Pack<int8_t, kVec>*>(qr + c * kVec) = pk;
        }
      }
      if (threadIdx.x == 0) row_scales[r] = scale;
    } else {
      if (rq.static_scale <= 0.0f) {
        for (int64_t c = threadIdx.x; c < chunks; c += tpr) {
          float v[kVec];
          load_scaled<kVec>(xr, rq.channel_scale, c * kVec, v);
#pragma unroll
          for (int j = 0; j < kVec; ++j) absmax = fmaxf(absmax, fabsf(v[j]));
        }
      }
      const float scale = rq.row_scale(row_max(absmax));
      const float inv = 1.0f / scale;
      for (int64_t c = threadIdx.x; c < chunks; c += tpr) {
        float v[kVec];
        load_scaled<kVec>(xr, rq.channel_scale, c * kVec, v);
        Pack<int8_t, kVec> pk;
#pragma unroll
        for (int j = 0; j < kVec; ++j) pk.v[j] = quantize_one(v[j], inv);
        *reinterpret_cast<Pack<int8_t, kVec>*>(qr + c * kVec) = pk;
      }
      if (threadIdx.x == 0) row_scales[r] = scale;
    }
  }
}

template <typename D, int kVec>
Status launch_quantize(const D* x, int64_t rows, int64_t cols, Int8RowQuant rq, int8_t* q, float* row_scales) {
  constexpr const char* kName = "quantize_rows_int8";
  const launch::RowPlan plan = launch::plan_rows(rows, cols, kVec, max_row_iters(kVec));
  return dispatch_iters<kVec>(plan.iters, kName, [&](auto iters) {
    constexpr int kIters = decltype(iters)::value;
    const LaunchCheck check(kName);
    quantize_rows_kernel<D, kVec, kIters>
        <<<grid_dim(plan.grid), dim3(plan.threads_per_row, plan.rows_per_block), 0, cudaStreamPerThread>>>(
            x, rows, cols, rq, q, row_scales);
    return check.status();
  });
}

struct DequantArgs {
  const int32_t* acc;  // [rows, cols]
  const float* row_scales;
  const float* col_scales;
  bool per_channel;  // col_scales[c], else col_scales[0]
  int64_t ldy;
  int64_t rows;
  int64_t cols;
};

// Mapping: launch::ItemPlan over rows (items) and column chunks.
template <typename D, int kVec, GemmEpilogue kEpilogue>
__global__ void __launch_bounds__(1024) dequantize_rows_kernel(DequantArgs a, const D* bias, D* y) {
  const int64_t chunks = a.cols / kVec;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < a.rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const float rs = a.row_scales[r];
    const int32_t* acc = a.acc + r * a.cols;
    D* yr = y + r * a.ldy;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      const int64_t col = c * kVec;
      const Pack<int32_t, kVec> pk = *reinterpret_cast<const Pack<int32_t, kVec>*>(acc + col);
      float cs[kVec];
      if (a.per_channel) {
        load_floats<kVec>(a.col_scales + col, cs);
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) cs[j] = a.col_scales[0];
      }
      float b[kVec];
      if (bias != nullptr) {
        load_floats<kVec>(bias + col, b);
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) b[j] = 0.0f;
      }
      float v[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] = fmaf(static_cast<float>(pk.v[j]), rs * cs[j], b[j]);
      if constexpr (kEpilogue == GemmEpilogue::kBiasAccumulate) {
        float old[kVec];
        load_floats<kVec>(yr + col, old);
#pragma unroll
        for (int j = 0; j < kVec; ++j) v[j] += old[j];
      } else if constexpr (kEpilogue == GemmEpilogue::kBiasGeluErf) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) v[j] = gelu_erf(v[j]);
      } else if constexpr (kEpilogue == GemmEpilogue::kBiasGeluTanh) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) v[j] = gelu_tanh(v[j]);
      } else if constexpr (kEpilogue == GemmEpilogue::kBiasRelu) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) v[j] = fmaxf(v[j], 0.0f);
      }
      store_floats<kVec>(yr + col, v);
    }
  }
}

template <typename D, int kVec, GemmEpilogue kEpilogue>
Status launch_dequantize(const DequantArgs& args, const D* bias, D* y) {
  const launch::ItemPlan plan = launch::plan_items(args.rows, args.cols / kVec);
  const LaunchCheck check("dequantize_rows_int8");
  dequantize_rows_kernel<D, kVec, kEpilogue>
      <<<grid_dim(plan.grid), dim3(plan.block_x, plan.block_y), 0, cudaStreamPerThread>>>(args, bias, y);
  return check.status();
}

template <typename D, int kVec>
Status dequantize_width(const DequantArgs& args, GemmEpilogue epilogue, const D* bias, D* y) {
  switch (epilogue) {
    case GemmEpilogue::kBias: return launch_dequantize<D, kVec, GemmEpilogue::kBias>(args, bias, y);
    case GemmEpilogue::kBiasGeluErf: return launch_dequantize<D, kVec, GemmEpilogue::kBiasGeluErf>(args, bias, y);
    case GemmEpilogue::kBiasGeluTanh: return launch_dequantize<D, kVec, GemmEpilogue::kBiasGeluTanh>(args, bias, y);
    case GemmEpilogue::kBiasRelu: return launch_dequantize<D, kVec, GemmEpilogue::kBiasRelu>(args, bias, y);
    case GemmEpilogue::kBiasAccumulate: return launch_dequantize<D, kVec, GemmEpilogue::kBiasAccumulate>(args, bias, y);
  }
  return absl::InvalidArgumentError(absl::StrCat("dequantize_rows_int8: epilogue is ", static_cast<int>(epilogue),
                                                 "; expected a GemmEpilogue value"));
}

// Mapping: launch::FlatPlan over the n * k weights, one element per thread and step.
template <typename D>
__global__ void __launch_bounds__(256)
    dequantize_weights_kernel(const int8_t* w, const float* col_scales, bool per_channel, const float* channel_scale,
                              int64_t n, int64_t k, D* out) {
  const int64_t total = n * k;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = i / k;
    float v = static_cast<float>(w[i]) * col_scales[per_channel ? j : 0];
    if (channel_scale != nullptr) v *= channel_scale[i - j * k];
    out[i] = from_float<D>(v);
  }
}

}  // namespace

template <typename T>
Status dequantize_weights_int8(const int8_t* w, const float* col_scales, int64_t n_col_scales,
                               const float* channel_scale, int64_t n, int64_t k, T* out) {
  if (n <= 0 || k <= 0) return absl::OkStatus();
  const launch::FlatPlan plan = launch::plan_flat(n * k, 1);
  const LaunchCheck check("dequantize_weights_int8");
  dequantize_weights_kernel<DeviceType<T>><<<grid_dim(plan.grid), plan.threads, 0, cudaStreamPerThread>>>(
      w, col_scales, n_col_scales != 1, channel_scale, n, k, device_ptr(out));
  return check.status();
}

template <typename T>
Status quantize_rows_int8(const T* x, int64_t rows, int64_t cols, Int8RowQuant rq, int8_t* q, float* row_scales) {
  if (rows <= 0 || cols <= 0) return absl::OkStatus();
  const int width = launch::vector_width_or_scalar(
      kFullWidth<T>, cols, cols, {{address(x), sizeof(T)}, {address(q), 1}, {address(rq.channel_scale), 4}});
  if (width == kFullWidth<T>) {
    return launch_quantize<DeviceType<T>, kFullWidth<T>>(device_ptr(x), rows, cols, rq, q, row_scales);
  }
  return launch_quantize<DeviceType<T>, 1>(device_ptr(x), rows, cols, rq, q, row_scales);
}

template <typename T>
Status dequantize_rows_int8(const int32_t* acc, const float* row_scales, const float* col_scales, int64_t n_col_scales,
                            const T* bias, GemmEpilogue epilogue, T* y, int64_t ldy, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return absl::OkStatus();
  if (ldy < cols) ldy = cols;
  const bool per_channel = n_col_scales != 1;
  const DequantArgs args{acc, row_scales, col_scales, per_channel, ldy, rows, cols};
  constexpr int kVec = 4;  // 16 bytes of int32 accumulators
  const int width = launch::vector_width_or_scalar(kVec, cols, ldy,
                                                   {{address(acc), 4},
                                                    {address(per_channel ? col_scales : nullptr), 4},
                                                    {address(bias), sizeof(T)},
                                                    {address(y), sizeof(T)}});
  using D = DeviceType<T>;
  if (width == kVec) return dequantize_width<D, kVec>(args, epilogue, device_ptr(bias), device_ptr(y));
  return dequantize_width<D, 1>(args, epilogue, device_ptr(bias), device_ptr(y));
}

#define BRISK_INSTANTIATE(T)                                                                                           \
  template Status quantize_rows_int8<T>(const T*, int64_t, int64_t, Int8RowQuant, int8_t*, float*);                    \
  template Status dequantize_rows_int8<T>(const int32_t*, const float*, const float*, int64_t, const T*, GemmEpilogue, \
                                          T*, int64_t, int64_t, int64_t);                                              \
  template Status dequantize_weights_int8<T>(const int8_t*, const float*, int64_t, const float*, int64_t, int64_t, T*);
BRISK_INSTANTIATE(float)
BRISK_INSTANTIATE(float16_t)
BRISK_INSTANTIATE(bfloat16_t)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels::cuda
