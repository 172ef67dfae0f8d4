// Private to lib/kernels: the CPU implementations behind the public ops of include/brisk/kernels/, one entry point
// per op, called by that op's one dispatch point (lib/kernels/<op>.cc) after it has checked the arguments (sizes
// > 0, required pointers non-null). The CUDA twins are declared in lib/kernels/cuda/cuda_kernels.h.
//
// Each picks its ISA level once (cpu_kernels.h's select_kernel) and splits its rows over brisk::parallel_for.
//
// Thread safety: reentrant; concurrent calls must write disjoint memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "brisk/core/status.h"
#include "brisk/kernels/attention.h"
#include "brisk/kernels/decoder_ops.h"
#include "brisk/kernels/embedding.h"
#include "brisk/kernels/gelu.h"
#include "brisk/kernels/linear.h"
#include "brisk/kernels/pooling.h"
#include "../dispatch.h"

namespace brisk::kernels::cpu {

// `then` (optional) runs after each block of rows, on the thread that normalised them, while they are in cache:
// then(begin, end) for blocks that together cover [0, rows) once.
void layer_norm_bias_residual(const float* x, const float* bias, const float* residual, const float* gamma,
                              const float* beta, float epsilon, float* out, int64_t rows, int64_t cols,
                              const std::function<void(int64_t, int64_t)>& then = nullptr);

void bias_gelu(float* x, const float* bias, int64_t rows, int64_t cols, GeluApproximation approx);

// rows_per_group == 0: one valid_cols for every row; otherwise lengths[g] for the rows of group g.
void masked_softmax(float* x, int64_t rows, int64_t cols, int64_t ld, int64_t valid_cols, int64_t rows_per_group,
                    const int32_t* lengths, float scale);

Status self_attention(const float* qkv, const float* qkv_bias, const AttentionRows& sequences, int64_t rows,
                      int64_t heads, int64_t head_dim, float* context);
Status self_attention_int8(const float* qkv, const AttentionRows& sequences, int64_t rows, int64_t heads,
                           int64_t head_dim, float* context);
// The decoders' causal grouped-query attention (brisk/kernels/decoder_ops.h).
Status causal_attention(const float* qkv, int64_t ld, const AttentionRows& sequences, const AttentionHeads& shape,
                        float* context);

void embed_layer_norm(const EmbeddingTables<float>& tables, const int32_t* ids, const int32_t* type_ids,
                      const int32_t* positions, float epsilon, float* out, int64_t rows);

// starts == nullptr: sequence b starts at row b * seq; lengths == nullptr: every sequence has seq rows.
void pool_sequences(const float* hidden, const int32_t* starts, const int32_t* lengths, int64_t batch, int64_t seq,
                    int64_t dim, SequencePooling mode, bool normalize, float* out);

void l2_normalize(float* x, int64_t rows, int64_t cols, float eps);

void vector_unary(UnaryOp op, const float* x, float* out, int64_t n);

void quantize_rows_int8(const float* x, int64_t rows, int64_t cols, int8_t* q, float* row_scales);

void dequantize_rows_int8(const int32_t* acc, const float* row_scales, const float* col_scales, int64_t n_col_scales,
                          const float* bias, GemmEpilogue epilogue, float* y, int64_t ldy, int64_t rows, int64_t cols);

template <typename From, typename To>
void convert(const From* in, To* out, int64_t n);

}  // namespace brisk::kernels::cpu
