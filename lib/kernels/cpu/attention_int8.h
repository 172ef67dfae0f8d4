// Private to lib/kernels/cpu: the parts of int8 self-attention (self_attention_int8 in attention.cc) that run per
// (sequence, head) around the two int8 GEMMs of int8_gemm.h, one row kernel per ISA.
//
// For one sequence of len tokens, first column_absmax over its QKV rows; then for each head (width d):
//   S = Q Kᵀ      Q: the GEMM's activations, quantized with one scale per head (absmax / 127) by the GEMM's own
//                 quantize rows (a static scale) into that kernel's codes; K: its "weights", quantized the same way
//                 to s8 and packed by pack_keys. One scale per head, not per token: per-token scales cost a horizontal
//                 reduction per token, which at head_dim 32 took longer than the GEMM.
//   P = softmax(S / sqrt(d)) as codes, read from the GEMM's int32 dot products (its kDots epilogue, no float pass):
//                 e = exp((S - max S) * scale), scale = Q's scale * K's scale / sqrt(d), code = round(255 * e) in
//                 [0, 255] (the maximum is 255), row scale 1 / sum(codes); so a row's codes sum to 1 / row scale.
//   O = P V       P: the activations (raw codes, no +128 shift); V: the "weights", quantized per channel (scale
//                 absmax over the tokens / 127) and packed transposed by pack_values, with zero compensation.
// Every product is an exact integer dot product; the roundings are the codes of Q, K, P and V, and exp.
//
// Thread safety: stateless; concurrent calls must write disjoint outputs.
#pragma once

#include <cstdint>

#include "int8_gemm.h"

namespace brisk::kernels::cpu {

// The column maxima of |x| over rows of x [rows, cols] at row stride ld: one streaming pass over a sequence's QKV
// rows gives every head's Q and K absmax and V's per channel, and leaves the rows in cache for the heads.
using ColumnAbsmax = void (*)(const float* x, int64_t ld, int64_t rows, int64_t cols, float* absmax);
// Keys [len, d] at row stride ldk, times inv -> w: n = len (tokens), k = d, in int8_gemm.h's packed layout, with the
// u8 kernels' compensation (-128 * the sum of each token's codes).
using PackKeys = void (*)(const float* k, int64_t ldk, int64_t len, int64_t d, float inv, Int8PackedWeights& w);
// Values [len, d] at row stride ldv, times inv[c] per channel -> w: n = d (channels), k = len (tokens), zero
// compensation. inv has room for d rounded up to 16.
using PackValues = void (*)(const float* v, int64_t ldv, int64_t len, int64_t d, const float* inv,
                            Int8PackedWeights& w);
// Integer score rows s [rows, len >= 1] at row stride lds (exact dot products, |s| < 2^23) -> per row i, codes at
// row i * ldp (uint8_t, or int16_t when `wide`; [len, ldp) zero) and row_scales[i] = 1 / sum of its codes.
using SoftmaxCodes = void (*)(const int32_t* s, int64_t lds, int64_t rows, int64_t len, float scale, void* codes,
                              int64_t ldp, bool wide, float* row_scales);

struct AttentionInt8Kernels {
  ColumnAbsmax column_absmax;
  PackKeys pack_keys;
  PackValues pack_values;
  SoftmaxCodes softmax_codes;
};

// The kernels for an int8 GEMM kernel's ISA (avx512 helpers for both AVX-512 kernels, avx2 for AVX-VNNI and AVX2).
AttentionInt8Kernels attention_int8_kernels(Int8Kernel kernel);

// A symmetric s8 scale from an absmax (absmax / 127; 1 for an all-zero block) and the factor that quantizes by it
// (127 / absmax; 0 for an all-zero block).
inline float s8_scale(float absmax) { return absmax > 0.0f ? absmax / 127.0f : 1.0f; }
inline float s8_inverse(float absmax) { return absmax > 0.0f ? 127.0f / absmax : 0.0f; }

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

#define BRISK_DECLARE_ATTENTION_INT8(name)                                                                      \
  void column_absmax_##name(const float* x, int64_t ld, int64_t rows, int64_t cols, float* absmax);             \
  void pack_keys_##name(const float* k, int64_t ldk, int64_t len, int64_t d, float inv, Int8PackedWeights& w);  \
  void pack_values_##name(const float* v, int64_t ldv, int64_t len, int64_t d, const float* inv,                \
                          Int8PackedWeights& w);                                                                \
  void softmax_codes_##name(const int32_t* s, int64_t lds, int64_t rows, int64_t len, float scale, void* codes, \
                            int64_t ldp, bool wide, float* row_scales);
BRISK_DECLARE_ATTENTION_INT8(scalar)  // attention_int8.cc
BRISK_DECLARE_ATTENTION_INT8(avx2)    // attention_int8_avx2.cc
BRISK_DECLARE_ATTENTION_INT8(avx512)  // attention_int8_avx512.cc
#undef BRISK_DECLARE_ATTENTION_INT8

}  // namespace brisk::kernels::cpu
