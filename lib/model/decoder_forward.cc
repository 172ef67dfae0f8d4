// The decoder families' forward pass (Qwen2, Qwen3), over brisk's ops on the CPU in f32: the word embeddings, then
// per layer RMSNorm, the Q/K/V projection, Qwen3's per-head norms and the rotation, causal grouped-query attention
// within each packed sequence, the output projection accumulated onto the residual, RMSNorm, and the SwiGLU
// feed-forward (gate and up into one [tokens, 2 x intermediate] buffer, silu(gate) * up, down accumulated onto the
// residual); then the final RMSNorm and pooling. Sequences are always packed: a decoder's causal attention needs no
// padding, so EncoderOptions::remove_padding does not apply.
#include <algorithm>

#include "brisk/core/parallel.h"
#include "brisk/kernels/decoder_ops.h"
#include "encoder_impl.h"

namespace brisk {

Status BertEncoder::Impl::run_decoder(const PackedSequences& batch, const Outputs& outputs, const ActivationTap* tap,
                                      EncoderWorkspace& ws) const {
  constexpr Device kCpu = Device::kCPU;
  const int64_t h = config.hidden_size, d = config.head_dim();
  const float eps = static_cast<float>(config.layer_norm_eps);
  BRISK_ASSIGN_OR_RETURN(const TokenLayout layout, make_token_layout(batch, /*remove_padding=*/true,
                                                                     static_cast<int32_t>(config.pad_token_id), 0));
  const int64_t n = layout.rows;
  const kernels::SequenceRows sequences{layout.starts.data(), layout.lengths.data(), layout.batch};
  const kernels::AttentionRows attention_rows{layout.starts.data(), layout.lengths.data(), layout.batch,
                                              layout.max_len};

  float* x = outputs.hidden_states;  // the residual stream: the caller's buffer when it wants the hidden states
  if (x == nullptr) {
    BRISK_RETURN_IF_ERROR(reserve_scratch(ws.hidden, static_cast<size_t>(n * h) * sizeof(float), kCpu));
    x = scratch<float>(ws.hidden);
  }
  parallel_for(0, n, 32, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) word_row(layout.ids[static_cast<size_t>(r)], x + r * h);
  });

  auto observe = [&](const std::string& name, const float* act, int64_t rows, int64_t cols) -> Status {
    if (tap != nullptr && *tap) return (*tap)(name, act, rows, cols);
    return absl::OkStatus();
  };
  int64_t max_qkv = 0;
  for (const EncoderLayer& layer : layers) max_qkv = std::max(max_qkv, (layer.heads + 2 * layer.kv_heads) * d);
  const int64_t ffn_chunk = std::min<int64_t>(n, kFfnChunkTokens);
  BRISK_RETURN_IF_ERROR(reserve_scratch(ws.normed, static_cast<size_t>(n * h) * sizeof(float), kCpu));
  BRISK_RETURN_IF_ERROR(reserve_scratch(ws.qkv, static_cast<size_t>(n * max_qkv) * sizeof(float), kCpu));
  BRISK_RETURN_IF_ERROR(reserve_scratch(ws.context, static_cast<size_t>(n * max_attention) * sizeof(float), kCpu));
  BRISK_RETURN_IF_ERROR(
      reserve_scratch(ws.gate_up, static_cast<size_t>(ffn_chunk * 2 * max_intermediate) * sizeof(float), kCpu));
  BRISK_RETURN_IF_ERROR(
      reserve_scratch(ws.intermediate, static_cast<size_t>(ffn_chunk * max_intermediate) * sizeof(float), kCpu));
  float* normed = scratch<float>(ws.normed);
  float* qkv = scratch<float>(ws.qkv);
  float* context = scratch<float>(ws.context);
  float* gate_up = scratch<float>(ws.gate_up);
  float* inter = scratch<float>(ws.intermediate);

  for (const EncoderLayer& layer : layers) {
    const int64_t q_width = layer.heads * d, kv_width = layer.kv_heads * d, ld = q_width + 2 * kv_width;
    BRISK_RETURN_IF_ERROR(
        kernels::rms_norm(kCpu, x, static_cast<const float*>(layer.attention_ln_gamma), eps, normed, n, h));
    for (const std::string& name : layer.qkv_names) BRISK_RETURN_IF_ERROR(observe(name, normed, n, h));
    if (layer.qkv.size() == 1) {
      BRISK_RETURN_IF_ERROR(layer.qkv[0].forward(normed, n, qkv, kernels::GemmEpilogue::kBias));
    } else {
      const int64_t column[3] = {0, q_width, q_width + kv_width};
      for (size_t i = 0; i < 3; ++i) {
        BRISK_RETURN_IF_ERROR(layer.qkv[i].forward(normed, n, qkv + column[i], kernels::GemmEpilogue::kBias, ld));
      }
    }
    const kernels::RotaryShape rotary{layer.heads,        layer.kv_heads,     d,  config.rope_theta,
                                      layer.q_norm_gamma, layer.k_norm_gamma, eps};
    BRISK_RETURN_IF_ERROR(kernels::rotary_qk(kCpu, qkv, ld, n, layout.positions.data(), rotary));
    BRISK_RETURN_IF_ERROR(kernels::causal_attention(kCpu, qkv, ld, attention_rows, n,
                                                    kernels::AttentionHeads{layer.heads, layer.kv_heads, d}, context));
    BRISK_RETURN_IF_ERROR(observe(layer.attention_output_name, context, n, q_width));
    BRISK_RETURN_IF_ERROR(layer.attention_output.forward(context, n, x, kernels::GemmEpilogue::kBiasAccumulate));
    BRISK_RETURN_IF_ERROR(
        kernels::rms_norm(kCpu, x, static_cast<const float*>(layer.output_ln_gamma), eps, normed, n, h));
    const int64_t inter_width = layer.ffn_width;
    for (int64_t t = 0; t < n; t += ffn_chunk) {
      const int64_t rows = std::min(ffn_chunk, n - t);
      const float* in = normed + t * h;
      BRISK_RETURN_IF_ERROR(observe(layer.gate_name, in, rows, h));
      BRISK_RETURN_IF_ERROR(observe(layer.intermediate_name, in, rows, h));
      if (layer.gate_up.size() == 1) {
        BRISK_RETURN_IF_ERROR(layer.gate_up[0].forward(in, rows, gate_up, kernels::GemmEpilogue::kBias));
      } else {
        for (size_t i = 0; i < 2; ++i) {
          BRISK_RETURN_IF_ERROR(layer.gate_up[i].forward(in, rows, gate_up + static_cast<int64_t>(i) * inter_width,
                                                         kernels::GemmEpilogue::kBias, 2 * inter_width));
        }
      }
      BRISK_RETURN_IF_ERROR(kernels::silu_mul(kCpu, gate_up, rows, inter_width, inter));
      BRISK_RETURN_IF_ERROR(observe(layer.output_name, inter, rows, inter_width));
      BRISK_RETURN_IF_ERROR(layer.output.forward(inter, rows, x + t * h, kernels::GemmEpilogue::kBiasAccumulate));
    }
  }
  BRISK_RETURN_IF_ERROR(kernels::rms_norm(kCpu, x, final_norm_gamma, eps, x, n, h));
  if (outputs.pooled != nullptr) {
    BRISK_RETURN_IF_ERROR(
        kernels::pool_sequences<float>(kCpu, x, sequences, h, outputs.pooling, outputs.normalize, outputs.pooled));
  }
  return absl::OkStatus();
}

}  // namespace brisk
