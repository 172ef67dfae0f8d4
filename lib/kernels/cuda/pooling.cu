// CUDA sentence-embedding pooling (mean or first row of each sequence, then optionally L2-normalised) and the
// in-place row L2 normalisation.
//
// pool_sequences: one block per sequence (launch::plan_sequences): block_x threads across the dim's vector chunks,
// block_y groups of them splitting the sequence's rows; partial sums meet in shared memory in a fixed order (the
// result does not depend on timing). Each hidden row of the sequence is read once; out is written once, and
// rescaled in place by the threads that wrote it when normalising.
// l2_normalize: one warp per row up to 1024 columns, one block per row above (launch::plan_rows); the row is read
// once into registers and written once (rows too long for registers read it twice).
#include <cuda_runtime.h>

#include "cuda_kernels.h"
#include "kernel_util.cuh"

namespace brisk::kernels::cuda {
namespace {

constexpr int kPoolThreads = 256;
constexpr float kPoolEps = 1e-12f;  // l2_normalize's default, as sentence-transformers' Normalize

struct PoolArgs {
  const int32_t* starts;
  const int32_t* lengths;
  int64_t batch;
  int64_t seq;
  int64_t dim;
  SequencePooling mode;
  bool normalize;
};

// Mapping: launch::plan_sequences (blockDim.x * blockDim.y <= kPoolThreads).
template <typename D, int kVec>
__global__ void __launch_bounds__(kPoolThreads) pool_sequences_kernel(const D* hidden, PoolArgs a, float* out) {
  __shared__ float partial[kPoolThreads * kVec];
  const int64_t chunks = a.dim / kVec;
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const int bx = static_cast<int>(blockDim.x);
  const int by = static_cast<int>(blockDim.y);
  for (int64_t b = blockIdx.x; b < a.batch; b += gridDim.x) {  // uniform over the block
    int64_t len = a.lengths != nullptr ? static_cast<int64_t>(a.lengths[b]) : a.seq;
    if (len < 0) len = 0;
    if ((a.starts == nullptr || a.seq > 0) && len > a.seq) len = a.seq;
    const int64_t start = a.starts != nullptr ? static_cast<int64_t>(a.starts[b]) : b * a.seq;
    const bool one_row = a.mode != SequencePooling::kMean;
    const int64_t n = one_row ? (len > 0 ? 1 : 0) : len;
    const float inv = n > 0 ? 1.0f / static_cast<float>(n) : 0.0f;
    const int64_t first = a.mode == SequencePooling::kLast && len > 0 ? start + len - 1 : start;
    const D* rows = hidden + first * a.dim;
    float* o = out + b * a.dim;
    float sumsq = 0.0f;
    for (int64_t c0 = 0; c0 < chunks; c0 += bx) {  // uniform: every thread reaches the barriers
      const int64_t c = c0 + tx;
      float acc[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc[j] = 0.0f;
      if (c < chunks) {
        for (int64_t t = ty; t < n; t += by) {
          float v[kVec];
          load_floats<kVec>(rows + t * a.dim + c * kVec, v);
#pragma unroll
          for (int j = 0; j < kVec; ++j) acc[j] += v[j];
        }
      }
      if (by > 1) {
        __syncthreads();  // the previous chunk's readers are done with partial
#pragma unroll
        for (int j = 0; j < kVec; ++j) partial[(ty * bx + tx) * kVec + j] = acc[j];
        __syncthreads();
        if (ty == 0) {
          for (int y = 1; y < by; ++y) {
#pragma unroll
            for (int j = 0; j < kVec; ++j) acc[j] += partial[(y * bx + tx) * kVec + j];
          }
        }
      }
      if (ty == 0 && c < chunks) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          acc[j] *= inv;
          sumsq = fmaf(acc[j], acc[j], sumsq);
        }
        store_floats<kVec>(o + c * kVec, acc);
      }
    }
    if (a.normalize) {
      // Tree over the block_x partial sums of squares, in a fixed order.
      __syncthreads();
      if (ty == 0) partial[tx] = sumsq;
      __syncthreads();
      int width = 1;
      while (width < bx) width *= 2;
      for (int s = width / 2; s > 0; s /= 2) {
        if (ty == 0 && tx < s && tx + s < bx) partial[tx] += partial[tx + s];
        __syncthreads();
      }
      const float norm = sqrtf(partial[0]);
      const float scale = 1.0f / fmaxf(norm, kPoolEps);
      if (ty == 0) {
        // Each thread rescales the chunks it stored itself.
        for (int64_t c = tx; c < chunks; c += bx) {
          float v[kVec];
          load_floats<kVec>(o + c * kVec, v);
#pragma unroll
          for (int j = 0; j < kVec; ++j) v[j] *= scale;
          store_floats<kVec>(o + c * kVec, v);
        }
      }
      __syncthreads();  // partial[0] is read before the next sequence reuses partial
    }
  }
}

// Mapping: launch::RowPlan.
template <int kVec, int kIters>
__global__ void __launch_bounds__(launch::kMaxRowBlockThreads)
    l2_normalize_kernel(float* x, int64_t rows, int64_t cols, float eps) {
  const int64_t chunks = (cols + kVec - 1) / kVec;
  const int64_t tpr = blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    float* p = x + r * cols;
    float sumsq = 0.0f;
    if constexpr (kIters > 0) {
      float v[kIters][kVec];
#pragma unroll
      for (int k = 0; k < kIters; ++k) {
        const int64_t c = threadIdx.x + k * tpr;
        if (c < chunks) {
          load_floats<kVec>(p + c * kVec, v[k]);
#pragma unroll
          for (int j = 0; j < kVec; ++j) sumsq = fmaf(v[k][j], v[k][j], sumsq);
        }
      }
      const float scale = 1.0f / fmaxf(sqrtf(row_sum(sumsq)), eps);
#pragma unroll
      for (int k = 0; k < kIters; ++k) {
        const int64_t c = threadIdx.x + k * tpr;
        if (c < chunks) {
#pragma unroll
          for (int j = 0; j < kVec; ++j) v[k][j] *= scale;
          store_floats<kVec>(p + c * kVec, v[k]);
        }
      }
    } else {
      for (int64_t c = threadIdx.x; c < chunks; c += tpr) {
        float v[kVec];
        load_floats<kVec>(p + c * kVec, v);
#pragma unroll
        for (int j = 0; j < kVec; ++j) sumsq = fmaf(v[j], v[j], sumsq);
      }
      const float scale = 1.0f / fmaxf(sqrtf(row_sum(sumsq)), eps);
      for (int64_t c = threadIdx.x; c < chunks; c += tpr) {
        float v[kVec];
        load_floats<kVec>(p + c * kVec, v);
#pragma unroll
        for (int j = 0; j < kVec; ++j) v[j] *= scale;
        store_floats<kVec>(p + c * kVec, v);
      }
    }
  }
}

template <int kVec>
Status launch_l2_normalize(float* x, int64_t rows, int64_t cols, float eps) {
  constexpr const char* kName = "l2_normalize";
  const launch::RowPlan plan = launch::plan_rows(rows, cols, kVec, max_row_iters(kVec));
  return dispatch_iters<kVec>(plan.iters, kName, [&](auto iters) {
    constexpr int kIters = decltype(iters)::value;
    const LaunchCheck check(kName);
    l2_normalize_kernel<kVec, kIters>
        <<<grid_dim(plan.grid), dim3(plan.threads_per_row, plan.rows_per_block), 0, cudaStreamPerThread>>>(x, rows,
                                                                                                           cols, eps);
    return check.status();
  });
}

template <typename D, int kVec>
Status launch_pool(const D* hidden, const PoolArgs& args, float* out) {
  const launch::ItemPlan plan = launch::plan_sequences(args.batch, args.dim / kVec, kPoolThreads);
  const LaunchCheck check("pool_sequences");
  pool_sequences_kernel<D, kVec>
      <<<grid_dim(plan.grid), dim3(plan.block_x, plan.block_y), 0, cudaStreamPerThread>>>(hidden, args, out);
  return check.status();
}

}  // namespace

template <typename T>
Status pool_sequences(const T* hidden, const int32_t* starts, const int32_t* lengths, int64_t batch, int64_t seq,
                      int64_t dim, SequencePooling mode, bool normalize, float* out) {
  if (batch <= 0 || dim <= 0) return absl::OkStatus();
  const PoolArgs args{starts, lengths, batch, seq < 0 ? 0 : seq, dim, mode, normalize};
  const int width = launch::vector_width_or_scalar(kFullWidth<T>, dim, dim,
                                                   {{address(hidden), sizeof(T)}, {address(out), sizeof(float)}});
  if (width == kFullWidth<T>) return launch_pool<DeviceType<T>, kFullWidth<T>>(device_ptr(hidden), args, out);
  return launch_pool<DeviceType<T>, 1>(device_ptr(hidden), args, out);
}

Status l2_normalize(float* x, int64_t rows, int64_t cols, float eps) {
  if (rows <= 0 || cols <= 0) return absl::OkStatus();
  const int width = launch::vector_width_or_scalar(kFullWidth<float>, cols, cols, {{address(x), sizeof(float)}});
  if (width == kFullWidth<float>) return launch_l2_normalize<kFullWidth<float>>(x, rows, cols, eps);
  return launch_l2_normalize<1>(x, rows, cols, eps);
}

template Status pool_sequences<float>(const float*, const int32_t*, const int32_t*, int64_t, int64_t, int64_t,
                                      SequencePooling, bool, float*);
template Status pool_sequences<float16_t>(const float16_t*, const int32_t*, const int32_t*, int64_t, int64_t, int64_t,
                                          SequencePooling, bool, float*);
template Status pool_sequences<bfloat16_t>(const bfloat16_t*, const int32_t*, const int32_t*, int64_t, int64_t, int64_t,
                                           SequencePooling, bool, float*);

}  // namespace brisk::kernels::cuda
