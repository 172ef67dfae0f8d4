// The ops of a decoder embedder's layer (Qwen2 / Qwen3) that an encoder does not have: RMSNorm, rotary positions
// (with Qwen3's per-head RMSNorm of queries and keys fused in), causal grouped-query self-attention over packed
// sequences, and the SwiGLU product. Each matches transformers' modeling_qwen3 in f32.
//
//   rms_norm(Device::kCPU, x, gamma, 1e-6f, normed, tokens, hidden);              // input_layernorm
//   // qkv [tokens, ld]: each row holds heads query heads, then kv_heads key heads, then kv_heads value heads
//   rotary_qk(Device::kCPU, qkv, ld, tokens, positions, {heads, kv_heads, head_dim, 1e6, q_gamma, k_gamma, eps});
//   causal_attention(Device::kCPU, qkv, ld, {starts, lengths, batch, max_len}, tokens, {heads, kv_heads, head_dim},
//                    ctx);
//   silu_mul(Device::kCPU, gate_up, tokens, intermediate, inter);                  // silu(gate) * up
//
//   rms_norm          out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * gamma; out may be x.
//   rotary_qk         in place. When q_gamma / k_gamma are given, each query / key head is first RMS-normalised
//                     with them (Qwen3's q_norm, k_norm; same eps). Then the rotation of Hugging Face's
//                     apply_rotary_pos_emb (rotate_half: element i pairs with i + head_dim / 2) by
//                     position[r] * theta^(-2i / head_dim), the angle rounded to f32 as torch computes it.
//   causal_attention  out[r, h * head_dim ...] = softmax(q_r . k_j / sqrt(head_dim), j <= r in r's sequence) . v_j;
//                     query head h reads key/value head h / (heads / kv_heads). Sequences are rows
//                     [starts[b], starts[b] + lengths[b]) (host memory, checked as check_attention_rows does);
//                     out is [rows, heads * head_dim]. On the CPU, per (sequence, head) two sgemm calls as
//                     self_attention's, with the causal mask applied by the softmax (row i keeps i + 1 columns).
//   silu_mul          out[r, j] = silu(gate_up[r, j]) * gate_up[r, width + j] (gate_up [rows, 2 * width]).
//
// Dispatch: one switch on `device`. The CPU splits rows (or sequence x head pairs) over brisk::parallel_for; CUDA
// is not implemented yet (UNIMPLEMENTED naming the op): decoder models run on the CPU.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "brisk/kernels/attention.h"

namespace brisk::kernels {

struct RotaryShape {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  double theta = 10000.0;
  const float* q_gamma = nullptr;  // [head_dim] or null: no per-head norm
  const float* k_gamma = nullptr;
  float eps = 1e-6f;
};

struct AttentionHeads {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
};

BRISK_API Status rms_norm(Device device, const float* x, const float* gamma, float eps, float* out, int64_t rows,
                          int64_t cols);

BRISK_API Status rotary_qk(Device device, float* qkv, int64_t ld, int64_t rows, const int32_t* positions,
                           const RotaryShape& shape);

BRISK_API Status causal_attention(Device device, const float* qkv, int64_t ld, const AttentionRows& sequences,
                                  int64_t rows, const AttentionHeads& shape, float* out);

BRISK_API Status silu_mul(Device device, const float* gate_up, int64_t rows, int64_t width, float* out);

}  // namespace brisk::kernels
