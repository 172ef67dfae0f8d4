// Private to lib/kernels: the CUDA implementations behind the public ops of include/brisk/kernels/, one entry point
// per op, called by that op's one dispatch point (lib/kernels/<op>.cc) after it has checked the arguments.
//
// Declared unconditionally. With CUDA they are defined in lib/kernels/cuda/ (*.cu for the kernels, *.cc for the
// cuBLASLt host code); a build without CUDA skips that folder and compiles lib/kernels/cuda_unavailable.cc instead,
// where every entry point returns UNIMPLEMENTED naming the build option BRISK_WITH_CUDA.
//
// Conventions:
//   - Pointers are device pointers; sizes are already checked (> 0, non-null where required).
//   - Work is queued on the calling thread's stream (cudaStreamPerThread): each batcher executor is a thread, so
//     executors overlap on the device, and a thread's ops run in the order it issued them.
//   - Launches are asynchronous. An entry point reports a launch error as INTERNAL naming the kernel (LaunchCheck,
//     kernel_util.cuh: an error left pending before the launch, or a device fault, is named as the earlier error it
//     is); a fault inside a kernel surfaces at the next synchronize().
//   - T is float, float16_t or bfloat16_t (brisk/core/half.h), reinterpreted as __half / __nv_bfloat16 in device
//     code. Arithmetic is fp32.
//   - Scratch memory comes from brisk::allocate(Device::kCUDA, ...), the capped caching allocator.
//
// Thread safety: reentrant; see the public headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/kernels/attention.h"
#include "brisk/kernels/embedding.h"
#include "brisk/kernels/gelu.h"
#include "brisk/kernels/linear.h"
#include "brisk/kernels/pooling.h"
#include "../dispatch.h"

namespace brisk::kernels::cuda {

template <typename T>
Status layer_norm_bias_residual(const T* x, const T* bias, const T* residual, const T* gamma, const T* beta,
                                float epsilon, T* out, int8_t* q, float* row_scales, int64_t rows, int64_t cols);

template <typename T>
Status bias_gelu(T* x, const T* bias, int64_t rows, int64_t cols, GeluApproximation approx);

// rows_per_group == 0: one valid_cols for every row; otherwise lengths[g] for the rows of group g, clamped to
// [0, valid_cols] (self_attention passes max_len, the bound split_qkv_heads and merge_heads clamp to).
template <typename T>
Status masked_softmax(T* x, int64_t rows, int64_t cols, int64_t ld, int64_t valid_cols, int64_t rows_per_group,
                      const int32_t* lengths, float scale);

// Adds the bias (nullable) and scatters the [rows, 3 * heads * head_dim] QKV rows into q, k, v, each zero-padded
// [batch, heads, max_len, head_dim]; padded slots get zeros.
template <typename T>
Status split_qkv_heads(const T* qkv, const T* bias, const AttentionRows& sequences, int64_t heads, int64_t head_dim,
                       T* q, T* k, T* v);

// The inverse for the context: [batch, heads, max_len, head_dim] back to [rows, heads * head_dim]; `rows` rows
// that belong to no sequence are zeroed.
template <typename T>
Status merge_heads(const T* padded, const AttentionRows& sequences, int64_t rows, int64_t heads, int64_t head_dim,
                   T* out);

// Self-attention composed of split_qkv_heads, two strided-batched GEMMs, masked_softmax and merge_heads.
template <typename T>
Status self_attention(const T* qkv, const T* qkv_bias, const AttentionRows& sequences, int64_t rows, int64_t heads,
                      int64_t head_dim, T* context);

template <typename T>
Status embed_layer_norm(const EmbeddingTables<T>& tables, const int32_t* ids, const int32_t* type_ids,
                        const int32_t* positions, float epsilon, T* out, int64_t rows);

// starts == nullptr: sequence b starts at row b * seq; lengths == nullptr: every sequence has seq rows.
template <typename T>
Status pool_sequences(const T* hidden, const int32_t* starts, const int32_t* lengths, int64_t batch, int64_t seq,
                      int64_t dim, SequencePooling mode, bool normalize, float* out);

Status l2_normalize(float* x, int64_t rows, int64_t cols, float eps);

Status vector_unary(UnaryOp op, const float* x, float* out, int64_t n);

// How quantize_rows_int8 quantizes a row, as the CPU's quantize_activations does (lib/kernels/cpu/int8_gemm.h):
// x[r, c] * channel_scale[c] (when not null: SmoothQuant's 1 / s, a device array of cols floats), then divided by
// the row's scale and rounded half to even into [-127, 127]. The row's scale is static_scale when it is > 0, else
// absmax / 127 of the scaled row (1 for an all-zero row).
struct Int8RowQuant {
  const float* channel_scale = nullptr;
  float static_scale = 0.0f;
#ifdef __CUDACC__
  __device__ __forceinline__ float row_scale(float absmax) const {
    if (static_scale > 0.0f) return static_scale;
    return absmax > 0.0f ? absmax / 127.0f : 1.0f;
  }
#endif
};

template <typename T>
Status quantize_rows_int8(const T* x, int64_t rows, int64_t cols, Int8RowQuant rq, int8_t* q, float* row_scales);

// out[j, c] = w[j, c] * col_scales[j] (col_scales[0] when n_col_scales == 1) * channel_scale[c] (when not null):
// an int8 Linear's weights as T, SmoothQuant's 1 / s folded in so that they take the unscaled x.
template <typename T>
Status dequantize_weights_int8(const int8_t* w, const float* col_scales, int64_t n_col_scales,
                               const float* channel_scale, int64_t n, int64_t k, T* out);

template <typename T>
Status dequantize_rows_int8(const int32_t* acc, const float* row_scales, const float* col_scales, int64_t n_col_scales,
                            const T* bias, GemmEpilogue epilogue, T* y, int64_t ldy, int64_t rows, int64_t cols);

template <typename From, typename To>
Status convert(const From* in, To* out, int64_t n);

Status copy_bytes(void* dst, const void* src, size_t bytes);  // any direction (cudaMemcpyDefault), async
Status synchronize();

// The cuBLASLt Linear (linear_cublaslt.cc): weights uploaded (converted to `activation` unless i8) at creation.
StatusOr<std::shared_ptr<const Linear::Impl>> make_linear(const Tensor& weight, const Tensor& bias,
                                                          const QuantScales& scales, DType activation);

// The row count an int8 (IMMA) GEMM runs on: rows rounded up to a multiple of 32. cuBLASLt has no int8 algorithm
// for some small row counts on recent GPUs (PyTorch pads to 32 for the same reason); the padding rows are zeros and
// their outputs are never read.
inline constexpr int64_t kInt8GemmRowMultiple = 32;
constexpr int64_t int8_gemm_rows(int64_t rows) {
  return (rows + kInt8GemmRowMultiple - 1) / kInt8GemmRowMultiple * kInt8GemmRowMultiple;
}

// Calls of an int8 Linear that ran on its dequantized weights because cuBLASLt had no int8 algorithm for the row
// count (process-wide; brisk::kernels::cuda_int8_fallback_calls() is the public name).
uint64_t int8_fallback_calls();
// For tests: every int8 Linear call takes the dequantized fallback while `on`, as if cuBLASLt had no algorithm.
void force_int8_fallback_for_testing(bool on);

}  // namespace brisk::kernels::cuda
