// CUDA multi-head self-attention (kernels::cuda::self_attention), EFF-FT's layout: split_qkv_heads scatters Q, K, V
// into zero-padded [batch, heads, max_len, head_dim] scratch, two strided-batched cuBLAS GEMMs (one batch entry
// per (sequence, head)) run around the scaled masked softmax, and merge_heads gathers the context back into rows.
//
// Precision: the scores S = Q Kᵀ are computed with fp32 accumulation and stored in T, and the softmax runs in place
// on them, as FasterTransformer does with f16. That rounds each logit once to T (relative 2^-11 for f16, 2^-8 for
// bf16) and halves the scores' memory traffic against fp32 scores; P V accumulates in fp32 again.
#include <cuda_runtime_api.h>

#include <climits>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "blas_handles.h"
#include "cuda_kernels.h"

namespace brisk::kernels::cuda {
namespace {

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

}  // namespace

template <typename T>
Status self_attention(const T* qkv, const T* qkv_bias, const AttentionRows& sequences, int64_t rows, int64_t heads,
                      int64_t head_dim, T* context) {
  const int64_t batch = sequences.batch;
  const int64_t len = sequences.max_len;
  const int64_t hidden = heads * head_dim;
  if (batch == 0 || len == 0) {
    // No sequence has a row: every row of the context is a pad row.
    return cuda_status(cudaMemsetAsync(context, 0, static_cast<size_t>(rows * hidden) * sizeof(T), cudaStreamPerThread),
                       "cudaMemsetAsync (self_attention context)");
  }
  const int64_t groups = batch * heads;  // one GEMM batch entry per (sequence, head)
  if (!fits_int(len) || !fits_int(head_dim) || !fits_int(groups)) {
    return absl::InvalidArgumentError(absl::StrCat("self_attention on cuda: batch x heads = ", groups, ", max_len ",
                                                   len, ", head_dim ", head_dim,
                                                   "; expected each at most 2^31 - 1 (cuBLAS's int sizes)"));
  }

  const int64_t head_elems = len * head_dim;  // one (sequence, head) of Q, K, V or the padded context
  // Score rows are padded to a 16-byte multiple so that the softmax takes its vector path whatever max_len is;
  // the pad columns come out of it as zeros.
  constexpr int64_t kScoreAlign = 16 / static_cast<int64_t>(sizeof(T));
  const int64_t ld_scores = (len + kScoreAlign - 1) / kScoreAlign * kScoreAlign;
  const int64_t score_elems = len * ld_scores;  // one (sequence, head) of the scores
  const size_t qkv_bytes = align256(static_cast<size_t>(groups * head_elems) * sizeof(T));
  const size_t score_bytes = align256(static_cast<size_t>(groups * score_elems) * sizeof(T));
  BRISK_ASSIGN_OR_RETURN(BlasContext * ctx, blas_context());
  // One block for all scratch, returned to the caching allocator on every path out of here while the work queued
  // on it may still run: the allocator's stream fences keep another thread from reusing it too early.
  BRISK_ASSIGN_OR_RETURN(DeviceBuffer scratch, DeviceBuffer::allocate(4 * qkv_bytes + score_bytes));
  T* q = scratch.as<T>(0);
  T* k = scratch.as<T>(qkv_bytes);
  T* v = scratch.as<T>(2 * qkv_bytes);
  T* padded_context = scratch.as<T>(3 * qkv_bytes);
  T* scores = scratch.as<T>(4 * qkv_bytes);

  BRISK_RETURN_IF_ERROR(split_qkv_heads<T>(qkv, qkv_bias, sequences, heads, head_dim, q, k, v));

  const cudaDataType type = cuda_type<T>();
  const float one = 1.0f;
  const float zero = 0.0f;
  // The 1/sqrt(d) scale is applied in the GEMM's fp32 epilogue: unscaled f16 scores could overflow.
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  const int L = static_cast<int>(len);
  const int ld_s = static_cast<int>(ld_scores);
  const int d = static_cast<int>(head_dim);
  const int count = static_cast<int>(groups);
  // Row-major S[i, j] = q_i · k_j is column-major Sᵀ = K Qᵀ: m = n = L, k = d, A = K (column-major d x L, taken
  // transposed), B = Q (column-major d x L), C with leading dimension ld_s (row-major rows ld_s apart).
  BRISK_RETURN_IF_ERROR(
      cublas_status(cublasGemmStridedBatchedEx(ctx->blas(), CUBLAS_OP_T, CUBLAS_OP_N, L, L, d, &scale, k, type, d,
                                               head_elems, q, type, d, head_elems, &zero, scores, type, ld_s,
                                               score_elems, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                    "cublasGemmStridedBatchedEx (self_attention Q K^T)"));

  // Rows are (sequence, head, query); the rows of sequence b (heads x max_len of them) see its first lengths[b]
  // keys. Query rows past the length are computed too and never gathered.
  BRISK_RETURN_IF_ERROR(masked_softmax<T>(scores, groups * len, ld_scores, ld_scores, /*valid_cols=*/len,
                                          /*rows_per_group=*/heads * len, sequences.lengths, /*scale=*/1.0f));

  // Row-major O = P V is column-major Oᵀ = Vᵀ Pᵀ: m = d, n = L, k = L, A = V (column-major d x L), B = P (column-major
  // L x L, its transpose).
  BRISK_RETURN_IF_ERROR(
      cublas_status(cublasGemmStridedBatchedEx(ctx->blas(), CUBLAS_OP_N, CUBLAS_OP_N, d, L, L, &one, v, type, d,
                                               head_elems, scores, type, ld_s, score_elems, &zero, padded_context, type,
                                               d, head_elems, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                    "cublasGemmStridedBatchedEx (self_attention P V)"));

  return merge_heads<T>(padded_context, sequences, rows, heads, head_dim, context);
}

template Status self_attention<float>(const float*, const float*, const AttentionRows&, int64_t, int64_t, int64_t,
                                      float*);
template Status self_attention<float16_t>(const float16_t*, const float16_t*, const AttentionRows&, int64_t, int64_t,
                                          int64_t, float16_t*);
template Status self_attention<bfloat16_t>(const bfloat16_t*, const bfloat16_t*, const AttentionRows&, int64_t, int64_t,
                                           int64_t, bfloat16_t*);

}  // namespace brisk::kernels::cuda
