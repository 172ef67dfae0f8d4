// CUDA LayerNorm fused with the bias add, the residual add and (optionally) the int8 row quantization of its output,
// and BERT's embedding layer (gather + sum + LayerNorm): one row kernel over two row sources.
//
// One warp per row for rows of up to 32 * max_row_iters vector chunks (1024 columns in fp32 and fp16), one block per
// row above (launch::plan_rows). The row is read once into registers and written once: the sum, the shifted
// second pass and the normalisation all run on the registers, as the CPU kernel does on L1. Rows too long for
// registers (beyond 16384 vectorised columns) stream: the inputs are read three times and out is written once.
// Every thread loads and stores only its own chunks, so out may alias x or the residual (or hold the embedding's
// word rows): each element is read before the same thread writes it.
#include <cuda_runtime.h>

#include "cuda_kernels.h"
#include "kernel_util.cuh"

namespace brisk::kernels::cuda {
namespace {

template <typename D>
struct NormArgs {
  const D* gamma;
  const D* beta;
  float epsilon;
  D* out;
  int8_t* q;          // null: no quantized output
  float* row_scales;  // with q
  int64_t rows;
  int64_t cols;
};

// Row r of x + bias + residual (bias, residual nullable).
template <typename D>
struct BiasResidualSource {
  const D* x;
  const D* bias;
  const D* residual;
  int64_t cols;

  struct Row {
    const D* x;
    const D* bias;
    const D* residual;
    template <int N>
    __device__ __forceinline__ void load(int64_t col, float (&v)[N]) const {
      load_floats<N>(x + col, v);
      if (bias != nullptr) add_floats<N>(bias + col, v);
      if (residual != nullptr) add_floats<N>(residual + col, v);
    }
  };
  __device__ __forceinline__ Row row(int64_t r) const {
    return Row{x + r * cols, bias, residual != nullptr ? residual + r * cols : nullptr};
  }
};

// Row r of word[ids[r]] + position[positions[r]] + token_type[type_ids[r]]; word == nullptr reads out's row, and
// token_type == nullptr (or type_ids == nullptr: type 0) as embedding.h says.
template <typename D>
struct EmbeddingSource {
  const D* word;
  const D* position;
  const D* token_type;
  const int32_t* ids;
  const int32_t* type_ids;
  const int32_t* positions;
  const D* out;
  int64_t hidden;

  struct Row {
    const D* word;
    const D* position;
    const D* token_type;
    template <int N>
    __device__ __forceinline__ void load(int64_t col, float (&v)[N]) const {
      load_floats<N>(word + col, v);
      add_floats<N>(position + col, v);
      if (token_type != nullptr) add_floats<N>(token_type + col, v);
    }
  };
  __device__ __forceinline__ Row row(int64_t r) const {
    const D* w = word != nullptr ? word + static_cast<int64_t>(ids[r]) * hidden : out + r * hidden;
    const D* p = position + static_cast<int64_t>(positions[r]) * hidden;
    const D* t = nullptr;
    if (token_type != nullptr) t = token_type + (type_ids != nullptr ? static_cast<int64_t>(type_ids[r]) : 0) * hidden;
    return Row{w, p, t};
  }
};

// The quantization of the rounded outputs of one row, given its absmax over the row's threads.
struct RowQuant {
  float scale;
  float inv;
  __device__ __forceinline__ explicit RowQuant(float absmax)
      : scale(absmax > 0.0f ? absmax / 127.0f : 1.0f), inv(1.0f / (absmax > 0.0f ? absmax / 127.0f : 1.0f)) {}
};

template <int N>
__device__ __forceinline__ void store_quantized(int8_t* q, const float (&v)[N], float inv) {
  Pack<int8_t, N> pk;
#pragma unroll
  for (int j = 0; j < N; ++j) pk.v[j] = quantize_one(v[j], inv);
  *reinterpret_cast<Pack<int8_t, N>*>(q) = pk;
}

// Mapping: launch::RowPlan. kIters > 0 keeps the row in registers; kIters == 0 streams it.
template <typename D, class Source, int kVec, int kIters>
__global__ void __launch_bounds__(launch::kMaxRowBlockThreads) layer_norm_kernel(Source source, NormArgs<D> a) {
  const int64_t chunks = (a.cols + kVec - 1) / kVec;
  const int64_t tpr = blockDim.x;
  const float n = static_cast<float>(a.cols);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < a.rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const typename Source::Row src = source.row(r);
    D* out = a.out + r * a.cols;
    int8_t* q = a.q != nullptr ? a.q + r * a.cols : nullptr;

    if constexpr (kIters > 0) {
      float v[kIters][kVec];
      // Pass 1: y = inputs summed, and sum(y).
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k < kIters; ++k) {
        const int64_t c = threadIdx.x + k * tpr;
        if (c < chunks) {
          src.template load<kVec>(c * kVec, v[k]);
#pragma unroll
          for (int j = 0; j < kVec; ++j) s += v[k][j];
        }
      }
      const float m0 = row_sum(s) / n;
      // Pass 2: around m0, the correction c and the variance.
      float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
      for (int k = 0; k < kIters; ++k) {
        if (threadIdx.x + k * tpr < chunks) {
#pragma unroll
          for (int j = 0; j < kVec; ++j) {
            const float d = v[k][j] - m0;
            s1 += d;
            s2 = fmaf(d, d, s2);
          }
        }
      }
      row_sum2(s1, s2);
      const float corr = s1 / n;
      const float var = fmaxf(s2 / n - corr * corr, 0.0f);
      const float rstd = 1.0f / sqrtf(var + a.epsilon);
      // Pass 3: normalise, scale, shift, store; keep the stored values for the quantization.
      float absmax = 0.0f;
#pragma unroll
      for (int k = 0; k < kIters; ++k) {
        const int64_t c = threadIdx.x + k * tpr;
        if (c < chunks) {
          float g[kVec], b[kVec];
          load_floats<kVec>(a.gamma + c * kVec, g);
          load_floats<kVec>(a.beta + c * kVec, b);
#pragma unroll
          for (int j = 0; j < kVec; ++j) {
            v[k][j] = fmaf(((v[k][j] - m0) - corr) * rstd, g[j], b[j]);
          }
          store_floats<kVec>(out + c * kVec, v[k]);
          if (q != nullptr) {
#pragma unroll
            for (int j = 0; j < kVec; ++j) {
              v[k][j] = round_to<D>(v[k][j]);
              absmax = fmaxf(absmax, fabsf(v[k][j]));
            }
          }
        }
      }
      if (q != nullptr) {  // uniform over the row
        const RowQuant rq(row_max(absmax));
#pragma unroll
        for (int k = 0; k < kIters; ++k) {
          const int64_t c = threadIdx.x + k * tpr;
          if (c < chunks) store_quantized<kVec>(q + c * kVec, v[k], rq.inv);
        }
        if (threadIdx.x == 0) a.row_scales[r] = rq.scale;
      }
    } else {
      // Streaming: the same three passes, re-reading the inputs.
      float s = 0.0f;
      for (int64_t c = threadIdx.x; c < chunks; c += tpr) {
        float v[kVec];
        src.template load<kVec>(c * kVec, v);
#pragma unroll
        for (int j = 0; j < kVec; ++j) s += v[j];
      }
      const float m0 = row_sum(s) / n;
      float s1 = 0.0f, s2 = 0.0f;
      for (int64_t c = threadIdx.x; c < chunks; c += tpr) {
        float v[kVec];
        src.template load<kVec>(c * kVec, v);
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const float d = v[j] - m0;
          s1 += d;
          s2 = fmaf(d, d, s2);
        }
      }
      row_sum2(s1, s2);
      const float corr = s1 / n;
      const float var = fmaxf(s2 / n - corr * corr, 0.0f);
      const float rstd = 1.0f / sqrtf(var + a.epsilon);
      float absmax = 0.0f;
      for (int64_t c = threadIdx.x; c < chunks; c += tpr) {
        float v[kVec], g[kVec], b[kVec];
        src.template load<kVec>(c * kVec, v);
        load_floats<kVec>(a.gamma + c * kVec, g);
        load_floats<kVec>(a.beta + c * kVec, b);
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          v[j] = fmaf(((v[j] - m0) - corr) * rstd, g[j], b[j]);
          absmax = fmaxf(absmax, fabsf(round_to<D>(v[j])));
        }
        store_floats<kVec>(out + c * kVec, v);
      }
      if (q != nullptr) {
        const RowQuant rq(row_max(absmax));
        // Each thread re-reads only the chunks it stored itself.
        for (int64_t c = threadIdx.x; c < chunks; c += tpr) {
          float v[kVec];
          load_floats<kVec>(out + c * kVec, v);
          store_quantized<kVec>(q + c * kVec, v, rq.inv);
        }
        if (threadIdx.x == 0) a.row_scales[r] = rq.scale;
      }
    }
  }
}

template <typename D, class Source, int kVec>
Status launch_norm(const char* name, const Source& source, const NormArgs<D>& args) {
  const launch::RowPlan plan = launch::plan_rows(args.rows, args.cols, kVec, max_row_iters(kVec));
  return dispatch_iters<kVec>(plan.iters, name, [&](auto iters) {
    constexpr int kIters = decltype(iters)::value;
    const LaunchCheck check(name);
    layer_norm_kernel<D, Source, kVec, kIters>
        <<<grid_dim(plan.grid), dim3(plan.threads_per_row, plan.rows_per_block), 0, cudaStreamPerThread>>>(source,
                                                                                                           args);
    return check.status();
  });
}

}  // namespace

template <typename T>
Status layer_norm_bias_residual(const T* x, const T* bias, const T* residual, const T* gamma, const T* beta,
                                float epsilon, T* out, int8_t* q, float* row_scales, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return absl::OkStatus();
  using D = DeviceType<T>;
  const BiasResidualSource<D> source{device_ptr(x), device_ptr(bias), device_ptr(residual), cols};
  const NormArgs<D> args{device_ptr(gamma), device_ptr(beta), epsilon, device_ptr(out), q, row_scales, rows, cols};
  constexpr int64_t kSize = sizeof(T);
  const int width = launch::vector_width_or_scalar(kFullWidth<T>, cols, cols,
                                                   {{address(x), kSize},
                                                    {address(bias), kSize},
                                                    {address(residual), kSize},
                                                    {address(gamma), kSize},
                                                    {address(beta), kSize},
                                                    {address(out), kSize},
                                                    {address(q), 1}});
  constexpr const char* kName = "layer_norm_bias_residual";
  if (width == kFullWidth<T>) return launch_norm<D, BiasResidualSource<D>, kFullWidth<T>>(kName, source, args);
  return launch_norm<D, BiasResidualSource<D>, 1>(kName, source, args);
}

template <typename T>
Status embed_layer_norm(const EmbeddingTables<T>& tables, const int32_t* ids, const int32_t* type_ids,
                        const int32_t* positions, float epsilon, T* out, int64_t rows) {
  const int64_t hidden = tables.hidden;
  if (rows <= 0 || hidden <= 0) return absl::OkStatus();
  using D = DeviceType<T>;
  const EmbeddingSource<D> source{device_ptr(tables.word),
                                  device_ptr(tables.position),
                                  device_ptr(tables.token_type),
                                  ids,
                                  type_ids,
                                  positions,
                                  device_ptr(out),
                                  hidden};
  const NormArgs<D> args{
      device_ptr(tables.gamma), device_ptr(tables.beta), epsilon, device_ptr(out), nullptr, nullptr, rows, hidden};
  constexpr int64_t kSize = sizeof(T);
  const int width = launch::vector_width_or_scalar(kFullWidth<T>, hidden, hidden,
                                                   {{address(tables.word), kSize},
                                                    {address(tables.position), kSize},
                                                    {address(tables.token_type), kSize},
                                                    {address(tables.gamma), kSize},
                                                    {address(tables.beta), kSize},
                                                    {address(out), kSize}});
  constexpr const char* kName = "embed_layer_norm";
  if (width == kFullWidth<T>) return launch_norm<D, EmbeddingSource<D>, kFullWidth<T>>(kName, source, args);
  return launch_norm<D, EmbeddingSource<D>, 1>(kName, source, args);
}

#define BRISK_INSTANTIATE(T)                                                                                        \
  template Status layer_norm_bias_residual<T>(const T*, const T*, const T*, const T*, const T*, float, T*, int8_t*, \
                                              float*, int64_t, int64_t);                                            \
  template Status embed_layer_norm<T>(const EmbeddingTables<T>&, const int32_t*, const int32_t*, const int32_t*,    \
                                      float, T*, int64_t);
BRISK_INSTANTIATE(float)
BRISK_INSTANTIATE(float16_t)
BRISK_INSTANTIATE(bfloat16_t)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels::cuda
