// Structured pruning: removing heads, feed-forward neurons and layers. See include/brisk/prune/structured.h.
#include "brisk/prune/structured.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"

namespace brisk::prune {

namespace {

Status bad(const std::string& what) { return absl::InvalidArgumentError(what); }

// Rows `keep` of a 2-D (or 1-D) f32 tensor, each row `row_elems` wide.
StatusOr<Tensor> take_rows(const Tensor& t, const std::vector<int64_t>& keep, int64_t rows_per_unit) {
  const int64_t row = t.rank() == 2 ? t.dim(1) : 1;
  std::vector<int64_t> shape = t.shape();
  shape[0] = static_cast<int64_t>(keep.size()) * rows_per_unit;
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(shape, DType::kF32));
  const int64_t unit = rows_per_unit * row;
  for (size_t i = 0; i < keep.size(); ++i) {
    std::memcpy(out.data<float>() + static_cast<int64_t>(i) * unit, t.data<float>() + keep[i] * unit,
                static_cast<size_t>(unit) * sizeof(float));
  }
  return out;
}

// Columns of a 2-D f32 tensor, in groups of `cols_per_unit`.
StatusOr<Tensor> take_cols(const Tensor& t, const std::vector<int64_t>& keep, int64_t cols_per_unit) {
  const int64_t rows = t.dim(0), cols = t.dim(1), width = static_cast<int64_t>(keep.size()) * cols_per_unit;
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty({rows, width}, DType::kF32));
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = t.data<float>() + r * cols;
    float* dst = out.data<float>() + r * width;
    for (size_t i = 0; i < keep.size(); ++i) {
      std::memcpy(dst + static_cast<int64_t>(i) * cols_per_unit, src + keep[i] * cols_per_unit,
                  static_cast<size_t>(cols_per_unit) * sizeof(float));
    }
  }
  return out;
}

StatusOr<Tensor> owned_copy(const Tensor& t) {
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(t.shape(), t.dtype()));
  std::memcpy(out.raw_data(), t.raw_data(), t.nbytes());
  return out;
}

// Zeroes column groups of a 2-D f32 tensor in place.
void zero_cols(Tensor& t, const std::vector<int64_t>& units, int64_t cols_per_unit) {
  for (int64_t r = 0; r < t.dim(0); ++r) {
    for (int64_t u : units) std::fill_n(t.data<float>() + r * t.dim(1) + u * cols_per_unit, cols_per_unit, 0.0f);
  }
}

Status check_f32(const EncoderWeights& w) {
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const EncoderLayerWeights& x = w.layers[l];
    for (const Tensor* t : {&x.q_weight, &x.k_weight, &x.v_weight, &x.attention_output_weight, &x.intermediate_weight,
                            &x.output_weight}) {
      if (t->dtype() != DType::kF32) {
        return bad(absl::StrCat("layer ", l, " has ", dtype_name(t->dtype()),
                                " weights; expected f32 (prune the fp32 model, then quantize the pruned one)"));
      }
    }
  }
  return absl::OkStatus();
}

// Sorted, unique indices of `what` in layer `layer`, each in [0, limit); refuses removing all of them.
StatusOr<std::vector<int64_t>> checked_units(std::vector<int64_t> units, int64_t limit, int64_t layer, const char* what,
                                             const char* hint) {
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  for (int64_t u : units) {
    if (u < 0 || u >= limit) {
      return bad(absl::StrCat("layer ", layer, " ", what, " ", u, " does not exist; expected 0 to ", limit - 1));
    }
  }
  if (static_cast<int64_t>(units.size()) >= limit) {
    return bad(absl::StrCat("pruning all ", limit, " ", what, "s of layer ", layer,
                            " is refused; expected at least one to remain (", hint, ")"));
  }
  return units;
}

Status check_layer(const BertConfig& c, int64_t layer) {
  if (layer < 0 || layer >= c.num_hidden_layers) {
    return bad(absl::StrCat("layer ", layer, " does not exist; expected 0 to ", c.num_hidden_layers - 1));
  }
  return absl::OkStatus();
}

std::vector<int64_t> complement(const std::vector<int64_t>& removed, int64_t n) {
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::binary_search(removed.begin(), removed.end(), i)) keep.push_back(i);
  }
  return keep;
}

// The slots (positions in the layer's weights) of heads given by original number; errors for pruned heads.
StatusOr<std::vector<int64_t>> head_slots(const BertConfig& c, int64_t layer, const std::vector<int64_t>& heads) {
  std::vector<int64_t> sorted = heads;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  const std::vector<int64_t> kept = kept_heads(c, layer);
  std::vector<int64_t> slots;
  for (int64_t h : sorted) {
    if (h < 0 || h >= c.num_attention_heads) {
      return bad(
          absl::StrCat("layer ", layer, " head ", h, " does not exist; expected 0 to ", c.num_attention_heads - 1));
    }
    auto it = std::find(kept.begin(), kept.end(), h);
    if (it == kept.end()) return bad(absl::StrCat("layer ", layer, " head ", h, " is already pruned"));
    slots.push_back(it - kept.begin());
  }
  if (slots.size() >= kept.size()) {
    return bad(absl::StrCat("pruning all ", kept.size(), " remaining heads of layer ", layer,
                            " is refused; expected at least one head to remain (remove the layer instead)"));
  }
  return slots;
}

Status prune_heads(BertConfig& c, EncoderLayerWeights& w, int64_t layer, const std::vector<int64_t>& heads) {
  BRISK_ASSIGN_OR_RETURN(std::vector<int64_t> slots, head_slots(c, layer, heads));
  const int64_t d = c.head_dim();
  const std::vector<int64_t> keep = complement(slots, c.layer_heads(layer));
  for (Tensor* t : {&w.q_weight, &w.k_weight, &w.v_weight, &w.q_bias, &w.k_bias, &w.v_bias}) {
    BRISK_ASSIGN_OR_RETURN(*t, take_rows(*t, keep, d));
  }
  BRISK_ASSIGN_OR_RETURN(w.attention_output_weight, take_cols(w.attention_output_weight, keep, d));
  std::vector<int64_t>& pruned = c.pruned_heads[layer];
  pruned.insert(pruned.end(), heads.begin(), heads.end());
  std::sort(pruned.begin(), pruned.end());
  pruned.erase(std::unique(pruned.begin(), pruned.end()), pruned.end());
  return absl::OkStatus();
}

Status prune_neurons(BertConfig& c, EncoderLayerWeights& w, int64_t layer, const std::vector<int64_t>& neurons) {
  const int64_t width = c.layer_intermediate_size(layer);
  BRISK_ASSIGN_OR_RETURN(std::vector<int64_t> removed,
                         checked_units(neurons, width, layer, "neuron", "remove the layer instead"));
  const std::vector<int64_t> keep = complement(removed, width);
  BRISK_ASSIGN_OR_RETURN(w.intermediate_weight, take_rows(w.intermediate_weight, keep, 1));
  BRISK_ASSIGN_OR_RETURN(w.intermediate_bias, take_rows(w.intermediate_bias, keep, 1));
  BRISK_ASSIGN_OR_RETURN(w.output_weight, take_cols(w.output_weight, keep, 1));
  if (c.intermediate_sizes.empty()) c.intermediate_sizes.assign(static_cast<size_t>(c.num_hidden_layers), width);
  c.intermediate_sizes[static_cast<size_t>(layer)] = static_cast<int64_t>(keep.size());
  return absl::OkStatus();
}

Status remove_layers(BertConfig& c, EncoderWeights& w, std::vector<int64_t> layers) {
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  for (int64_t l : layers) BRISK_RETURN_IF_ERROR(check_layer(c, l));
  if (static_cast<int64_t>(layers.size()) >= c.num_hidden_layers) {
    return bad(
        absl::StrCat("removing all ", c.num_hidden_layers, " layers is refused; expected at least one to remain"));
  }
  std::map<int64_t, std::vector<int64_t>> heads;
  std::vector<int64_t> widths;
  std::vector<EncoderLayerWeights> kept;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (std::binary_search(layers.begin(), layers.end(), l)) continue;
    const int64_t index = static_cast<int64_t>(kept.size());
    if (auto it = c.pruned_heads.find(l); it != c.pruned_heads.end()) heads[index] = it->second;
    widths.push_back(c.layer_intermediate_size(l));
    kept.push_back(std::move(w.layers[static_cast<size_t>(l)]));
  }
  w.layers = std::move(kept);
  c.num_hidden_layers = static_cast<int64_t>(w.layers.size());
  c.pruned_heads = std::move(heads);
  if (!c.intermediate_sizes.empty()) c.intermediate_sizes = std::move(widths);
  return absl::OkStatus();
}

// A uniform feed-forward width is plain intermediate_size (loadable by transformers).
void normalise_widths(BertConfig& c) {
  if (c.intermediate_sizes.empty()) return;
  const int64_t first = c.intermediate_sizes.front();
  if (std::all_of(c.intermediate_sizes.begin(), c.intermediate_sizes.end(), [&](int64_t v) { return v == first; })) {
    c.intermediate_size = first;
    c.intermediate_sizes.clear();
  }
}

std::string layer_prefix(const BertConfig& c) {
  return c.family == ModelFamily::kDistilBert ? "transformer.layer." : "encoder.layer.";
}
std::string ffn_part(const BertConfig& c) { return c.family == ModelFamily::kDistilBert ? "ffn" : "intermediate"; }

}  // namespace

Status check_prunable(const BertConfig& config, std::string_view what) {
  if (!config.is_decoder()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(std::string(what), ": the model is a ", config.model_type,
                                                    " decoder; expected a BERT-family encoder (bert, distilbert, "
                                                    "roberta, xlm-roberta): brisk does not prune decoders yet"));
}

std::vector<int64_t> kept_heads(const BertConfig& config, int64_t layer) {
  auto it = config.pruned_heads.find(layer);
  return complement(it == config.pruned_heads.end() ? std::vector<int64_t>{} : it->second, config.num_attention_heads);
}

StatusOr<PrunedModel> prune_structured(const BertConfig& config, const EncoderWeights& weights,
                                       const StructuredPlan& plan) {
  BRISK_RETURN_IF_ERROR(check_prunable(config, "prune_structured"));
  BRISK_RETURN_IF_ERROR(config.validate("prune_structured config"));
  if (static_cast<int64_t>(weights.layers.size()) != config.num_hidden_layers) {
    return bad(absl::StrCat("the weights have ", weights.layers.size(),
                            " layers; expected num_hidden_layers = ", config.num_hidden_layers));
  }
  BRISK_RETURN_IF_ERROR(check_f32(weights));
  PrunedModel m{config, weights, {}};  // shares the tensors; pruned ones are replaced by new copies
  for (const auto& [layer, heads] : plan.heads) {
    BRISK_RETURN_IF_ERROR(check_layer(config, layer));
    if (!heads.empty()) {
      BRISK_RETURN_IF_ERROR(prune_heads(m.config, m.weights.layers[static_cast<size_t>(layer)], layer, heads));
    }
  }
  for (const auto& [layer, neurons] : plan.neurons) {
    BRISK_RETURN_IF_ERROR(check_layer(config, layer));
    if (!neurons.empty()) {
      BRISK_RETURN_IF_ERROR(prune_neurons(m.config, m.weights.layers[static_cast<size_t>(layer)], layer, neurons));
    }
  }
  if (!plan.layers.empty()) BRISK_RETURN_IF_ERROR(remove_layers(m.config, m.weights, plan.layers));
  normalise_widths(m.config);
  BRISK_RETURN_IF_ERROR(m.config.validate("pruned config"));
  m.weights.num_parameters = EncoderWeights::expected_num_parameters(m.config);
  return m;
}

StatusOr<EncoderWeights> mask_structured(const BertConfig& config, const EncoderWeights& weights,
                                         const StructuredPlan& plan) {
  BRISK_RETURN_IF_ERROR(check_prunable(config, "mask_structured"));
  if (!plan.layers.empty()) {
    return bad(
        "mask_structured cannot mask whole layers (their residual path and LayerNorm stay); expected a plan "
        "of heads and neurons only");
  }
  BRISK_RETURN_IF_ERROR(check_f32(weights));
  EncoderWeights out = weights;
  for (const auto& [layer, heads] : plan.heads) {
    BRISK_RETURN_IF_ERROR(check_layer(config, layer));
    BRISK_ASSIGN_OR_RETURN(std::vector<int64_t> slots, head_slots(config, layer, heads));
    Tensor& o = out.layers[static_cast<size_t>(layer)].attention_output_weight;
    BRISK_ASSIGN_OR_RETURN(o, owned_copy(o));
    zero_cols(o, slots, config.head_dim());
  }
  for (const auto& [layer, neurons] : plan.neurons) {
    BRISK_RETURN_IF_ERROR(check_layer(config, layer));
    BRISK_ASSIGN_OR_RETURN(std::vector<int64_t> removed, checked_units(neurons, config.layer_intermediate_size(layer),
                                                                       layer, "neuron", "remove the layer instead"));
    Tensor& o = out.layers[static_cast<size_t>(layer)].output_weight;
    BRISK_ASSIGN_OR_RETURN(o, owned_copy(o));
    zero_cols(o, removed, 1);
  }
  return out;
}

std::string layer_unit_name(const BertConfig& c, int64_t layer) { return absl::StrCat(layer_prefix(c), layer); }
std::string head_unit_name(const BertConfig& c, int64_t layer, int64_t head) {
  return absl::StrCat(layer_unit_name(c, layer), ".attention.head.", head);
}
std::string neuron_unit_name(const BertConfig& c, int64_t layer, int64_t neuron) {
  return absl::StrCat(layer_unit_name(c, layer), ".", ffn_part(c), ".neuron.", neuron);
}

StatusOr<StructuredPlan> parse_units(const BertConfig& c, const std::vector<std::string>& names) {
  StructuredPlan plan;
  const std::string prefix = layer_prefix(c);
  for (const std::string& name : names) {
    auto unknown = [&] {
      return bad(absl::StrCat("unit '", name, "' is unknown; expected ", prefix, "L, ", prefix,
                              "L.attention.head.H or ", prefix, "L.", ffn_part(c), ".neuron.N with L in 0..",
                              c.num_hidden_layers - 1));
    };
    if (!absl::StartsWith(name, prefix)) return unknown();
    const std::vector<std::string> parts = absl::StrSplit(name.substr(prefix.size()), '.');
    int64_t layer = -1, index = -1;
    if (parts.empty() || !absl::SimpleAtoi(parts[0], &layer) || layer < 0 || layer >= c.num_hidden_layers) {
      return unknown();
    }
    if (parts.size() == 1) {
      plan.layers.push_back(layer);
    } else if (parts.size() == 4 && parts[1] == "attention" && parts[2] == "head" &&
               absl::SimpleAtoi(parts[3], &index)) {
      plan.heads[layer].push_back(index);
    } else if (parts.size() == 4 && parts[1] == ffn_part(c) && parts[2] == "neuron" &&
               absl::SimpleAtoi(parts[3], &index)) {
      plan.neurons[layer].push_back(index);
    } else {
      return unknown();
    }
  }
  return plan;
}

}  // namespace brisk::prune
