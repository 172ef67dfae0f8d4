// Private to lib/kernels/cpu: the parts of int8 self-attention (self_attention_int8 in attention.cc) that run per
// (sequence, head) around the two int8 GEMMs of int8_gemm.h, one row kernel per ISA.
//
// For one head of one sequence of len tokens, head width d:
//   S = Q Kᵀ      Q: the GEMM's activations, quantized with one scale per head (absmax / 127) by quantize_queries
//                 into that kernel's codes (u8 q + 128, or s16 q); K: its "weights", quantized the same way to s8
//                 and packed by pack_keys. One scale per head, not per token: the scales then cost no horizontal
//                 reduction per token, which at head_dim 32 took longer than the GEMM.
//   P = softmax(S / sqrt(d)) as codes: e = exp(S * scale - max), code = round(255 * e) in [0, 255] (the maximum
//                 is 255), row scale 1 / sum(codes); so the codes of a row sum to exactly 1 / row scale.
//   O = P V       P: the activations (raw codes, no +128 shift); V: the "weights", quantized per channel (scale
//                 absmax over the tokens / 127) and packed transposed by pack_values, with zero compensation.
// Every product is an exact integer dot product; the roundings are the codes of Q, K, P and V, and exp.
//
// Thread safety: stateless; concurrent calls must write disjoint outputs.
#pragma once

#include <cstdint>

#include "int8_gemm.h"

namespace brisk::kernels::cpu {

// Queries [len, d] at row stride ldq -> codes [len, ldc] (uint8_t q + 128, or int16_t q when `wide`; [d, ldc)
// hold the code of 0), *scale = the head's absmax / 127 (1 when all are 0).
using QuantizeQueries = void (*)(const float* q, int64_t ldq, int64_t len, int64_t d, void* codes, int64_t ldc,
                                 bool wide, float* scale);
// Keys [len, d] at row stride ldk -> w: n = len (tokens), k = d, in int8_gemm.h's packed layout, with the u8
// kernels' compensation (-128 * the sum of each token's codes); *scale as for the queries.
using PackKeys = void (*)(const float* k, int64_t ldk, int64_t len, int64_t d, Int8PackedWeights& w, float* scale);
// Values [len, d] at row stride ldv -> w: n = d (channels), k = len (tokens), zero compensation; scales[c] =
// channel c's scale.
using PackValues = void (*)(const float* v, int64_t ldv, int64_t len, int64_t d, Int8PackedWeights& w, float* scales);
// Scores s[len] -> codes[ldp] (uint8_t, or int16_t when `wide`; [len, ldp) zero), *row_scale = 1 / sum(codes).
using SoftmaxCodes = void (*)(const float* s, int64_t len, float scale, void* codes, int64_t ldp, bool wide,
                              float* row_scale);

struct AttentionInt8Kernels {
  QuantizeQueries quantize_queries;
  PackKeys pack_keys;
  PackValues pack_values;
  SoftmaxCodes softmax_codes;
};

// The kernels for an int8 GEMM kernel's ISA (avx512 helpers for both AVX-512 kernels, avx2 for AVX-VNNI and AVX2).
BRISK_API AttentionInt8Kernels attention_int8_kernels(Int8Kernel kernel);

// Sizes w for n x k and sets its shape fields; keeps the buffers' capacity (the packers write every byte of the
// first n columns, the k padding included; the padding columns keep old values, which no output reads).
void reshape_packed(Int8PackedWeights& w, int64_t n, int64_t k);

// The bytes from one group of 4 k to the next in column j's panel (int8_gemm.h's packed layout).
inline int64_t group_stride(const Int8PackedWeights& w, int64_t j) {
  const int64_t first = j / kInt8PanelColumns * kInt8PanelColumns;
  return (w.n_padded - first < kInt8PanelColumns ? w.n_padded - first : kInt8PanelColumns) * 4;
}
// Where the 4 bytes of column j, k = 4g .. 4g + 3 sit.
inline const int8_t* packed_group(const Int8PackedWeights& w, int64_t j, int64_t g) {
  const int64_t first = j / kInt8PanelColumns * kInt8PanelColumns;
  return w.data.data() + first * w.k_padded + g * group_stride(w, j) + (j - first) * 4;
}
inline int8_t* packed_group(Int8PackedWeights& w, int64_t j, int64_t g) {
  return const_cast<int8_t*>(packed_group(static_cast<const Int8PackedWeights&>(w), j, g));
}

#define BRISK_DECLARE_ATTENTION_INT8(name)                                                                           \
  void quantize_queries_##name(const float* q, int64_t ldq, int64_t len, int64_t d, void* codes, int64_t ldc,        \
                               bool wide, float* scale);                                                             \
  void pack_keys_##name(const float* k, int64_t ldk, int64_t len, int64_t d, Int8PackedWeights& w, float* scale);    \
  void pack_values_##name(const float* v, int64_t ldv, int64_t len, int64_t d, Int8PackedWeights& w, float* scales); \
  void softmax_codes_##name(const float* s, int64_t len, float scale, void* codes, int64_t ldp, bool wide,           \
                            float* row_scale);
BRISK_DECLARE_ATTENTION_INT8(scalar)  // attention_int8.cc
BRISK_DECLARE_ATTENTION_INT8(avx2)    // attention_int8_avx2.cc
BRISK_DECLARE_ATTENTION_INT8(avx512)  // attention_int8_avx512.cc
#undef BRISK_DECLARE_ATTENTION_INT8

}  // namespace brisk::kernels::cpu
