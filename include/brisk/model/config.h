// BertConfig and PoolingConfig: the shape and behaviour of a BERT-family encoder, parsed from a Hugging Face
// model directory (config.json, and the sentence-transformers files modules.json, the Pooling module's
// config.json and sentence_bert_config.json).
//
//   BRISK_ASSIGN_OR_RETURN(BertConfig config, BertConfig::from_json_file(dir + "/config.json"));
//   BRISK_ASSIGN_OR_RETURN(PoolingConfig pooling, read_pooling_config(dir));
//   BRISK_ASSIGN_OR_RETURN(PoolingConfig same, read_pooling_config_from_files(files, "model.q8.safetensors"));
//   int64_t head_dim = config.head_dim();   // hidden_size / num_attention_heads
//
// Supported model_type values: "bert" (BERT, MiniLM, and other checkpoints that use BERT's keys and weight
// names; a config.json without model_type is read as "bert"), "distilbert" (its keys dim, n_layers, n_heads,
// hidden_dim, activation are mapped onto the same fields; type_vocab_size is 0), "roberta" and "xlm-roberta", and
// the decoder embedders "qwen2" and "qwen3" (Qwen3-Embedding, gte-Qwen2: RMSNorm, rotary positions, grouped-query
// causal attention, a SwiGLU feed-forward; is_decoder()). Anything else is rejected with an error naming the
// model_type. Encoders support only absolute position embeddings; decoders only unscaled rotary ones (rope_scaling
// null) without a sliding window.
//
// Required keys (bert): vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size.
// Optional keys and their Hugging Face defaults: max_position_embeddings 512, type_vocab_size 2,
// layer_norm_eps 1e-12, hidden_act "gelu", pad_token_id 0. Every error names the file (source_name) and key.
//
// Pruned models (brisk/prune/) give each layer its own shape:
//   pruned_heads               Hugging Face's key, {"<layer>": [head, ...]}: heads removed, by their original index
//                              (transformers 4.x loads such a directory as it is);
//   brisk_intermediate_sizes   brisk's own key, one feed-forward width per layer, when they differ.
//
// Thread safety: plain value types; the functions are pure and may run concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk {

// kRoberta: RoBERTa and XLM-RoBERTa ("roberta", "xlm-roberta"): BERT's layers with positions that start after the
// padding id and one token type.
// kQwen2, kQwen3: decoder embedders ("qwen2", "qwen3"); Qwen3 adds per-head RMSNorms on queries and keys and drops
// the attention biases.
enum class ModelFamily : uint8_t { kBert, kDistilBert, kRoberta, kQwen2, kQwen3 };
// Qwen2 and Qwen3: causal decoders (pre-RMSNorm, rotary positions, SwiGLU); the others are encoders.
inline bool is_decoder_family(ModelFamily family) {
  return family == ModelFamily::kQwen2 || family == ModelFamily::kQwen3;
}

// The feed-forward activation.
//   kGelu      exact erf GELU ("gelu")
//   kGeluTanh  tanh approximation ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")
//   kRelu      "relu" (DistilBERT allows it)
//   kSilu      "silu" / "swish": the decoders' SwiGLU, down(silu(gate(x)) * up(x))
enum class Activation : uint8_t { kGelu, kGeluTanh, kRelu, kSilu };

BRISK_API std::string_view activation_name(Activation act);

struct BRISK_API BertConfig {
  std::string model_type = "bert";  // as written in config.json
  ModelFamily family = ModelFamily::kBert;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;  // 0: the model has no token-type embeddings (DistilBERT)
  double layer_norm_eps = 1e-12;
  Activation hidden_act = Activation::kGelu;
  std::string hidden_act_name = "gelu";  // as written in config.json
  int64_t pad_token_id = 0;
  // Decoders only (0 for encoders): key/value heads (grouped-query attention), the head width when config.json
  // gives it ("head_dim"; Qwen3's default 128), the rotary base, and whether Q, K and V carry biases.
  int64_t num_key_value_heads = 0;
  int64_t attention_head_dim = 0;
  double rope_theta = 0.0;
  bool attention_bias = false;
  std::map<int64_t, std::vector<int64_t>> pruned_heads;  // layer -> removed heads (sorted); empty when none
  std::vector<int64_t> intermediate_sizes;               // per layer; empty when all are intermediate_size

  // The first position id: 0 for BERT and DistilBERT; pad_token_id + 1 for RoBERTa (transformers'
  // create_position_ids_from_input_ids), so a sequence holds at most max_position_embeddings - position_offset()
  // tokens.
  int64_t position_offset() const { return family == ModelFamily::kRoberta ? pad_token_id + 1 : 0; }
  // RoBERTa's position ids also skip the tokens equal to pad_token_id, as create_position_ids_from_input_ids does:
  // such a token (a "<pad>" the tokenizer found in the text) takes position pad_token_id and the count does not
  // advance over it. BERT's count every token.
  bool positions_skip_pad_ids() const { return family == ModelFamily::kRoberta; }
  bool is_decoder() const { return is_decoder_family(family); }
  // Qwen3's per-head RMSNorms on queries and keys, before the rotation.
  bool qk_norm() const { return family == ModelFamily::kQwen3; }
  int64_t head_dim() const {
    if (attention_head_dim > 0) return attention_head_dim;
    return num_attention_heads > 0 ? hidden_size / num_attention_heads : 0;
  }
  // Key/value heads: num_key_value_heads for a decoder, the (kept) query heads for an encoder.
  int64_t layer_kv_heads(int64_t layer) const { return is_decoder() ? num_key_value_heads : layer_heads(layer); }
  // Heads and feed-forward width of one layer, after pruning.
  int64_t layer_heads(int64_t layer) const;
  int64_t layer_intermediate_size(int64_t layer) const;
  bool is_pruned() const { return !pruned_heads.empty() || !intermediate_sizes.empty(); }

  // Parses and validates. `source_name` (e.g. "config.json") is used in error messages.
  static StatusOr<BertConfig> from_json_string(const std::string& text, const std::string& source_name);
  static StatusOr<BertConfig> from_json_file(const std::string& path);

  // Checks the invariants (positive sizes, hidden_size divisible by num_attention_heads, ...).
  Status validate(const std::string& source_name) const;
  // One-line summary: "bert: 6 layers, hidden 384, 12 heads, intermediate 1536, vocab 30522, gelu" (and, when
  // pruned, "; pruned: 10 of 72 heads, 1843 of 9216 ffn neurons").
  std::string summary() const;
};

// How token vectors become one sentence vector (sentence-transformers' Pooling module). kModelDefault is for
// options only ("as the model's Pooling module says"); a model's PoolingConfig always names a concrete mode.
// kLastToken: the last token of each text (decoder embedders, whose causal attention sums the text up there).
enum class Pooling : uint8_t { kModelDefault, kMean, kCls, kMax, kLastToken };

BRISK_API std::string_view pooling_name(Pooling pooling);

struct BRISK_API PoolingConfig {
  Pooling mode = Pooling::kMean;
  int64_t word_embedding_dimension = 0;  // 0 when unknown (no Pooling config.json)
  bool normalize = false;                // modules.json lists sentence_transformers.models.Normalize
  int64_t max_seq_length = 0;            // sentence_bert_config.json's max_seq_length; 0 when unknown
  std::string config_path;               // the Pooling config.json read, for messages; empty when none
  // config_sentence_transformers.json's prompts, by name: what sentence-transformers' encode(prompt_name=NAME) puts
  // in front of each text (multilingual-e5's "query: " and "passage: "; Qwen3-Embedding's "Instruct: ...\nQuery:");
  // empty when none.
  std::map<std::string, std::string> prompts;

  // Parses a Pooling module's config.json text. Exactly one of pooling_mode_mean_tokens, pooling_mode_cls_token,
  // pooling_mode_max_tokens, pooling_mode_lasttoken may be true; other modes (mean_sqrt_len, weighted) are
  // rejected, and so is include_prompt false (the prompt's tokens left out of the pooling) but for last-token
  // pooling, where it changes nothing.
  static StatusOr<PoolingConfig> from_json_string(const std::string& text, const std::string& source_name);
};

// Reads modules.json when present: the Pooling module's directory (1_Pooling without modules.json), whether a
// Normalize module follows; modules brisk does not run (Dense, unknown types) and paths outside the model directory
// are errors. Then the Pooling config.json (mean pooling when absent), sentence_bert_config.json (max_seq_length)
// and config_sentence_transformers.json (the query prompt). Malformed files are errors, absent files are not.
BRISK_API StatusOr<PoolingConfig> read_pooling_config(const std::string& model_dir);
// The same over files already in memory, by path relative to the model directory ("modules.json",
// "1_Pooling/config.json", ...; a quantized model file carries them). Messages name a file "<source>:<path>".
BRISK_API StatusOr<PoolingConfig> read_pooling_config_from_files(const std::map<std::string, std::string>& files,
                                                                 std::string_view source);

// The small files of a Hugging Face model directory by relative path: config.json, tokenizer.json or vocab.txt,
// tokenizer_config.json, special_tokens_map.json, modules.json, sentence_bert_config.json and the Pooling
// config.json that modules.json names. What a quantized model file carries so that it loads without its directory
// (read_pooling_config_from_files and the tokenizer take them back), and config_sentence_transformers.json (the
// prompts). config.json and one of tokenizer.json / vocab.txt are required; a pooling setup read_pooling_config
// refuses is refused here too.
BRISK_API StatusOr<std::map<std::string, std::string>> read_model_files(const std::string& model_dir);

// Reads a whole file into a string; NotFound naming the path when it does not exist. Shared by the loaders.
BRISK_API StatusOr<std::string> read_text_file(const std::string& path);

}  // namespace brisk
