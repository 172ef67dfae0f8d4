// BertConfig / PoolingConfig parsing. See include/brisk/model/config.h.
#include "brisk/model/config.h"
#include "brisk/core/internal/bounded_input.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "json_describe.h"
#include "model_file_source.h"

namespace brisk {

namespace {

using nlohmann::json;

Status bad(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

StatusOr<json> parse_object(const std::string& text, const std::string& source) {
  BRISK_ASSIGN_OR_RETURN(json j, parse_json_bounded(text, source));
  if (!j.is_object()) return bad(source, absl::StrCat("is a JSON ", j.type_name(), "; expected a JSON object"));
  return j;
}

// Integer field. `required` false: returns `fallback` when the key is absent or null.
StatusOr<int64_t> get_int(const json& j, const std::string& key, const std::string& source, bool required,
                          int64_t fallback = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (!required) return fallback;
    return bad(source, absl::StrCat("missing required key \"", key, "\"; expected an integer"));
  }
  if (it->is_number_float()) {
    const double d = it->get<double>();
    // e.g. 384.0; the range check first, since converting an out-of-range double to int64 is undefined
    if (std::fabs(d) < 9.2e18 && d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  if (!it->is_number_integer()) {
    return bad(source, absl::StrCat("key \"", key, "\" is ", describe_json(*it), " (a JSON ", it->type_name(),
                                    "); expected an integer"));
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
    return bad(source, absl::StrCat("key \"", key, "\" is ", describe_json(*it), "; expected an integer below 2^63"));
  }
  return it->get<int64_t>();
}

StatusOr<double> get_double(const json& j, const std::string& key, const std::string& source, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) {
    return bad(source, absl::StrCat("key \"", key, "\" is ", describe_json(*it), " (a JSON ", it->type_name(),
                                    "); expected a number"));
  }
  return it->get<double>();
}

StatusOr<std::string> get_string(const json& j, const std::string& key, const std::string& source,
                                 const std::string& fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string()) {
    return bad(source, absl::StrCat("key \"", key, "\" is ", describe_json(*it), " (a JSON ", it->type_name(),
                                    "); expected a string"));
  }
  return it->get<std::string>();
}

StatusOr<bool> get_bool(const json& j, const std::string& key, const std::string& source, bool fallback = false) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return bad(source, absl::StrCat("key \"", key, "\" is ", describe_json(*it), " (a JSON ", it->type_name(),
                                    "); expected true or false"));
  }
  return it->get<bool>();
}

StatusOr<Activation> parse_activation(const std::string& name, const std::string& key, const std::string& source) {
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  return bad(source, absl::StrCat("key \"", key, "\" is \"", name,
                                  "\"; expected one of gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu"));
}

// Qwen2 / Qwen3 (transformers' Qwen2Config and Qwen3Config defaults where a key is absent).
Status parse_qwen(const json& j, const std::string& source, BertConfig& c) {
  const bool qwen3 = c.model_type == "qwen3";
  c.family = qwen3 ? ModelFamily::kQwen3 : ModelFamily::kQwen2;
  BRISK_ASSIGN_OR_RETURN(c.vocab_size, get_int(j, "vocab_size", source, true));
  BRISK_ASSIGN_OR_RETURN(c.hidden_size, get_int(j, "hidden_size", source, true));
  BRISK_ASSIGN_OR_RETURN(c.num_hidden_layers, get_int(j, "num_hidden_layers", source, true));
  BRISK_ASSIGN_OR_RETURN(c.num_attention_heads, get_int(j, "num_attention_heads", source, true));
  BRISK_ASSIGN_OR_RETURN(c.intermediate_size, get_int(j, "intermediate_size", source, true));
  BRISK_ASSIGN_OR_RETURN(c.num_key_value_heads,
                         get_int(j, "num_key_value_heads", source, false, c.num_attention_heads));
  if (qwen3) {
    BRISK_ASSIGN_OR_RETURN(c.attention_head_dim, get_int(j, "head_dim", source, false, 128));
  } else if (c.num_attention_heads > 0) {
    c.attention_head_dim = c.hidden_size / c.num_attention_heads;
  }
  BRISK_ASSIGN_OR_RETURN(c.max_position_embeddings, get_int(j, "max_position_embeddings", source, false, 32768));
  BRISK_ASSIGN_OR_RETURN(c.layer_norm_eps, get_double(j, "rms_norm_eps", source, 1e-6));
  BRISK_ASSIGN_OR_RETURN(c.rope_theta, get_double(j, "rope_theta", source, 10000.0));
  BRISK_ASSIGN_OR_RETURN(c.hidden_act_name, get_string(j, "hidden_act", source, "silu"));
  if (c.hidden_act_name != "silu" && c.hidden_act_name != "swish") {
    return bad(source, absl::StrCat("key \"hidden_act\" is \"", c.hidden_act_name,
                                    "\"; expected \"silu\" (a SwiGLU feed-forward) for a ", c.model_type, " model"));
  }
  c.hidden_act = Activation::kSilu;
  c.attention_bias = !qwen3;  // Qwen2's Q, K and V always carry biases
  if (qwen3) {
    BRISK_ASSIGN_OR_RETURN(c.attention_bias, get_bool(j, "attention_bias", source));
  }
  c.type_vocab_size = 0;
  BRISK_ASSIGN_OR_RETURN(c.pad_token_id, get_int(j, "pad_token_id", source, false, 0));
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    return bad(source, absl::StrCat("key \"rope_scaling\" is ", describe_json(*it),
                                    "; brisk supports only unscaled rotary positions (null)"));
  }
  BRISK_ASSIGN_OR_RETURN(bool sliding, get_bool(j, "use_sliding_window", source));
  if (sliding) {
    return bad(source, "key \"use_sliding_window\" is true; brisk supports only full causal attention (false)");
  }
  return absl::OkStatus();
}

// pruned_heads: {"3": [0, 5]} as Hugging Face writes it (layer keys are strings in JSON).
Status parse_pruned_heads(const json& j, const std::string& source, BertConfig& c) {
  auto it = j.find("pruned_heads");
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_object()) {
    return bad(source, absl::StrCat("key \"pruned_heads\" is ", describe_json(*it),
                                    "; expected an object {\"<layer>\": [head, ...]}"));
  }
  for (const auto& [key, heads] : it->items()) {
    int64_t layer = -1;
    if (!absl::SimpleAtoi(key, &layer) || layer < 0 || layer >= c.num_hidden_layers) {
      return bad(source, absl::StrCat("pruned_heads has layer key \"", key, "\"; expected a layer number 0 to ",
                                      c.num_hidden_layers - 1));
    }
    if (!heads.is_array()) {
      return bad(source, absl::StrCat("pruned_heads[\"", key, "\"] is ", describe_json(heads),
                                      "; expected a list of head numbers"));
    }
    std::vector<int64_t>& list = c.pruned_heads[layer];
    for (const json& h : heads) {
      if (!h.is_number_integer() || h.get<int64_t>() < 0 || h.get<int64_t>() >= c.num_attention_heads) {
        return bad(source, absl::StrCat("pruned_heads[\"", key, "\"] holds ", describe_json(h),
                                        "; expected head numbers 0 to ", c.num_attention_heads - 1));
      }
      list.push_back(h.get<int64_t>());
    }
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    if (list.empty()) c.pruned_heads.erase(layer);
  }
  return absl::OkStatus();
}

Status parse_intermediate_sizes(const json& j, const std::string& source, BertConfig& c) {
  auto it = j.find("brisk_intermediate_sizes");
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_array() || static_cast<int64_t>(it->size()) != c.num_hidden_layers) {
    return bad(source, absl::StrCat("key \"brisk_intermediate_sizes\" is ", describe_json(*it), "; expected a list of ",
                                    c.num_hidden_layers, " feed-forward widths, one per layer"));
  }
  for (const json& v : *it) {
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > c.intermediate_size) {
      return bad(source, absl::StrCat("brisk_intermediate_sizes holds ", describe_json(v),
                                      "; expected widths 1 to intermediate_size ", c.intermediate_size));
    }
    c.intermediate_sizes.push_back(v.get<int64_t>());
  }
  return absl::OkStatus();
}

// The decoder families' invariants (BertConfig::validate calls it for them).
Status validate_decoder(const BertConfig& c, const std::string& source) {
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0) {
    return bad(source, absl::StrCat("key \"num_key_value_heads\" is ", c.num_key_value_heads,
                                    "; expected a positive divisor of num_attention_heads ", c.num_attention_heads));
  }
  if (c.attention_head_dim <= 0 || c.attention_head_dim % 2 != 0 || c.attention_head_dim > 4096) {
    return bad(source, absl::StrCat("the head dimension is ", c.attention_head_dim,
                                    "; expected an even number from 2 to 4096 (rotary positions turn pairs)"));
  }
  if (!(c.rope_theta > 1.0) || !std::isfinite(c.rope_theta)) {
    return bad(source, absl::StrCat("key \"rope_theta\" is ", c.rope_theta, "; expected a finite number above 1"));
  }
  if (c.is_pruned()) {
    return bad(source, absl::StrCat("a ", c.model_type, " model is pruned; brisk prunes BERT-family encoders only"));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t BertConfig::layer_heads(int64_t layer) const {
  auto it = pruned_heads.find(layer);
  return num_attention_heads - (it == pruned_heads.end() ? 0 : static_cast<int64_t>(it->second.size()));
}

int64_t BertConfig::layer_intermediate_size(int64_t layer) const {
  return intermediate_sizes.empty() ? intermediate_size : intermediate_sizes[static_cast<size_t>(layer)];
}

std::string_view activation_name(Activation act) {
  switch (act) {
    case Activation::kGelu: return "gelu";
    case Activation::kGeluTanh: return "gelu_tanh";
    case Activation::kRelu: return "relu";
    case Activation::kSilu: return "silu";
  }
  return "?";
}

std::string_view pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::kModelDefault: return "model-default";
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kMax: return "max";
    case Pooling::kLastToken: return "lasttoken";
  }
  return "?";
}

StatusOr<std::string> read_text_file(const std::string& path) {
  // Model text files (config.json, vocab.txt, tokenizer.json: 17 MB for XLM-RoBERTa's) are far below this.
  constexpr int64_t kMaxModelTextFileBytes = int64_t{512} << 20;
  return read_text_file_bounded(path, kMaxModelTextFileBytes, "model text file");
}

StatusOr<BertConfig> BertConfig::from_json_string(const std::string& text, const std::string& source) {
  BRISK_ASSIGN_OR_RETURN(json j, parse_object(text, source));
  BertConfig c;
  BRISK_ASSIGN_OR_RETURN(c.model_type, get_string(j, "model_type", source, "bert"));
  const bool roberta = c.model_type == "roberta" || c.model_type == "xlm-roberta";
  if (c.model_type == "bert" || roberta) {
    c.family = roberta ? ModelFamily::kRoberta : ModelFamily::kBert;
    BRISK_ASSIGN_OR_RETURN(c.vocab_size, get_int(j, "vocab_size", source, true));
    BRISK_ASSIGN_OR_RETURN(c.hidden_size, get_int(j, "hidden_size", source, true));
    BRISK_ASSIGN_OR_RETURN(c.num_hidden_layers, get_int(j, "num_hidden_layers", source, true));
    BRISK_ASSIGN_OR_RETURN(c.num_attention_heads, get_int(j, "num_attention_heads", source, true));
    BRISK_ASSIGN_OR_RETURN(c.intermediate_size, get_int(j, "intermediate_size", source, true));
    BRISK_ASSIGN_OR_RETURN(c.max_position_embeddings, get_int(j, "max_position_embeddings", source, false, 512));
    BRISK_ASSIGN_OR_RETURN(c.type_vocab_size, get_int(j, "type_vocab_size", source, false, roberta ? 1 : 2));
    BRISK_ASSIGN_OR_RETURN(c.layer_norm_eps, get_double(j, "layer_norm_eps", source, 1e-12));
    BRISK_ASSIGN_OR_RETURN(c.hidden_act_name, get_string(j, "hidden_act", source, "gelu"));
    BRISK_ASSIGN_OR_RETURN(c.hidden_act, parse_activation(c.hidden_act_name, "hidden_act", source));
    BRISK_ASSIGN_OR_RETURN(c.pad_token_id, get_int(j, "pad_token_id", source, false, roberta ? 1 : 0));
    BRISK_ASSIGN_OR_RETURN(std::string pos, get_string(j, "position_embedding_type", source, "absolute"));
    if (pos != "absolute") {
      return bad(source, absl::StrCat("key \"position_embedding_type\" is \"", pos,
                                      "\"; brisk supports only \"absolute\" position embeddings"));
    }
  } else if (c.model_type == "distilbert") {
    c.family = ModelFamily::kDistilBert;
    BRISK_ASSIGN_OR_RETURN(c.vocab_size, get_int(j, "vocab_size", source, true));
    BRISK_ASSIGN_OR_RETURN(c.hidden_size, get_int(j, "dim", source, true));
    BRISK_ASSIGN_OR_RETURN(c.num_hidden_layers, get_int(j, "n_layers", source, true));
    BRISK_ASSIGN_OR_RETURN(c.num_attention_heads, get_int(j, "n_heads", source, true));
    BRISK_ASSIGN_OR_RETURN(c.intermediate_size, get_int(j, "hidden_dim", source, true));
    BRISK_ASSIGN_OR_RETURN(c.max_position_embeddings, get_int(j, "max_position_embeddings", source, false, 512));
    c.type_vocab_size = 0;
    c.layer_norm_eps = 1e-12;  // fixed in DistilBERT's modeling code
    BRISK_ASSIGN_OR_RETURN(c.hidden_act_name, get_string(j, "activation", source, "gelu"));
    BRISK_ASSIGN_OR_RETURN(c.hidden_act, parse_activation(c.hidden_act_name, "activation", source));
    BRISK_ASSIGN_OR_RETURN(c.pad_token_id, get_int(j, "pad_token_id", source, false, 0));
  } else if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    BRISK_RETURN_IF_ERROR(parse_qwen(j, source, c));
  } else {
    return bad(source, absl::StrCat("key \"model_type\" is \"", c.model_type,
                                    "\"; brisk supports \"bert\" (BERT, MiniLM), \"distilbert\", \"roberta\", "
                                    "\"xlm-roberta\", \"qwen2\" and \"qwen3\""));
  }
  BRISK_RETURN_IF_ERROR(c.validate(source));
  BRISK_RETURN_IF_ERROR(parse_pruned_heads(j, source, c));
  BRISK_RETURN_IF_ERROR(parse_intermediate_sizes(j, source, c));
  BRISK_RETURN_IF_ERROR(c.validate(source));
  return c;
}

Status BertConfig::validate(const std::string& source) const {
  const bool distil = family == ModelFamily::kDistilBert;
  const struct {
    const char* key;
    int64_t value;
  } positive[] = {
      {"vocab_size", vocab_size},
      {distil ? "dim" : "hidden_size", hidden_size},
      {distil ? "n_layers" : "num_hidden_layers", num_hidden_layers},
      {distil ? "n_heads" : "num_attention_heads", num_attention_heads},
      {distil ? "hidden_dim" : "intermediate_size", intermediate_size},
      {"max_position_embeddings", max_position_embeddings},
  };
  for (const auto& p : positive) {
    if (p.value <= 0) {
      return bad(source, absl::StrCat("key \"", p.key, "\" is ", p.value, "; expected a positive integer"));
    }
  }
  // Sizes beyond these make no sense for an encoder and would overflow products of them later on.
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  for (const auto& p : positive) {
    if (p.value > kMaxDim) {
      return bad(source, absl::StrCat("key \"", p.key, "\" is ", p.value, "; expected at most ", kMaxDim));
    }
  }
  if (type_vocab_size < 0 || type_vocab_size > kMaxDim) {
    return bad(source, absl::StrCat("key \"type_vocab_size\" is ", type_vocab_size, "; expected 0 to ", kMaxDim));
  }
  if (!distil && !is_decoder() && type_vocab_size == 0) {
    return bad(source, "key \"type_vocab_size\" is 0; expected a positive integer for a bert model");
  }
  if (is_decoder()) {
    BRISK_RETURN_IF_ERROR(validate_decoder(*this, source));
  } else if (hidden_size % num_attention_heads != 0) {
    return bad(source, absl::StrCat(distil ? "dim" : "hidden_size", " ", hidden_size, " is not divisible by ",
                                    distil ? "n_heads" : "num_attention_heads", " ", num_attention_heads,
                                    "; expected hidden size = heads x head dimension"));
  }
  if (!(layer_norm_eps > 0.0) || layer_norm_eps > 1.0) {
    return bad(source,
               absl::StrCat("key \"layer_norm_eps\" is ", layer_norm_eps, "; expected a small positive number"));
  }
  if (position_offset() >= max_position_embeddings) {
    return bad(source, absl::StrCat("the first position (pad_token_id + 1 = ", position_offset(),
                                    ") is past max_position_embeddings ", max_position_embeddings,
                                    "; expected room for at least one token"));
  }
  if (pad_token_id < 0 || pad_token_id >= vocab_size) {
    return bad(source, absl::StrCat("key \"pad_token_id\" is ", pad_token_id, "; expected 0 <= pad_token_id < ",
                                    "vocab_size ", vocab_size));
  }
  // Every layer keeps a head: a layer without attention is removed instead (brisk::prune does so).
  for (const auto& [layer, heads] : pruned_heads) {
    if (layer < 0 || layer >= num_hidden_layers || static_cast<int64_t>(heads.size()) >= num_attention_heads) {
      return bad(source, absl::StrCat("pruned_heads prunes ", heads.size(), " of ", num_attention_heads,
                                      " heads of layer ", layer, "; expected a layer below ", num_hidden_layers,
                                      " that keeps at least one head (remove the whole layer instead)"));
    }
  }
  if (!intermediate_sizes.empty() && static_cast<int64_t>(intermediate_sizes.size()) != num_hidden_layers) {
    return bad(source, absl::StrCat("brisk_intermediate_sizes has ", intermediate_sizes.size(), " entries; expected ",
                                    num_hidden_layers, ", one per layer"));
  }
  for (int64_t width : intermediate_sizes) {
    if (width <= 0 || width > intermediate_size) {
      return bad(source, absl::StrCat("brisk_intermediate_sizes holds ", width, "; expected widths 1 to ",
                                      "intermediate_size ", intermediate_size));
    }
  }
  return absl::OkStatus();
}

StatusOr<BertConfig> BertConfig::from_json_file(const std::string& path) {
  BRISK_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  return from_json_string(text, path);
}

std::string BertConfig::summary() const {
  const std::string heads =
      is_decoder() ? absl::StrCat(" (", num_key_value_heads, " key/value, head_dim ", head_dim(), ")") : "";
  std::string out = absl::StrCat(model_type, ": ", num_hidden_layers, " layers, hidden ", hidden_size, ", ",
                                 num_attention_heads, " heads", heads, ", intermediate ", intermediate_size, ", vocab ",
                                 vocab_size, ", max positions ", max_position_embeddings, ", ", hidden_act_name);
  if (is_pruned()) {
    int64_t heads = 0, neurons = 0;
    for (int64_t l = 0; l < num_hidden_layers; ++l) {
      heads += layer_heads(l);
      neurons += layer_intermediate_size(l);
    }
    absl::StrAppend(&out, "; pruned: ", num_hidden_layers * num_attention_heads - heads, " of ",
                    num_hidden_layers * num_attention_heads, " heads, ",
                    num_hidden_layers * intermediate_size - neurons, " of ", num_hidden_layers * intermediate_size,
                    " ffn neurons");
  }
  return out;
}

StatusOr<PoolingConfig> PoolingConfig::from_json_string(const std::string& text, const std::string& source) {
  BRISK_ASSIGN_OR_RETURN(json j, parse_object(text, source));
  PoolingConfig p;
  BRISK_ASSIGN_OR_RETURN(p.word_embedding_dimension, get_int(j, "word_embedding_dimension", source, false, 0));
  BRISK_ASSIGN_OR_RETURN(bool mean, get_bool(j, "pooling_mode_mean_tokens", source));
  BRISK_ASSIGN_OR_RETURN(bool cls, get_bool(j, "pooling_mode_cls_token", source));
  BRISK_ASSIGN_OR_RETURN(bool max, get_bool(j, "pooling_mode_max_tokens", source));
  BRISK_ASSIGN_OR_RETURN(bool last, get_bool(j, "pooling_mode_lasttoken", source));
  for (const char* key : {"pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"}) {
    BRISK_ASSIGN_OR_RETURN(bool other, get_bool(j, key, source));
    if (other) {
      return bad(source,
                 absl::StrCat("key \"", key, "\" is true; brisk supports mean, cls, max and lasttoken pooling only"));
    }
  }
  const int count = int(mean) + int(cls) + int(max) + int(last);
  constexpr const char* kModes =
      "pooling_mode_mean_tokens, pooling_mode_cls_token, pooling_mode_max_tokens, pooling_mode_lasttoken";
  if (count > 1) {
    return bad(source, absl::StrCat("more than one of ", kModes,
                                    " is true; expected exactly one (concatenated poolings are not supported)"));
  }
  if (count == 0) return bad(source, absl::StrCat("none of ", kModes, " is true; expected exactly one"));
  p.mode = mean ? Pooling::kMean : cls ? Pooling::kCls : max ? Pooling::kMax : Pooling::kLastToken;
  BRISK_ASSIGN_OR_RETURN(bool include_prompt, get_bool(j, "include_prompt", source, true));
  if (!include_prompt && !last) {
    return bad(source, absl::StrCat("key \"include_prompt\" is false with ", std::string(pooling_name(p.mode)),
                                    " pooling; brisk pools over the prompt's tokens too (expected true, or "
                                    "lasttoken pooling, which the prompt does not change)"));
  }
  if (p.word_embedding_dimension < 0) {
    return bad(source, absl::StrCat("key \"word_embedding_dimension\" is ", p.word_embedding_dimension,
                                    "; expected a positive integer"));
  }
  return p;
}

namespace {

constexpr char kModulePrefix[] = "sentence_transformers.models.";

// A module's "path" relative to the model directory, lexically normalised. Checked after normalisation, so that
// "a/../../etc" is caught as well as "/etc" and "../etc"; symlinks inside the directory are the model author's choice.
StatusOr<std::filesystem::path> module_dir(const std::string& rel, const std::string& module,
                                           const std::string& source) {
  const std::filesystem::path norm = std::filesystem::path(rel).lexically_normal();
  if (norm.has_root_path() || (!norm.empty() && *norm.begin() == "..")) {
    return bad(source, absl::StrCat("module ", module, " has path ", json(rel).dump(), "; expected a path inside ",
                                    "the model directory"));
  }
  return norm;
}

// modules.json: the sentence-transformers pipeline. brisk runs Transformer, Pooling and Normalize; any other
// module changes the embeddings, so a model that lists one is refused rather than embedded without it.
// `pooling_dir` receives the Pooling module's path relative to the model directory.
Status read_modules(const ModelFileSource& src, const std::string& source, const std::string& text,
                    std::filesystem::path& pooling_dir, bool& normalize) {
  BRISK_ASSIGN_OR_RETURN(json modules, parse_json_bounded(text, source));
  if (!modules.is_array()) {
    return bad(source, "is not a JSON array; expected sentence-transformers' list of modules");
  }
  int poolings = 0;
  for (size_t i = 0; i < modules.size(); ++i) {
    const json& m = modules[i];
    const std::string entry = absl::StrCat("entry ", i);
    if (!m.is_object()) {
      return bad(source, absl::StrCat(entry, " is ", describe_json(m), " (a JSON ", m.type_name(),
                                      "); expected an object with \"type\" and \"path\""));
    }
    const std::string where = absl::StrCat(source, " ", entry);
    BRISK_ASSIGN_OR_RETURN(std::string type, get_string(m, "type", where, ""));
    BRISK_ASSIGN_OR_RETURN(std::string path, get_string(m, "path", where, ""));
    BRISK_ASSIGN_OR_RETURN(std::string name, get_string(m, "name", where, std::to_string(i)));
    BRISK_RETURN_IF_ERROR(get_int(m, "idx", where, false).status());
    const std::string module = absl::StrCat(json(name).dump(), " (", json(type).dump(), ")");
    BRISK_ASSIGN_OR_RETURN(std::filesystem::path module_path, module_dir(path, module, source));
    const std::string_view kind = std::string_view(type).starts_with(kModulePrefix)
                                      ? std::string_view(type).substr(sizeof(kModulePrefix) - 1)
                                      : std::string_view();
    if (kind == "Transformer") continue;
    if (kind == "Pooling") {
      pooling_dir = module_path;
      ++poolings;
    } else if (kind == "Normalize") {
      normalize = true;
    } else if (kind == "Dense") {
      return bad(source, absl::StrCat("module ", module, " at ", src.path(module_path.string()),
                                      " is a Dense layer, which brisk does not run (the embeddings would be wrong "
                                      "without it); expected only Transformer, Pooling and Normalize modules"));
    } else {
      return bad(source, absl::StrCat("module ", module, " has an unsupported type; expected ", kModulePrefix,
                                      "Transformer, Pooling or Normalize"));
    }
  }
  if (poolings != 1) {
    return bad(source, absl::StrCat("lists ", poolings, " Pooling modules; expected exactly one"));
  }
  return absl::OkStatus();
}

// config_sentence_transformers.json's prompts by name (none when the file or its "prompts" is absent); each must be a
// string.
StatusOr<std::map<std::string, std::string>> read_prompts(const ModelFileSource& src) {
  constexpr const char* kFile = "config_sentence_transformers.json";
  std::map<std::string, std::string> out;
  StatusOr<std::string> text = src.read(kFile);
  if (!text.ok())
    return absl::IsNotFound(text.status()) ? StatusOr<std::map<std::string, std::string>>(out) : text.status();
  const std::string path = src.path(kFile);
  BRISK_ASSIGN_OR_RETURN(json st, parse_object(*text, path));
  auto prompts = st.find("prompts");
  if (prompts == st.end() || prompts->is_null()) return out;
  if (!prompts->is_object()) {
    return bad(path, absl::StrCat("key \"prompts\" is ", describe_json(*prompts),
                                  "; expected an object of prompt names to strings"));
  }
  for (const auto& [name, value] : prompts->items()) {
    BRISK_ASSIGN_OR_RETURN(out[name], get_string(*prompts, name, path + " prompts", ""));
  }
  return out;
}

}  // namespace

StatusOr<std::string> ModelFileSource::read(const std::string& rel) const {
  if (!in_memory()) return read_text_file(path(rel));
  auto it = files_->find(normal_key(rel));
  if (it == files_->end()) return absl::NotFoundError(absl::StrCat(path(rel), ": file not found"));
  return it->second;
}

StatusOr<PoolingConfig> read_pooling_config_from(const ModelFileSource& src, std::string* pooling_config_rel) {
  PoolingConfig pooling;
  std::filesystem::path pooling_dir = "1_Pooling";  // where sentence-transformers puts it without modules.json
  const std::string modules_path = src.path("modules.json");
  StatusOr<std::string> modules_text = src.read("modules.json");
  if (modules_text.ok()) {
    BRISK_RETURN_IF_ERROR(read_modules(src, modules_path, *modules_text, pooling_dir, pooling.normalize));
  } else if (!absl::IsNotFound(modules_text.status())) {
    return modules_text.status();
  }

  const std::string pooling_rel = (pooling_dir / "config.json").string();
  const std::string pooling_path = src.path(pooling_rel);
  if (pooling_config_rel != nullptr) pooling_config_rel->clear();
  StatusOr<std::string> text = src.read(pooling_rel);
  if (text.ok()) {
    const bool normalize = pooling.normalize;
    BRISK_ASSIGN_OR_RETURN(pooling, PoolingConfig::from_json_string(*text, pooling_path));
    pooling.normalize = normalize;
    pooling.config_path = pooling_path;
    if (pooling_config_rel != nullptr) *pooling_config_rel = ModelFileSource::normal_key(pooling_rel);
  } else if (!absl::IsNotFound(text.status())) {
    return text.status();
  }

  const std::string st_path = src.path("sentence_bert_config.json");
  StatusOr<std::string> st_text = src.read("sentence_bert_config.json");
  if (st_text.ok()) {
    BRISK_ASSIGN_OR_RETURN(json st, parse_object(*st_text, st_path));
    BRISK_ASSIGN_OR_RETURN(pooling.max_seq_length, get_int(st, "max_seq_length", st_path, false, 0));
    if (pooling.max_seq_length < 0) {
      return bad(st_path,
                 absl::StrCat("key \"max_seq_length\" is ", pooling.max_seq_length, "; expected a positive integer"));
    }
  } else if (!absl::IsNotFound(st_text.status())) {
    return st_text.status();
  }
  BRISK_ASSIGN_OR_RETURN(pooling.prompts, read_prompts(src));
  if (auto q = pooling.prompts.find("query"); q != pooling.prompts.end()) pooling.query_prompt = q->second;
  return pooling;
}

StatusOr<PoolingConfig> read_pooling_config(const std::string& model_dir) {
  return read_pooling_config_from(ModelFileSource::directory(model_dir));
}

StatusOr<PoolingConfig> read_pooling_config_from_files(const std::map<std::string, std::string>& files,
                                                       std::string_view source) {
  return read_pooling_config_from(ModelFileSource::memory(files, source));
}

StatusOr<std::map<std::string, std::string>> read_model_files(const std::string& model_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(model_dir, ec)) {
    return absl::NotFoundError(absl::StrCat("model directory \"", model_dir,
                                            "\" is not a directory; expected a Hugging Face model directory"));
  }
  const ModelFileSource src = ModelFileSource::directory(model_dir);
  std::map<std::string, std::string> files;
  BRISK_ASSIGN_OR_RETURN(files["config.json"], read_text_file(src.path("config.json")));
  for (const char* name : {"tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
                           "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"}) {
    if (src.exists(name)) {
      BRISK_ASSIGN_OR_RETURN(files[name], src.read(name));
    }
  }
  if (files.count("tokenizer.json") == 0 && files.count("vocab.txt") == 0) {
    return absl::NotFoundError(absl::StrCat(src.description(),
                                            " has neither tokenizer.json nor vocab.txt; expected one of them (the "
                                            "quantized model file carries the tokenizer)"));
  }
  std::string pooling_rel;
  BRISK_RETURN_IF_ERROR(read_pooling_config_from(src, &pooling_rel).status());
  if (!pooling_rel.empty()) {
    BRISK_ASSIGN_OR_RETURN(files[pooling_rel], src.read(pooling_rel));
  }
  return files;
}

}  // namespace brisk
