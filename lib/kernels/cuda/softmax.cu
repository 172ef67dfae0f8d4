// CUDA masked softmax over strided rows, with one valid length for all rows or one per group of rows (the key
// padding mask of batched attention).
//
// One warp per row up to 1024 columns (fp32 and fp16, vectorised), one block per row above (launch::plan_rows).
// Only the row's valid chunks are read, once, into registers; the whole row [0, cols) is written once, zeros
// past the valid length; columns [cols, ld) are never touched. Rows too long for registers stream (three reads
// of the valid part).
#include <cuda_runtime.h>

#include "cuda_kernels.h"
#include "kernel_util.cuh"

namespace brisk::kernels::cuda {
namespace {

struct SoftmaxArgs {
  int64_t rows;
  int64_t cols;
  int64_t ld;
  int64_t valid_cols;
  int64_t rows_per_group;  // > 0: valid_cols = min(lengths[r / rows_per_group], valid_cols)
  const int32_t* lengths;
  float scale;
};

// Mapping: launch::RowPlan.
template <typename D, int kVec, int kIters>
__global__ void __launch_bounds__(launch::kMaxRowBlockThreads) masked_softmax_kernel(D* x, SoftmaxArgs a) {
  const int64_t chunks = (a.cols + kVec - 1) / kVec;
  const int64_t tpr = blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < a.rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    // A group's length is clamped to valid_cols (self_attention's max_len, the rule split_qkv_heads and merge_heads
    // follow), never to the padded row width: score columns past max_len hold no scores.
    int64_t valid = a.valid_cols;
    if (a.rows_per_group > 0) {
      const int64_t len = a.lengths[r / a.rows_per_group];
      valid = len < valid ? len : valid;
    }
    valid = valid < 0 ? 0 : (valid > a.cols ? a.cols : valid);
    const int64_t valid_chunks = (valid + kVec - 1) / kVec;
    D* p = x + r * a.ld;

    if constexpr (kIters > 0) {
      // Pass 1: y = scale * x over the valid columns (-inf elsewhere), and its maximum.
      float y[kIters][kVec];
      float m = -INFINITY;
#pragma unroll
      for (int k = 0; k < kIters; ++k) {
        const int64_t c = threadIdx.x + k * tpr;
        if (c < valid_chunks) {
          load_floats<kVec>(p + c * kVec, y[k]);
#pragma unroll
          for (int j = 0; j < kVec; ++j) {
            y[k][j] = c * kVec + j < valid ? y[k][j] * a.scale : -INFINITY;
            m = fmaxf(m, y[k][j]);
          }
        } else {
#pragma unroll
          for (int j = 0; j < kVec; ++j) y[k][j] = -INFINITY;
        }
      }
      m = row_max(m);
      if (!(m > -INFINITY)) {  // no valid column, or all -inf: no weight anywhere
#pragma unroll
        for (int k = 0; k < kIters; ++k) {
          const int64_t c = threadIdx.x + k * tpr;
          if (c < chunks) store_zeros<kVec>(p + c * kVec);
        }
        continue;
      }
      // Pass 2: e = exp(y - m) (exp(-inf) = 0 past the valid columns), and its sum (>= 1: the maximum gives 1).
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k < kIters; ++k) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          y[k][j] = expf(y[k][j] - m);
          s += y[k][j];
        }
      }
      const float inv = 1.0f / row_sum(s);
      // Pass 3: normalise and store the whole row.
#pragma unroll
      for (int k = 0; k < kIters; ++k) {
        const int64_t c = threadIdx.x + k * tpr;
        if (c < chunks) {
#pragma unroll
          for (int j = 0; j < kVec; ++j) y[k][j] *= inv;
          store_floats<kVec>(p + c * kVec, y[k]);
        }
      }
    } else {
      float m = -INFINITY;
      for (int64_t c = threadIdx.x; c < valid_chunks; c += tpr) {
        float v[kVec];
        load_floats<kVec>(p + c * kVec, v);
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          if (c * kVec + j < valid) m = fmaxf(m, v[j] * a.scale);
        }
      }
      m = row_max(m);
      const bool empty = !(m > -INFINITY);
      float s = 0.0f;
      if (!empty) {
        for (int64_t c = threadIdx.x; c < valid_chunks; c += tpr) {
          float v[kVec];
          load_floats<kVec>(p + c * kVec, v);
#pragma unroll
          for (int j = 0; j < kVec; ++j) {
            if (c * kVec + j < valid) s += expf(v[j] * a.scale - m);
          }
        }
      }
      s = row_sum(s);
      const float inv = empty ? 0.0f : 1.0f / s;
      for (int64_t c = threadIdx.x; c < chunks; c += tpr) {
        float v[kVec];
        if (c < valid_chunks) {
          load_floats<kVec>(p + c * kVec, v);
        }
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          v[j] = !empty && c * kVec + j < valid ? expf(v[j] * a.scale - m) * inv : 0.0f;
        }
        store_floats<kVec>(p + c * kVec, v);
      }
    }
  }
}

template <typename D, int kVec>
Status launch_softmax(D* x, const SoftmaxArgs& args) {
  constexpr const char* kName = "masked_softmax";
  const launch::RowPlan plan = launch::plan_rows(args.rows, args.cols, kVec, max_row_iters(kVec));
  return dispatch_iters<kVec>(plan.iters, kName, [&](auto iters) {
    constexpr int kIters = decltype(iters)::value;
    const LaunchCheck check(kName);
    masked_softmax_kernel<D, kVec, kIters>
        <<<grid_dim(plan.grid), dim3(plan.threads_per_row, plan.rows_per_block), 0, cudaStreamPerThread>>>(x, args);
    return check.status();
  });
}

}  // namespace

template <typename T>
Status masked_softmax(T* x, int64_t rows, int64_t cols, int64_t ld, int64_t valid_cols, int64_t rows_per_group,
                      const int32_t* lengths, float scale) {
  if (rows <= 0 || cols <= 0) return absl::OkStatus();
  if (ld < cols) ld = cols;
  const SoftmaxArgs args{rows, cols, ld, valid_cols, lengths != nullptr ? rows_per_group : 0, lengths, scale};
  const int width = launch::vector_width_or_scalar(kFullWidth<T>, cols, ld, {{address(x), sizeof(T)}});
  if (width == kFullWidth<T>) return launch_softmax<DeviceType<T>, kFullWidth<T>>(device_ptr(x), args);
  return launch_softmax<DeviceType<T>, 1>(device_ptr(x), args);
}

template Status masked_softmax<float>(float*, int64_t, int64_t, int64_t, int64_t, int64_t, const int32_t*, float);
template Status masked_softmax<float16_t>(float16_t*, int64_t, int64_t, int64_t, int64_t, int64_t, const int32_t*,
                                          float);
template Status masked_softmax<bfloat16_t>(bfloat16_t*, int64_t, int64_t, int64_t, int64_t, int64_t, const int32_t*,
                                           float);

}  // namespace brisk::kernels::cuda
