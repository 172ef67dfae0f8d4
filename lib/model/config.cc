// BertConfig parsing (config.json). See include/brisk/model/config.h.
#include "brisk/model/config.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "brisk/core/internal/bounded_input.h"
#include "json_describe.h"
#include "json_fields.h"
#include "nlohmann/json.hpp"

namespace brisk {

namespace {

using nlohmann::json;

StatusOr<Activation> parse_activation(const std::string& name, const std::string& key, const std::string& source) {
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  return json_field_error(source,
                          absl::StrCat("key \"", key, "\" is \"", name,
                                       "\"; expected one of gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu"));
}

// Qwen2 / Qwen3 (transformers' Qwen2Config and Qwen3Config defaults where a key is absent).
Status parse_qwen(const json& j, const std::string& source, BertConfig& c) {
  const bool qwen3 = c.model_type == "qwen3";
  c.family = qwen3 ? ModelFamily::kQwen3 : ModelFamily::kQwen2;
  BRISK_ASSIGN_OR_RETURN(c.vocab_size, json_int_field(j, "vocab_size", source, true));
  BRISK_ASSIGN_OR_RETURN(c.hidden_size, json_int_field(j, "hidden_size", source, true));
  BRISK_ASSIGN_OR_RETURN(c.num_hidden_layers, json_int_field(j, "num_hidden_layers", source, true));
  BRISK_ASSIGN_OR_RETURN(c.num_attention_heads, json_int_field(j, "num_attention_heads", source, true));
  BRISK_ASSIGN_OR_RETURN(c.intermediate_size, json_int_field(j, "intermediate_size", source, true));
  BRISK_ASSIGN_OR_RETURN(c.num_key_value_heads,
                         json_int_field(j, "num_key_value_heads", source, false, c.num_attention_heads));
  if (qwen3) {
    BRISK_ASSIGN_OR_RETURN(c.attention_head_dim, json_int_field(j, "head_dim", source, false, 128));
  } else if (c.num_attention_heads > 0) {
    c.attention_head_dim = c.hidden_size / c.num_attention_heads;
  }
  BRISK_ASSIGN_OR_RETURN(c.max_position_embeddings, json_int_field(j, "max_position_embeddings", source, false, 32768));
  BRISK_ASSIGN_OR_RETURN(c.layer_norm_eps, json_double_field(j, "rms_norm_eps", source, 1e-6));
  BRISK_ASSIGN_OR_RETURN(c.rope_theta, json_double_field(j, "rope_theta", source, 10000.0));
  BRISK_ASSIGN_OR_RETURN(c.hidden_act_name, json_string_field(j, "hidden_act", source, "silu"));
  if (c.hidden_act_name != "silu" && c.hidden_act_name != "swish") {
    return json_field_error(
        source, absl::StrCat("key \"hidden_act\" is \"", c.hidden_act_name,
                             "\"; expected \"silu\" (a SwiGLU feed-forward) for a ", c.model_type, " model"));
  }
  c.hidden_act = Activation::kSilu;
  c.attention_bias = !qwen3;  // Qwen2's Q, K and V always carry biases
  if (qwen3) {
    BRISK_ASSIGN_OR_RETURN(c.attention_bias, json_bool_field(j, "attention_bias", source));
  }
  c.type_vocab_size = 0;
  BRISK_ASSIGN_OR_RETURN(c.pad_token_id, json_int_field(j, "pad_token_id", source, false, 0));
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    return json_field_error(source, absl::StrCat("key \"rope_scaling\" is ", describe_json(*it),
                                                 "; brisk supports only unscaled rotary positions (null)"));
  }
  BRISK_ASSIGN_OR_RETURN(bool sliding, json_bool_field(j, "use_sliding_window", source));
  if (sliding) {
    return json_field_error(source,
                            "key \"use_sliding_window\" is true; brisk supports only full causal attention (false)");
  }
  return absl::OkStatus();
}

// pruned_heads: {"3": [0, 5]} as Hugging Face writes it (layer keys are strings in JSON).
Status parse_pruned_heads(const json& j, const std::string& source, BertConfig& c) {
  auto it = j.find("pruned_heads");
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_object()) {
    return json_field_error(source, absl::StrCat("key \"pruned_heads\" is ", describe_json(*it),
                                                 "; expected an object {\"<layer>\": [head, ...]}"));
  }
  for (const auto& [key, heads] : it->items()) {
    int64_t layer = -1;
    if (!absl::SimpleAtoi(key, &layer) || layer < 0 || layer >= c.num_hidden_layers) {
      return json_field_error(source, absl::StrCat("pruned_heads has layer key \"", key,
                                                   "\"; expected a layer number 0 to ", c.num_hidden_layers - 1));
    }
    if (!heads.is_array()) {
      return json_field_error(source, absl::StrCat("pruned_heads[\"", key, "\"] is ", describe_json(heads),
                                                   "; expected a list of head numbers"));
    }
    std::vector<int64_t>& list = c.pruned_heads[layer];
    for (const json& h : heads) {
      if (!h.is_number_integer() || h.get<int64_t>() < 0 || h.get<int64_t>() >= c.num_attention_heads) {
        return json_field_error(source, absl::StrCat("pruned_heads[\"", key, "\"] holds ", describe_json(h),
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
    return json_field_error(
        source, absl::StrCat("key \"brisk_intermediate_sizes\" is ", describe_json(*it), "; expected a list of ",
                             c.num_hidden_layers, " feed-forward widths, one per layer"));
  }
  for (const json& v : *it) {
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > c.intermediate_size) {
      return json_field_error(source, absl::StrCat("brisk_intermediate_sizes holds ", describe_json(v),
                                                   "; expected widths 1 to intermediate_size ", c.intermediate_size));
    }
    c.intermediate_sizes.push_back(v.get<int64_t>());
  }
  return absl::OkStatus();
}

// The decoder families' invariants (BertConfig::validate calls it for them).
Status validate_decoder(const BertConfig& c, const std::string& source) {
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0) {
    return json_field_error(
        source, absl::StrCat("key \"num_key_value_heads\" is ", c.num_key_value_heads,
                             "; expected a positive divisor of num_attention_heads ", c.num_attention_heads));
  }
  if (c.attention_head_dim <= 0 || c.attention_head_dim % 2 != 0 || c.attention_head_dim > 4096) {
    return json_field_error(source,
                            absl::StrCat("the head dimension is ", c.attention_head_dim,
                                         "; expected an even number from 2 to 4096 (rotary positions turn pairs)"));
  }
  if (!(c.rope_theta > 1.0) || !std::isfinite(c.rope_theta)) {
    return json_field_error(source,
                            absl::StrCat("key \"rope_theta\" is ", c.rope_theta, "; expected a finite number above 1"));
  }
  if (c.is_pruned()) {
    return json_field_error(
        source, absl::StrCat("a ", c.model_type, " model is pruned; brisk prunes BERT-family encoders only"));
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
  BRISK_ASSIGN_OR_RETURN(json j, parse_json_object(text, source));
  BertConfig c;
  BRISK_ASSIGN_OR_RETURN(c.model_type, json_string_field(j, "model_type", source, "bert"));
  const bool roberta = c.model_type == "roberta" || c.model_type == "xlm-roberta";
  if (c.model_type == "bert" || roberta) {
    c.family = roberta ? ModelFamily::kRoberta : ModelFamily::kBert;
    BRISK_ASSIGN_OR_RETURN(c.vocab_size, json_int_field(j, "vocab_size", source, true));
    BRISK_ASSIGN_OR_RETURN(c.hidden_size, json_int_field(j, "hidden_size", source, true));
    BRISK_ASSIGN_OR_RETURN(c.num_hidden_layers, json_int_field(j, "num_hidden_layers", source, true));
    BRISK_ASSIGN_OR_RETURN(c.num_attention_heads, json_int_field(j, "num_attention_heads", source, true));
    BRISK_ASSIGN_OR_RETURN(c.intermediate_size, json_int_field(j, "intermediate_size", source, true));
    BRISK_ASSIGN_OR_RETURN(c.max_position_embeddings, json_int_field(j, "max_position_embeddings", source, false, 512));
    BRISK_ASSIGN_OR_RETURN(c.type_vocab_size, json_int_field(j, "type_vocab_size", source, false, roberta ? 1 : 2));
    BRISK_ASSIGN_OR_RETURN(c.layer_norm_eps, json_double_field(j, "layer_norm_eps", source, 1e-12));
    BRISK_ASSIGN_OR_RETURN(c.hidden_act_name, json_string_field(j, "hidden_act", source, "gelu"));
    BRISK_ASSIGN_OR_RETURN(c.hidden_act, parse_activation(c.hidden_act_name, "hidden_act", source));
    BRISK_ASSIGN_OR_RETURN(c.pad_token_id, json_int_field(j, "pad_token_id", source, false, roberta ? 1 : 0));
    BRISK_ASSIGN_OR_RETURN(std::string pos, json_string_field(j, "position_embedding_type", source, "absolute"));
    if (pos != "absolute") {
      return json_field_error(source, absl::StrCat("key \"position_embedding_type\" is \"", pos,
                                                   "\"; brisk supports only \"absolute\" position embeddings"));
    }
  } else if (c.model_type == "distilbert") {
    c.family = ModelFamily::kDistilBert;
    BRISK_ASSIGN_OR_RETURN(c.vocab_size, json_int_field(j, "vocab_size", source, true));
    BRISK_ASSIGN_OR_RETURN(c.hidden_size, json_int_field(j, "dim", source, true));
    BRISK_ASSIGN_OR_RETURN(c.num_hidden_layers, json_int_field(j, "n_layers", source, true));
    BRISK_ASSIGN_OR_RETURN(c.num_attention_heads, json_int_field(j, "n_heads", source, true));
    BRISK_ASSIGN_OR_RETURN(c.intermediate_size, json_int_field(j, "hidden_dim", source, true));
    BRISK_ASSIGN_OR_RETURN(c.max_position_embeddings, json_int_field(j, "max_position_embeddings", source, false, 512));
    c.type_vocab_size = 0;
    c.layer_norm_eps = 1e-12;  // fixed in DistilBERT's modeling code
    BRISK_ASSIGN_OR_RETURN(c.hidden_act_name, json_string_field(j, "activation", source, "gelu"));
    BRISK_ASSIGN_OR_RETURN(c.hidden_act, parse_activation(c.hidden_act_name, "activation", source));
    BRISK_ASSIGN_OR_RETURN(c.pad_token_id, json_int_field(j, "pad_token_id", source, false, 0));
  } else if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    BRISK_RETURN_IF_ERROR(parse_qwen(j, source, c));
  } else {
    return json_field_error(source,
                            absl::StrCat("key \"model_type\" is \"", c.model_type,
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
      return json_field_error(source,
                              absl::StrCat("key \"", p.key, "\" is ", p.value, "; expected a positive integer"));
    }
  }
  // Sizes beyond these make no sense for an encoder and would overflow products of them later on.
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  for (const auto& p : positive) {
    if (p.value > kMaxDim) {
      return json_field_error(source, absl::StrCat("key \"", p.key, "\" is ", p.value, "; expected at most ", kMaxDim));
    }
  }
  if (type_vocab_size < 0 || type_vocab_size > kMaxDim) {
    return json_field_error(source,
                            absl::StrCat("key \"type_vocab_size\" is ", type_vocab_size, "; expected 0 to ", kMaxDim));
  }
  if (!distil && !is_decoder() && type_vocab_size == 0) {
    return json_field_error(source, "key \"type_vocab_size\" is 0; expected a positive integer for a bert model");
  }
  if (is_decoder()) {
    BRISK_RETURN_IF_ERROR(validate_decoder(*this, source));
  } else if (hidden_size % num_attention_heads != 0) {
    return json_field_error(source,
                            absl::StrCat(distil ? "dim" : "hidden_size", " ", hidden_size, " is not divisible by ",
                                         distil ? "n_heads" : "num_attention_heads", " ", num_attention_heads,
                                         "; expected hidden size = heads x head dimension"));
  }
  if (!(layer_norm_eps > 0.0) || layer_norm_eps > 1.0) {
    return json_field_error(
        source, absl::StrCat("key \"layer_norm_eps\" is ", layer_norm_eps, "; expected a small positive number"));
  }
  if (position_offset() >= max_position_embeddings) {
    return json_field_error(source, absl::StrCat("the first position (pad_token_id + 1 = ", position_offset(),
                                                 ") is past max_position_embeddings ", max_position_embeddings,
                                                 "; expected room for at least one token"));
  }
  if (pad_token_id < 0 || pad_token_id >= vocab_size) {
    return json_field_error(source, absl::StrCat("key \"pad_token_id\" is ", pad_token_id,
                                                 "; expected 0 <= pad_token_id < ", "vocab_size ", vocab_size));
  }
  // Every layer keeps a head: a layer without attention is removed instead (brisk::prune does so).
  for (const auto& [layer, heads] : pruned_heads) {
    if (layer < 0 || layer >= num_hidden_layers || static_cast<int64_t>(heads.size()) >= num_attention_heads) {
      return json_field_error(
          source, absl::StrCat("pruned_heads prunes ", heads.size(), " of ", num_attention_heads, " heads of layer ",
                               layer, "; expected a layer below ", num_hidden_layers,
                               " that keeps at least one head (remove the whole layer instead)"));
    }
  }
  if (!intermediate_sizes.empty() && static_cast<int64_t>(intermediate_sizes.size()) != num_hidden_layers) {
    return json_field_error(source, absl::StrCat("brisk_intermediate_sizes has ", intermediate_sizes.size(),
                                                 " entries; expected ", num_hidden_layers, ", one per layer"));
  }
  for (int64_t width : intermediate_sizes) {
    if (width <= 0 || width > intermediate_size) {
      return json_field_error(source, absl::StrCat("brisk_intermediate_sizes holds ", width, "; expected widths 1 to ",
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

}  // namespace brisk
