// BERT's embedding layer in one pass: the word, position and token-type rows of each token are gathered, summed
// and layer-normalised.
//
//   EmbeddingTables<float> tables{word, position, token_type, gamma, beta, vocab, max_positions, type_vocab, hidden};
//   BRISK_RETURN_IF_ERROR(embed_layer_norm(device, tables, ids, type_ids, positions, 1e-12f, out, rows));
//
//   out[r, :] = LayerNorm(word[ids[r]] + position[positions[r]] + token_type[type_ids[r]]) * gamma + beta
//
// ids, type_ids and positions are int32 [rows] on the op's device; type_ids == nullptr means type 0 for every token,
// token_type == nullptr means the model has no token-type table. word == nullptr means out already holds each
// token's word row (a caller that dequantizes an int8 or int4 table itself). Ids are not range-checked here: the
// encoder checks them on the host before they reach a device. LayerNorm as in layernorm.h. T is float, or on CUDA
// float16_t / bfloat16_t (fp32 sums).
//
// Dispatch: one switch on `device`. The CPU splits rows over brisk::parallel_for and normalises with the LayerNorm
// kernel; CUDA runs one block per row with vectorised loads on the calling thread's stream; a build without CUDA
// returns UNIMPLEMENTED naming BRISK_WITH_CUDA.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>

#include "brisk/core/export.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk::kernels {

template <typename T>
struct EmbeddingTables {
  const T* word = nullptr;        // [vocab, hidden], or null (see above)
  const T* position = nullptr;    // [max_positions, hidden]
  const T* token_type = nullptr;  // [type_vocab, hidden], or null
  const T* gamma = nullptr;       // [hidden]
  const T* beta = nullptr;        // [hidden]
  int64_t hidden = 0;
};

template <typename T>
BRISK_API Status embed_layer_norm(Device device, const EmbeddingTables<T>& tables, const int32_t* ids,
                                  const int32_t* type_ids, const int32_t* positions, float epsilon, T* out,
                                  int64_t rows);

}  // namespace brisk::kernels
