// EncoderWeights: the float32 weights of a BERT-family encoder, loaded from a Hugging Face model directory and
// checked tensor by tensor against its BertConfig.
//
//   BRISK_ASSIGN_OR_RETURN(BertConfig config, BertConfig::from_json_file(dir + "/config.json"));
//   BRISK_ASSIGN_OR_RETURN(EncoderWeights w, EncoderWeights::load(dir, config));
//   const Tensor& wq = w.layers[0].q_weight;        // [hidden, hidden], PyTorch Linear layout [out, in]
//
// Sources, in order of preference: <dir>/model.safetensors (memory-mapped; f32 tensors are zero-copy views
// that keep the mapping alive), then <dir>/pytorch_model.bin (a torch.save'd state dict, read through libtorch;
// a build without libtorch returns an error that says so and suggests converting to safetensors).
//
// Tensor names: BERT's Hugging Face names with or without a model prefix ("bert.", or any single prefix such
// as "0.auto_model." in front of "embeddings.word_embeddings.weight"), and the old "LayerNorm.gamma" /
// "LayerNorm.beta" spelling. DistilBERT's names (distilbert.embeddings..., transformer.layer.N.attention.q_lin,
// out_lin, sa_layer_norm, ffn.lin1, ffn.lin2, output_layer_norm) map onto the same struct. pooler.*, cls.*,
// embeddings.position_ids and other heads are ignored. F16 and BF16 tensors are converted to owned f32 on load.
// Qwen2/Qwen3 (decoder embedders): "embed_tokens", "layers.N.self_attn.{q,k,v,o}_proj", "self_attn.{q,k}_norm",
// "mlp.{gate,up,down}_proj", "input_layernorm", "post_attention_layernorm" and "norm", with or without "model.";
// lm_head.* is ignored. A Linear without a bias in the checkpoint gets a zero bias (not counted in num_parameters).
//
// Every tensor's presence, dtype and exact shape is checked; errors name the file, the tensor, its shape and
// the expected shape.
//
// Thread safety: EncoderWeights is a value type holding Tensors; after load() it may be read from any number of
// threads. load() and the free functions may run concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "brisk/kernels/linear.h"
#include "brisk/model/config.h"

namespace brisk {

// Checkpoint tensors by name, as read from a file.
using NamedTensors = std::map<std::string, Tensor>;

struct BRISK_API EmbeddingWeights {
  // [vocab_size, hidden] f32; or, in a quantized model, i8 with word_scale f32 [vocab_size] (one scale a row), or
  // int4 groups: u8 [vocab_size, hidden / 2] with word_scale f16 [vocab_size, groups] and optionally word_min
  // (see brisk/kernels/quant_format.h). Rows are dequantized as they are looked up.
  Tensor word;
  Tensor word_scale, word_min;
  Tensor position;    // [max_position_embeddings, hidden]
  Tensor token_type;  // [type_vocab_size, hidden]; default-constructed (defined() false) when type_vocab_size is 0
  Tensor ln_gamma;    // [hidden]  LayerNorm after the embedding sum
  Tensor ln_beta;     // [hidden]
};

// One transformer layer (post-LayerNorm BERT block, or a pre-RMSNorm decoder block). All Linear weights are
// [out_features, in_features]: f32 as loaded; bf16 or i8 (with the matching *_scales) in a quantized model. `attn` is
// the layer's attention width, heads kept x head_dim (= hidden unless heads were pruned; for a decoder heads x its
// head_dim, and K and V have kv_heads x head_dim rows); `intermediate` its feed-forward width (see BertConfig).
// A decoder layer maps onto the same fields: attention_ln_gamma is input_layernorm (RMSNorm before attention),
// output_ln_gamma post_attention_layernorm (before the feed-forward), both without betas; intermediate is up_proj,
// output down_proj, and gate the SwiGLU gate.
struct BRISK_API EncoderLayerWeights {
  Tensor q_weight, q_bias;                       // [attn, hidden], [attn]
  Tensor k_weight, k_bias;                       // [attn, hidden], [attn]
  Tensor v_weight, v_bias;                       // [attn, hidden], [attn]
  Tensor attention_output_weight;                // [hidden, attn]
  Tensor attention_output_bias;                  // [hidden]
  Tensor attention_ln_gamma, attention_ln_beta;  // [hidden]  LayerNorm(x + attention output)
  Tensor intermediate_weight;                    // [intermediate, hidden]
  Tensor intermediate_bias;                      // [intermediate]
  Tensor output_weight;                          // [hidden, intermediate]
  Tensor output_bias;                            // [hidden]
  Tensor output_ln_gamma, output_ln_beta;        // [hidden]  LayerNorm(x + feed-forward output)
  Tensor gate_weight, gate_bias;                 // decoders: [intermediate, hidden], [intermediate] (zeros)
  Tensor q_norm_gamma, k_norm_gamma;             // Qwen3: [head_dim] RMSNorm of each query / key head
  kernels::QuantScales q_scales, k_scales, v_scales, attention_output_scales, intermediate_scales, output_scales,
      gate_scales;
};

struct BRISK_API EncoderWeights {
  EmbeddingWeights embeddings;
  std::vector<EncoderLayerWeights> layers;  // config.num_hidden_layers entries
  Tensor final_norm_gamma;                  // decoders: [hidden], the RMSNorm after the last layer
  std::string weights_file;                 // the file the tensors came from
  int64_t num_parameters = 0;               // elements in all tensors above (pooler and heads excluded)

  // Loads <model_dir>/model.safetensors, else <model_dir>/pytorch_model.bin.
  static StatusOr<EncoderWeights> load(const std::string& model_dir, const BertConfig& config);
  // Loads one file: *.safetensors through SafetensorsFile, anything else as a torch checkpoint.
  static StatusOr<EncoderWeights> load_file(const std::string& weights_path, const BertConfig& config);
  // Builds the struct from tensors already in memory; `source_name` is used in error messages.
  static StatusOr<EncoderWeights> from_tensors(const NamedTensors& tensors, const BertConfig& config,
                                               const std::string& source_name);

  // Number of elements the config implies (embeddings + layers, no pooler): what num_parameters must equal.
  static int64_t expected_num_parameters(const BertConfig& config);
};

// One linear layer of an EncoderWeights, under the name its model file gives it without ".weight"
// ("encoder.layer.0.attention.self.query" for BERT, "transformer.layer.0.attention.q_lin" for DistilBERT,
// "layers.0.self_attn.q_proj" for Qwen), with the shape the config gives it.
struct BRISK_API LinearSlot {
  std::string name;
  Tensor* weight;
  Tensor* bias;
  kernels::QuantScales* scales;
  int64_t out_features = 0, in_features = 0;
};
// The linear layers in model order: per layer query, key, value, attention output, intermediate, output, and for a
// decoder the gate last (linears_per_layer of them).
BRISK_API std::vector<LinearSlot> linear_slots(EncoderWeights& weights, const BertConfig& config);
inline int64_t linears_per_layer(const BertConfig& config) { return config.is_decoder() ? 7 : 6; }
// Per layer, the linears that read one input, as indices into the layer's run of linear_slots, in the order the
// encoder stacks their outputs: Q, K, V; and a decoder's gate and up. The encoder runs each group as one GEMM when
// their precisions allow, and the quantizer gives a group one set of SmoothQuant divisors so that they still do.
inline std::vector<std::vector<size_t>> shared_input_linears(const BertConfig& config) {
  if (config.is_decoder()) return {{0, 1, 2}, {6, 4}};
  return {{0, 1, 2}};
}
// The word-embedding table's name in plans and in brisk's quantized model file, without ".weight", whatever the
// family (Qwen's checkpoints call it embed_tokens).
inline constexpr const char* kWordEmbeddingsName = "embeddings.word_embeddings";
// The layers of a model by name, as quantization plans and pruning address them: its linear layers (linear_slots
// order), then the word embeddings.
BRISK_API std::vector<std::string> layer_names(const BertConfig& config);
// The f32 tensors of an encoder besides its linear layers and word embeddings (position and token-type embeddings,
// the LayerNorms), under the names a model file gives them and with the shapes the config implies: what the
// quantized model file (brisk/quant) and the pruned model directory (brisk/prune) write and check.
struct BRISK_API F32TensorSlot {
  std::string name;
  Tensor* tensor;
  std::vector<int64_t> shape;
};
BRISK_API std::vector<F32TensorSlot> f32_tensors(EncoderWeights& weights, const BertConfig& config);

// Every tensor of a safetensors file as zero-copy views (dtype kept).
BRISK_API StatusOr<NamedTensors> read_safetensors_tensors(const std::string& path);

// Every tensor of a torch.save'd state dict (zip format, torch >= 1.6) as owned, contiguous copies: floating
// tensors (f32, f16, bf16, f64) become f32, integer tensors keep i64/i32/i8/u8 (bool becomes u8). Needs a build
// with libtorch (see torch_checkpoints_supported()); otherwise returns Unimplemented.
BRISK_API StatusOr<NamedTensors> read_torch_checkpoint(const std::string& path);
// Every tensor of a weights file: read_safetensors_tensors for a .safetensors path, else read_torch_checkpoint.
BRISK_API StatusOr<NamedTensors> read_weights_file(const std::string& path);
// A model directory's weights file: model.safetensors, else pytorch_model.bin; NotFound naming the directory.
BRISK_API StatusOr<std::string> find_weights_file(const std::string& model_dir);
// Lowercase hex SHA-256 of a file's bytes: what identifies the weights a quantized or pruned model came from.
BRISK_API StatusOr<std::string> file_sha256_hex(const std::string& path);
// A model directory's encoder weights and every tensor of its weights file (a task head's among them), read once.
struct BRISK_API WeightsWithTensors {
  EncoderWeights weights;
  NamedTensors tensors;
};
BRISK_API StatusOr<WeightsWithTensors> load_weights_with_tensors(const std::string& model_dir,
                                                                 const BertConfig& config);
BRISK_API bool torch_checkpoints_supported();

// A contiguous f32 copy of a f16/bf16 tensor; an f32 tensor is returned as is (no copy). Other dtypes: error.
BRISK_API StatusOr<Tensor> to_float32(const Tensor& tensor);

}  // namespace brisk
