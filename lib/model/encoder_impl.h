// Private to lib/model: what a BertEncoder owns, shared by encoder.cc (building it from weights, placing its
// parameters on the device) and encoder_forward.cc (the one forward pass over brisk's ops, for every device).
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "brisk/kernels/linear.h"
#include "brisk/kernels/pooling.h"
#include "brisk/model/encoder.h"
#include "brisk/model/token_layout.h"
#include "brisk/kernels/quant_format.h"

namespace brisk {

struct EncoderLayer {
  // Q, K and V stacked into one [3 * hidden, hidden] Linear when they share a precision; otherwise three that
  // write their columns of the same [tokens, 3 * hidden] buffer.
  std::vector<kernels::Linear> qkv;
  std::vector<std::string> qkv_names;  // the model file's names, for activation taps
  std::string attention_output_name, intermediate_name, output_name, gate_name;
  kernels::Linear attention_output;
  kernels::Linear intermediate;  // encoders only
  kernels::Linear output;        // a decoder's down_proj
  // Decoders: the SwiGLU's gate and up projections stacked into one [2 x intermediate, hidden] Linear (gate's
  // columns first) when they share a precision; otherwise the two, writing their halves of one buffer.
  std::vector<kernels::Linear> gate_up;
  const float* q_norm_gamma = nullptr;  // Qwen3: the per-head RMSNorms of queries and keys
  const float* k_norm_gamma = nullptr;
  // The LayerNorm parameters in the activation dtype on the encoder's device.
  const void* attention_ln_gamma = nullptr;
  const void* attention_ln_beta = nullptr;
  const void* output_ln_gamma = nullptr;
  const void* output_ln_beta = nullptr;
  int64_t heads = 0;            // kept after pruning (config.layer_heads)
  int64_t kv_heads = 0;         // config.layer_kv_heads: heads for an encoder, fewer for a decoder (GQA)
  bool int8_attention = false;  // EncoderOptions::int8_attention applies to this layer
  int64_t ffn_width = 0;        // config.layer_intermediate_size
};

// Scratch for one forward pass on the encoder's device; grown on demand and reused.
struct EncoderWorkspace {
  Tensor qkv, context, intermediate, hidden, hidden_f32, pooled, inputs;
  Tensor normed, gate_up;  // decoders: the RMSNorm of the residual stream, the SwiGLU's [tokens, 2 x intermediate]
  // int8 Linears' inputs quantized by the op before them (CPU): the feed-forward's and the next layer's QKV by a
  // LayerNorm, the feed-forward's second Linear's by the first (its GeLU output).
  kernels::QuantizedInput ffn_input, qkv_input, ffn_down_input;
  std::vector<int32_t> staging;  // the token layout's index arrays, gathered for one upload
  std::vector<float> host_rows;  // device results on their way to the caller
};

// Tokens per feed-forward chunk on the CPU: bounds the [chunk, intermediate] scratch (3 MB for MiniLM) whatever the
// batch.
inline constexpr int64_t kFfnChunkTokens = 512;

// Grows `t` to at least `bytes` on `device` (contents not kept).
inline Status reserve_scratch(Tensor& t, size_t bytes, Device device) {
  if (t.defined() && t.nbytes() >= bytes) return absl::OkStatus();
  t = Tensor();  // free first: the old and the new buffer need not both fit under a device memory cap
  BRISK_ASSIGN_OR_RETURN(t, Tensor::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DType::kU8, device));
  return absl::OkStatus();
}

template <typename T>
T* scratch(Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

struct BertEncoder::Impl {
  BertConfig config;
  EncoderWeights weights;
  EncoderOptions options;
  std::vector<EncoderLayer> layers;
  kernels::GemmEpilogue ffn_epilogue = kernels::GemmEpilogue::kBiasGeluErf;
  int64_t max_attention = 0, max_intermediate = 0;  // the widest layer, for scratch sizes

  // The embedding tables in the activation dtype on the device. word_table is null on the CPU when the table is
  // quantized: its rows are dequantized as tokens look them up (word_row).
  const void* word_table = nullptr;
  const void* position_table = nullptr;
  const void* token_type_table = nullptr;
  const void* embedding_ln_gamma = nullptr;
  const void* embedding_ln_beta = nullptr;
  const float* final_norm_gamma = nullptr;  // decoders
  std::vector<Tensor> device_parameters;    // owns the uploaded copies (empty on the CPU)
  DType word_dtype = DType::kF32;
  Int4Matrix word_int4;

  mutable std::mutex pool_mu;
  mutable std::vector<std::unique_ptr<EncoderWorkspace>> pool;
  std::unique_ptr<EncoderWorkspace> acquire() const;
  void release(std::unique_ptr<EncoderWorkspace> ws) const;

  Status init_word_embeddings();
  void word_row(int32_t id, float* out) const;
  // A host f32 parameter as the encoder sees it: itself on the CPU; on CUDA a converted device copy.
  StatusOr<const void*> place(const Tensor& host_f32);
  Status place_parameters();
  Status check_input(const PackedSequences& batch) const;

  // The forward pass in activation type T; writes the packed hidden states and/or the pooled embeddings (host).
  struct Outputs {
    float* hidden_states = nullptr;  // [total_tokens, hidden] or null
    float* pooled = nullptr;         // [batch, hidden] or null
    kernels::SequencePooling pooling = kernels::SequencePooling::kMean;
    bool normalize = false;
  };
  template <typename T>
  Status run(const PackedSequences& batch, const Outputs& outputs, const ActivationTap* tap,
             EncoderWorkspace& ws) const;
  // The decoder families' pass (decoder_forward.cc): f32 on the CPU, packed sequences, causal attention.
  Status run_decoder(const PackedSequences& batch, const Outputs& outputs, const ActivationTap* tap,
                     EncoderWorkspace& ws) const;
  Status run_any(const PackedSequences& batch, const Outputs& outputs, const ActivationTap* tap) const;
};

}  // namespace brisk
