// EncoderWeights loading and name mapping. See include/brisk/model/weights.h.
#include "brisk/model/weights.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "brisk/core/half.h"
#include "brisk/model/safetensors.h"

namespace brisk {

namespace {

std::string display_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  return name.empty() ? path : name;
}

std::string shape_str(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

// Where a family's tensors live, relative to the model prefix.
struct NameScheme {
  const char* anchor;  // the tensor whose name reveals the prefix
  std::vector<const char*> default_prefixes;
};

const NameScheme& scheme_for(ModelFamily family) {
  static const NameScheme bert{"embeddings.word_embeddings.weight", {"", "bert."}};
  static const NameScheme distil{"embeddings.word_embeddings.weight", {"", "distilbert."}};
  static const NameScheme roberta{"embeddings.word_embeddings.weight", {"", "roberta."}};
  static const NameScheme qwen{"embed_tokens.weight", {"", "model."}};
  if (family == ModelFamily::kRoberta) return roberta;
  if (is_decoder_family(family)) return qwen;
  return family == ModelFamily::kDistilBert ? distil : bert;
}

class Resolver {
 public:
  Resolver(const NamedTensors& tensors, const BertConfig& config, std::string source)
      : tensors_(tensors), config_(config), source_(std::move(source)) {}

  // Finds the prefix in front of the anchor tensor ("" / "bert." / "distilbert." / "0.auto_model." ...).
  Status find_prefix() {
    const NameScheme& scheme = scheme_for(config_.family);
    for (const char* p : scheme.default_prefixes) {
      if (tensors_.count(absl::StrCat(p, scheme.anchor)) != 0) {
        prefix_ = p;
        return absl::OkStatus();
      }
    }
    std::vector<std::string> candidates;
    for (const auto& [name, t] : tensors_) {
      if (absl::EndsWith(name, absl::StrCat(".", scheme.anchor))) {
        candidates.push_back(name.substr(0, name.size() - std::strlen(scheme.anchor)));
      }
    }
    if (candidates.size() == 1) {
      prefix_ = candidates[0];
      return absl::OkStatus();
    }
    if (candidates.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ": found '", scheme.anchor, "' under several prefixes (",
                                                     absl::StrJoin(candidates, ", "),
                                                     "); expected one encoder per checkpoint"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        source_, ": no tensor named '", scheme.anchor, "' (with or without a", " model prefix such as 'bert.') among ",
        tensors_.size(), " tensors; expected a ", config_.model_type, " checkpoint", family_hint()));
  }

  // Looks a tensor up under its names (first is the canonical one), checks shape and dtype, converts to f32.
  Status take(Tensor& out, std::initializer_list<std::string> names, const std::vector<int64_t>& expected,
              const char* expected_why) {
    const Tensor* found = nullptr;
    std::string found_name;
    for (const std::string& n : names) {
      auto it = tensors_.find(prefix_ + n);
      if (it != tensors_.end()) {
        found = &it->second;
        found_name = it->first;
        break;
      }
    }
    if (found == nullptr) {
      std::vector<std::string> tried;
      for (const std::string& n : names) tried.push_back(absl::StrCat("'", prefix_, n, "'"));
      return absl::InvalidArgumentError(absl::StrCat(source_, ": missing tensor ", absl::StrJoin(tried, " or "),
                                                     "; expected shape ", shape_str(expected), " (", expected_why,
                                                     ") for ", config_.summary(), family_hint()));
    }
    if (found->shape() != expected) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ": tensor '", found_name, "' has shape ",
                                                     found->shape_string(), "; expected ", shape_str(expected), " (",
                                                     expected_why, ") from the config"));
    }
    if (found->dtype() != DType::kF32 && found->dtype() != DType::kF16 && found->dtype() != DType::kBF16) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ": tensor '", found_name, "' has dtype ",
                                                     dtype_name(found->dtype()),
                                                     "; expected a floating-point tensor (f32, f16 or bf16)"));
    }
    StatusOr<Tensor> f32 = to_float32(*found);
    if (!f32.ok()) {
      return absl::Status(f32.status().code(),
                          absl::StrCat(source_, ": tensor '", found_name, "': ", f32.status().message()));
    }
    out = *std::move(f32);
    num_parameters_ += out.numel();
    return absl::OkStatus();
  }

  // Fails when the checkpoint holds more layers than the config declares (a config/checkpoint mismatch).
  Status check_no_extra_layer(const std::string& layer_stem) const {
    const std::string extra = absl::StrCat(prefix_, layer_stem, config_.num_hidden_layers, ".");
    auto it = tensors_.lower_bound(extra);
    if (it != tensors_.end() && absl::StartsWith(it->first, extra)) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ": has tensor '", it->first, "' but the config declares ",
                                                     config_.num_hidden_layers, " layers; expected layers 0 to ",
                                                     config_.num_hidden_layers - 1,
                                                     " only (config.json does not match the weights)"));
    }
    return absl::OkStatus();
  }

  int64_t num_parameters() const { return num_parameters_; }

 private:
  // Explains the common mistake of a config.json whose model_type does not match the weights.
  std::string family_hint() const {
    if (config_.family == ModelFamily::kBert && has_name_containing("transformer.layer.0.attention.q_lin")) {
      return " (the checkpoint looks like DistilBERT; check model_type in config.json)";
    }
    if (config_.family == ModelFamily::kDistilBert && has_name_containing("encoder.layer.0.attention.self.query")) {
      return " (the checkpoint looks like BERT; check model_type in config.json)";
    }
    return "";
  }

  bool has_name_containing(const std::string& part) const {
    for (const auto& [name, t] : tensors_) {
      if (absl::StrContains(name, part)) return true;
    }
    return false;
  }

  const NamedTensors& tensors_;
  const BertConfig& config_;
  std::string source_;
  std::string prefix_;
  int64_t num_parameters_ = 0;
};

Status load_bert(Resolver& r, const BertConfig& c, EncoderWeights& w) {
  const int64_t h = c.hidden_size;
  EmbeddingWeights& e = w.embeddings;
  BRISK_RETURN_IF_ERROR(
      r.take(e.word, {"embeddings.word_embeddings.weight"}, {c.vocab_size, h}, "vocab_size x hidden"));
  BRISK_RETURN_IF_ERROR(r.take(e.position, {"embeddings.position_embeddings.weight"}, {c.max_position_embeddings, h},
                               "max_position_embeddings x hidden"));
  BRISK_RETURN_IF_ERROR(r.take(e.token_type, {"embeddings.token_type_embeddings.weight"}, {c.type_vocab_size, h},
                               "type_vocab_size x hidden"));
  BRISK_RETURN_IF_ERROR(
      r.take(e.ln_gamma, {"embeddings.LayerNorm.weight", "embeddings.LayerNorm.gamma"}, {h}, "hidden"));
  BRISK_RETURN_IF_ERROR(r.take(e.ln_beta, {"embeddings.LayerNorm.bias", "embeddings.LayerNorm.beta"}, {h}, "hidden"));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = absl::StrCat("encoder.layer.", i, ".");
    EncoderLayerWeights& l = w.layers[static_cast<size_t>(i)];
    // a: the attention width (heads kept x head_dim); inter: the feed-forward width (see BertConfig's pruning keys)
    const int64_t a = c.layer_heads(i) * c.head_dim(), inter = c.layer_intermediate_size(i);
    BRISK_RETURN_IF_ERROR(r.take(l.q_weight, {p + "attention.self.query.weight"}, {a, h}, "heads x hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.q_bias, {p + "attention.self.query.bias"}, {a}, "heads"));
    BRISK_RETURN_IF_ERROR(r.take(l.k_weight, {p + "attention.self.key.weight"}, {a, h}, "heads x hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.k_bias, {p + "attention.self.key.bias"}, {a}, "heads"));
    BRISK_RETURN_IF_ERROR(r.take(l.v_weight, {p + "attention.self.value.weight"}, {a, h}, "heads x hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.v_bias, {p + "attention.self.value.bias"}, {a}, "heads"));
    BRISK_RETURN_IF_ERROR(
        r.take(l.attention_output_weight, {p + "attention.output.dense.weight"}, {h, a}, "hidden x heads"));
    BRISK_RETURN_IF_ERROR(r.take(l.attention_output_bias, {p + "attention.output.dense.bias"}, {h}, "hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.attention_ln_gamma,
                                 {p + "attention.output.LayerNorm.weight", p + "attention.output.LayerNorm.gamma"}, {h},
                                 "hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.attention_ln_beta,
                                 {p + "attention.output.LayerNorm.bias", p + "attention.output.LayerNorm.beta"}, {h},
                                 "hidden"));
    BRISK_RETURN_IF_ERROR(
        r.take(l.intermediate_weight, {p + "intermediate.dense.weight"}, {inter, h}, "intermediate x hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.intermediate_bias, {p + "intermediate.dense.bias"}, {inter}, "intermediate"));
    BRISK_RETURN_IF_ERROR(r.take(l.output_weight, {p + "output.dense.weight"}, {h, inter}, "hidden x intermediate"));
    BRISK_RETURN_IF_ERROR(r.take(l.output_bias, {p + "output.dense.bias"}, {h}, "hidden"));
    BRISK_RETURN_IF_ERROR(
        r.take(l.output_ln_gamma, {p + "output.LayerNorm.weight", p + "output.LayerNorm.gamma"}, {h}, "hidden"));
    BRISK_RETURN_IF_ERROR(
        r.take(l.output_ln_beta, {p + "output.LayerNorm.bias", p + "output.LayerNorm.beta"}, {h}, "hidden"));
  }
  return r.check_no_extra_layer("encoder.layer.");
}

Status load_distilbert(Resolver& r, const BertConfig& c, EncoderWeights& w) {
  const int64_t h = c.hidden_size;
  EmbeddingWeights& e = w.embeddings;
  BRISK_RETURN_IF_ERROR(r.take(e.word, {"embeddings.word_embeddings.weight"}, {c.vocab_size, h}, "vocab_size x dim"));
  BRISK_RETURN_IF_ERROR(r.take(e.position, {"embeddings.position_embeddings.weight"}, {c.max_position_embeddings, h},
                               "max_position_embeddings x dim"));
  BRISK_RETURN_IF_ERROR(r.take(e.ln_gamma, {"embeddings.LayerNorm.weight", "embeddings.LayerNorm.gamma"}, {h}, "dim"));
  BRISK_RETURN_IF_ERROR(r.take(e.ln_beta, {"embeddings.LayerNorm.bias", "embeddings.LayerNorm.beta"}, {h}, "dim"));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = absl::StrCat("transformer.layer.", i, ".");
    EncoderLayerWeights& l = w.layers[static_cast<size_t>(i)];
    const int64_t a = c.layer_heads(i) * c.head_dim(), inter = c.layer_intermediate_size(i);
    BRISK_RETURN_IF_ERROR(r.take(l.q_weight, {p + "attention.q_lin.weight"}, {a, h}, "heads x dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.q_bias, {p + "attention.q_lin.bias"}, {a}, "heads"));
    BRISK_RETURN_IF_ERROR(r.take(l.k_weight, {p + "attention.k_lin.weight"}, {a, h}, "heads x dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.k_bias, {p + "attention.k_lin.bias"}, {a}, "heads"));
    BRISK_RETURN_IF_ERROR(r.take(l.v_weight, {p + "attention.v_lin.weight"}, {a, h}, "heads x dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.v_bias, {p + "attention.v_lin.bias"}, {a}, "heads"));
    BRISK_RETURN_IF_ERROR(r.take(l.attention_output_weight, {p + "attention.out_lin.weight"}, {h, a}, "dim x heads"));
    BRISK_RETURN_IF_ERROR(r.take(l.attention_output_bias, {p + "attention.out_lin.bias"}, {h}, "dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.attention_ln_gamma, {p + "sa_layer_norm.weight"}, {h}, "dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.attention_ln_beta, {p + "sa_layer_norm.bias"}, {h}, "dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.intermediate_weight, {p + "ffn.lin1.weight"}, {inter, h}, "hidden_dim x dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.intermediate_bias, {p + "ffn.lin1.bias"}, {inter}, "hidden_dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.output_weight, {p + "ffn.lin2.weight"}, {h, inter}, "dim x hidden_dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.output_bias, {p + "ffn.lin2.bias"}, {h}, "dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.output_ln_gamma, {p + "output_layer_norm.weight"}, {h}, "dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.output_ln_beta, {p + "output_layer_norm.bias"}, {h}, "dim"));
  }
  return r.check_no_extra_layer("transformer.layer.");
}

// Qwen2 / Qwen3 decoder layers. Linears the checkpoint has no bias for get zeros, so that every layer has the same
// parts as an encoder's (the quantizer, the model file and the Linears need no special case).
Status load_qwen(Resolver& r, const BertConfig& c, EncoderWeights& w) {
  const int64_t h = c.hidden_size, d = c.head_dim();
  BRISK_RETURN_IF_ERROR(r.take(w.embeddings.word, {"embed_tokens.weight"}, {c.vocab_size, h}, "vocab_size x hidden"));
  BRISK_RETURN_IF_ERROR(r.take(w.final_norm_gamma, {"norm.weight"}, {h}, "hidden"));
  auto zeros = [](Tensor& out, int64_t n) -> Status {
    BRISK_ASSIGN_OR_RETURN(out, Tensor::zeros({n}, DType::kF32));
    return absl::OkStatus();
  };
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = absl::StrCat("layers.", i, ".");
    EncoderLayerWeights& l = w.layers[static_cast<size_t>(i)];
    const int64_t a = c.layer_heads(i) * d, kv = c.layer_kv_heads(i) * d, inter = c.layer_intermediate_size(i);
    BRISK_RETURN_IF_ERROR(r.take(l.q_weight, {p + "self_attn.q_proj.weight"}, {a, h}, "heads x head_dim, hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.k_weight, {p + "self_attn.k_proj.weight"}, {kv, h}, "kv heads x head_dim, hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.v_weight, {p + "self_attn.v_proj.weight"}, {kv, h}, "kv heads x head_dim, hidden"));
    if (c.attention_bias) {
      BRISK_RETURN_IF_ERROR(r.take(l.q_bias, {p + "self_attn.q_proj.bias"}, {a}, "heads x head_dim"));
      BRISK_RETURN_IF_ERROR(r.take(l.k_bias, {p + "self_attn.k_proj.bias"}, {kv}, "kv heads x head_dim"));
      BRISK_RETURN_IF_ERROR(r.take(l.v_bias, {p + "self_attn.v_proj.bias"}, {kv}, "kv heads x head_dim"));
    } else {
      BRISK_RETURN_IF_ERROR(zeros(l.q_bias, a));
      BRISK_RETURN_IF_ERROR(zeros(l.k_bias, kv));
      BRISK_RETURN_IF_ERROR(zeros(l.v_bias, kv));
    }
    if (c.qk_norm()) {
      BRISK_RETURN_IF_ERROR(r.take(l.q_norm_gamma, {p + "self_attn.q_norm.weight"}, {d}, "head_dim"));
      BRISK_RETURN_IF_ERROR(r.take(l.k_norm_gamma, {p + "self_attn.k_norm.weight"}, {d}, "head_dim"));
    }
    BRISK_RETURN_IF_ERROR(
        r.take(l.attention_output_weight, {p + "self_attn.o_proj.weight"}, {h, a}, "hidden, heads x head_dim"));
    BRISK_RETURN_IF_ERROR(r.take(l.attention_ln_gamma, {p + "input_layernorm.weight"}, {h}, "hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.output_ln_gamma, {p + "post_attention_layernorm.weight"}, {h}, "hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.gate_weight, {p + "mlp.gate_proj.weight"}, {inter, h}, "intermediate x hidden"));
    BRISK_RETURN_IF_ERROR(
        r.take(l.intermediate_weight, {p + "mlp.up_proj.weight"}, {inter, h}, "intermediate x hidden"));
    BRISK_RETURN_IF_ERROR(r.take(l.output_weight, {p + "mlp.down_proj.weight"}, {h, inter}, "hidden x intermediate"));
    BRISK_RETURN_IF_ERROR(zeros(l.attention_output_bias, h));
    BRISK_RETURN_IF_ERROR(zeros(l.gate_bias, inter));
    BRISK_RETURN_IF_ERROR(zeros(l.intermediate_bias, inter));
    BRISK_RETURN_IF_ERROR(zeros(l.output_bias, h));
  }
  return r.check_no_extra_layer("layers.");
}

}  // namespace

std::vector<LinearSlot> linear_slots(EncoderWeights& weights, const BertConfig& config) {
  const bool distil = config.family == ModelFamily::kDistilBert, decoder = config.is_decoder();
  const int64_t h = config.hidden_size;
  std::vector<LinearSlot> slots;
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    EncoderLayerWeights& l = weights.layers[i];
    const auto layer = static_cast<int64_t>(i);
    const int64_t a = config.layer_heads(layer) * config.head_dim();
    const int64_t kv = config.layer_kv_heads(layer) * config.head_dim(), inter = config.layer_intermediate_size(layer);
    const std::string p = absl::StrCat(distil ? "transformer.layer." : decoder ? "layers." : "encoder.layer.", i, ".");
    auto name = [&](const char* bert, const char* distilbert, const char* qwen) {
      return p + (decoder ? qwen : distil ? distilbert : bert);
    };
    slots.push_back({name("attention.self.query", "attention.q_lin", "self_attn.q_proj"), &l.q_weight, &l.q_bias,
                     &l.q_scales, a, h});
    slots.push_back({name("attention.self.key", "attention.k_lin", "self_attn.k_proj"), &l.k_weight, &l.k_bias,
                     &l.k_scales, kv, h});
    slots.push_back({name("attention.self.value", "attention.v_lin", "self_attn.v_proj"), &l.v_weight, &l.v_bias,
                     &l.v_scales, kv, h});
    slots.push_back({name("attention.output.dense", "attention.out_lin", "self_attn.o_proj"),
                     &l.attention_output_weight, &l.attention_output_bias, &l.attention_output_scales, h, a});
    slots.push_back({name("intermediate.dense", "ffn.lin1", "mlp.up_proj"), &l.intermediate_weight,
                     &l.intermediate_bias, &l.intermediate_scales, inter, h});
    slots.push_back({name("output.dense", "ffn.lin2", "mlp.down_proj"), &l.output_weight, &l.output_bias,
                     &l.output_scales, h, inter});
    if (decoder) slots.push_back({p + "mlp.gate_proj", &l.gate_weight, &l.gate_bias, &l.gate_scales, inter, h});
  }
  return slots;
}

std::vector<std::string> layer_names(const BertConfig& config) {
  EncoderWeights empty;
  empty.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  std::vector<std::string> names;
  for (const LinearSlot& slot : linear_slots(empty, config)) names.push_back(slot.name);
  names.push_back(kWordEmbeddingsName);
  return names;
}

std::vector<F32TensorSlot> f32_tensors(EncoderWeights& w, const BertConfig& c) {
  const int64_t h = c.hidden_size;
  std::vector<F32TensorSlot> out;
  if (c.is_decoder()) {
    out.push_back({"norm.weight", &w.final_norm_gamma, {h}});
    for (size_t i = 0; i < w.layers.size(); ++i) {
      EncoderLayerWeights& l = w.layers[i];
      const std::string p = absl::StrCat("layers.", i, ".");
      out.push_back({p + "input_layernorm.weight", &l.attention_ln_gamma, {h}});
      out.push_back({p + "post_attention_layernorm.weight", &l.output_ln_gamma, {h}});
      if (c.qk_norm()) {
        out.push_back({p + "self_attn.q_norm.weight", &l.q_norm_gamma, {c.head_dim()}});
        out.push_back({p + "self_attn.k_norm.weight", &l.k_norm_gamma, {c.head_dim()}});
      }
    }
    return out;
  }
  const bool distil = c.family == ModelFamily::kDistilBert;
  EmbeddingWeights& e = w.embeddings;
  out = {
      {"embeddings.position_embeddings.weight", &e.position, {c.max_position_embeddings, h}},
      {"embeddings.LayerNorm.weight", &e.ln_gamma, {h}},
      {"embeddings.LayerNorm.bias", &e.ln_beta, {h}},
  };
  if (c.type_vocab_size > 0) {
    out.push_back({"embeddings.token_type_embeddings.weight", &e.token_type, {c.type_vocab_size, h}});
  }
  for (size_t i = 0; i < w.layers.size(); ++i) {
    EncoderLayerWeights& l = w.layers[i];
    const std::string p = absl::StrCat(distil ? "transformer.layer." : "encoder.layer.", i, ".");
    const std::string attn = p + (distil ? "sa_layer_norm." : "attention.output.LayerNorm.");
    const std::string outn = p + (distil ? "output_layer_norm." : "output.LayerNorm.");
    out.push_back({attn + "weight", &l.attention_ln_gamma, {h}});
    out.push_back({attn + "bias", &l.attention_ln_beta, {h}});
    out.push_back({outn + "weight", &l.output_ln_gamma, {h}});
    out.push_back({outn + "bias", &l.output_ln_beta, {h}});
  }
  return out;
}

StatusOr<Tensor> to_float32(const Tensor& t) {
  if (t.device() != Device::kCPU) {
    return absl::InvalidArgumentError(
        absl::StrCat("to_float32 needs a cpu tensor; got a ", device_name(t.device()), " tensor"));
  }
  if (t.dtype() == DType::kF32) return t;
  if (t.dtype() != DType::kF16 && t.dtype() != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot convert dtype ", dtype_name(t.dtype()), " to f32; expected f32, f16 or bf16"));
  }
  if (!t.is_contiguous()) {
    return absl::InvalidArgumentError(absl::StrCat("to_float32 needs a contiguous tensor; got shape ", t.shape_string(),
                                                   " with non-contiguous strides"));
  }
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(t.shape(), DType::kF32));
  const int64_t n = t.numel();
  const auto* src = t.data<uint16_t>();
  float* dst = out.data<float>();
  if (t.dtype() == DType::kF16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_float(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(src[i]);
  }
  return out;
}

StatusOr<NamedTensors> read_safetensors_tensors(const std::string& path) {
  BRISK_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  NamedTensors out;
  for (const std::string& name : file.tensor_names()) {
    BRISK_ASSIGN_OR_RETURN(Tensor t, file.get(name));
    out.emplace(name, std::move(t));
  }
  return out;
}

#if !defined(BRISK_HAVE_TORCH)
StatusOr<NamedTensors> read_torch_checkpoint(const std::string& path) {
  return absl::UnimplementedError(absl::StrCat(
      display_name(path),
      ": this build of brisk lacks libtorch (BRISK_WITH_TORCH=OFF or libtorch-dev not found), so "
      "it cannot read PyTorch checkpoints; convert the checkpoint to model.safetensors (e.g. with Python: "
      "safetensors.torch.save_file(torch.load('pytorch_model.bin'), 'model.safetensors')) or rebuild with libtorch"));
}
bool torch_checkpoints_supported() { return false; }
#endif

int64_t EncoderWeights::expected_num_parameters(const BertConfig& c) {
  const int64_t h = c.hidden_size;
  if (c.is_decoder()) {
    const int64_t d = c.head_dim();
    int64_t n = c.vocab_size * h + h;  // embed_tokens, norm
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      const int64_t a = c.layer_heads(l) * d, kv = c.layer_kv_heads(l) * d, inter = c.layer_intermediate_size(l);
      n += (a + 2 * kv) * h + h * a + 2 * h + 3 * inter * h;
      if (c.attention_bias) n += a + 2 * kv;
      if (c.qk_norm()) n += 2 * d;
    }
    return n;
  }
  int64_t n = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * h + 2 * h;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const int64_t a = c.layer_heads(l) * c.head_dim(), inter = c.layer_intermediate_size(l);
    n += 3 * (a * h + a) + (h * a + h) + 2 * h + (inter * h + inter) + (h * inter + h) + 2 * h;
  }
  return n;
}

StatusOr<EncoderWeights> EncoderWeights::from_tensors(const NamedTensors& tensors, const BertConfig& config,
                                                      const std::string& source_name) {
  BRISK_RETURN_IF_ERROR(config.validate(source_name + " (config)"));
  Resolver resolver(tensors, config, source_name);
  BRISK_RETURN_IF_ERROR(resolver.find_prefix());
  // Each layer has at least 9 tensors (a Qwen3 layer; a BERT layer 16); checking the count first keeps a hostile
  // num_hidden_layers from allocating.
  const int64_t kTensorsPerLayer = config.is_decoder() ? 9 : 16;
  if (config.num_hidden_layers > static_cast<int64_t>(tensors.size()) / kTensorsPerLayer) {
    return absl::InvalidArgumentError(absl::StrCat(
        source_name, ": the config has num_hidden_layers = ", config.num_hidden_layers, " but the file holds only ",
        tensors.size(), " tensors; expected ", kTensorsPerLayer, " per layer"));
  }
  EncoderWeights w;
  w.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  if (config.family == ModelFamily::kDistilBert) {
    BRISK_RETURN_IF_ERROR(load_distilbert(resolver, config, w));
  } else if (config.is_decoder()) {
    BRISK_RETURN_IF_ERROR(load_qwen(resolver, config, w));
  } else {
    BRISK_RETURN_IF_ERROR(load_bert(resolver, config, w));
  }
  w.weights_file = source_name;
  w.num_parameters = resolver.num_parameters();
  if (w.num_parameters != expected_num_parameters(config)) {
    return absl::InternalError(absl::StrCat(source_name, ": loaded ", w.num_parameters,
                                            " parameters but the config implies ", expected_num_parameters(config)));
  }
  return w;
}

StatusOr<NamedTensors> read_weights_file(const std::string& path) {
  if (absl::EndsWith(path, ".safetensors")) return read_safetensors_tensors(path);
  return read_torch_checkpoint(path);
}

StatusOr<std::string> find_weights_file(const std::string& model_dir) {
  const std::filesystem::path dir(model_dir);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(model_dir,
                                            ": not a directory; expected a model directory holding "
                                            "model.safetensors or pytorch_model.bin"));
  }
  for (const char* name : {"model.safetensors", "pytorch_model.bin"}) {
    const std::filesystem::path file = dir / name;
    if (std::filesystem::exists(file, ec)) return file.string();
  }
  return absl::NotFoundError(absl::StrCat(model_dir,
                                          ": holds neither model.safetensors nor pytorch_model.bin; "
                                          "expected one of them (sharded checkpoints are not supported)"));
}

StatusOr<EncoderWeights> EncoderWeights::load_file(const std::string& path, const BertConfig& config) {
  BRISK_ASSIGN_OR_RETURN(NamedTensors tensors, read_weights_file(path));
  StatusOr<EncoderWeights> w = from_tensors(tensors, config, display_name(path));
  if (w.ok()) w->weights_file = path;
  return w;
}

StatusOr<WeightsWithTensors> load_weights_with_tensors(const std::string& model_dir, const BertConfig& config) {
  WeightsWithTensors out;
  BRISK_ASSIGN_OR_RETURN(std::string path, find_weights_file(model_dir));
  BRISK_ASSIGN_OR_RETURN(out.tensors, read_weights_file(path));
  BRISK_ASSIGN_OR_RETURN(out.weights, EncoderWeights::from_tensors(out.tensors, config, display_name(path)));
  out.weights.weights_file = path;
  return out;
}

StatusOr<EncoderWeights> EncoderWeights::load(const std::string& model_dir, const BertConfig& config) {
  BRISK_ASSIGN_OR_RETURN(std::string path, find_weights_file(model_dir));
  return load_file(path, config);
}

StatusOr<std::string> file_sha256_hex(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (f == nullptr) return absl::NotFoundError(absl::StrCat(path, ": cannot open for reading"));
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (ctx == nullptr || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("EVP_DigestInit_ex(sha256) failed");
  }
  std::vector<unsigned char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
    if (EVP_DigestUpdate(ctx.get(), buf.data(), n) != 1) return absl::InternalError("EVP_DigestUpdate failed");
  }
  if (std::ferror(f.get())) return absl::DataLossError(absl::StrCat(path, ": read error"));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &len) != 1) return absl::InternalError("EVP_DigestFinal_ex failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

}  // namespace brisk
