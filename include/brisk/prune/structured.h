// Structured pruning: removes attention heads, feed-forward neurons and whole layers from a BERT-family encoder by
// physically deleting the rows and columns they own, so the pruned encoder is smaller and faster (masks alone change
// nothing on a CPU). The result is an ordinary model: its config records what was pruned (Hugging Face's
// pruned_heads, brisk_intermediate_sizes; see brisk/model/config.h), it saves to a model directory that loads
// wherever a model loads (and, when only heads or layers were removed, in transformers 4.x), and it quantizes.
//
//   StructuredPlan plan;
//   plan.heads[5] = {0, 7};             // layer 5: remove heads 0 and 7 (original numbering, as Hugging Face)
//   plan.neurons[2] = {3, 17, 40};      // layer 2: remove feed-forward neurons 3, 17, 40 (current numbering)
//   plan.layers = {4};                  // remove layer 4 (applied last)
//   BRISK_ASSIGN_OR_RETURN(PrunedModel m, prune_structured(config, weights, plan));
//   BRISK_RETURN_IF_ERROR(save_pruned_model(m, source_dir, "minilm-pruned/"));
//   BRISK_RETURN_IF_ERROR(save_pruned_model_file(m, source_dir, source_dir + "/model.safetensors", "p.safetensors"));
//
// Units are named as the model file names them: "encoder.layer.3" (a layer), "encoder.layer.3.attention.head.5",
// "encoder.layer.3.intermediate.neuron.17" (DistilBERT: "transformer.layer.3", ".attention.head.5",
// ".ffn.neuron.17"); parse_units turns such names into a plan.
//
// Rules: pruning every head (or every neuron) of a layer is refused; remove the layer instead. Removing every layer
// is refused. Only f32 weights are pruned: prune first, then quantize.
//
// Thread safety: the functions are reentrant and never modify their inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/config.h"
#include "brisk/model/weights.h"

namespace brisk::prune {

struct BRISK_API StructuredPlan {
  std::map<int64_t, std::vector<int64_t>> heads;    // layer -> heads to remove, by original head number
  std::map<int64_t, std::vector<int64_t>> neurons;  // layer -> feed-forward neurons to remove, current numbering
  std::vector<int64_t> layers;                      // layers to remove (current numbering), after the rest
  bool empty() const { return heads.empty() && neurons.empty() && layers.empty(); }
};

struct BRISK_API PrunedModel {
  BertConfig config;
  EncoderWeights weights;
  // A sequence-classification model's head (sequence_classification_head_tensors), written unchanged: pruning keeps
  // the hidden width it reads.
  NamedTensors head_tensors;
};

// brisk prunes BERT-family encoders (BERT, DistilBERT, RoBERTa): a decoder model (BertConfig::is_decoder()) is
// refused with FAILED_PRECONDITION naming its model_type. Every pruning and sensitivity entry point checks it first.
BRISK_API Status check_prunable(const BertConfig& config, std::string_view what);

// The original numbers of the heads a layer still has, in the order its weights hold them.
BRISK_API std::vector<int64_t> kept_heads(const BertConfig& config, int64_t layer);

// Physically removes the plan's units. Every index is checked; errors name the unit and the valid range.
BRISK_API StatusOr<PrunedModel> prune_structured(const BertConfig& config, const EncoderWeights& weights,
                                                 const StructuredPlan& plan);

// The same function in the unpruned shape: the attention-output columns of each removed head and the output
// columns of each removed neuron are zeroed (what a mask does). Layers cannot be masked this way (their residual
// path and LayerNorm stay): a plan with layers is an error.
BRISK_API StatusOr<EncoderWeights> mask_structured(const BertConfig& config, const EncoderWeights& weights,
                                                   const StructuredPlan& plan);

// Unit names (see above) for a layer of this config.
BRISK_API std::string layer_unit_name(const BertConfig& config, int64_t layer);
BRISK_API std::string head_unit_name(const BertConfig& config, int64_t layer, int64_t head);
BRISK_API std::string neuron_unit_name(const BertConfig& config, int64_t layer, int64_t neuron);
// Parses unit names into a plan; an unknown name is an error that shows the accepted forms.
BRISK_API StatusOr<StructuredPlan> parse_units(const BertConfig& config, const std::vector<std::string>& names);

// config.json text for a pruned model: `original` (the source's config.json) with num_hidden_layers (n_layers),
// pruned_heads, intermediate_size and brisk_intermediate_sizes replaced by the pruned config's values (a uniform
// feed-forward width is written as intermediate_size alone, which transformers can load).
BRISK_API StatusOr<std::string> pruned_config_json(const std::string& original, const BertConfig& pruned);

// Writes out_dir/model.safetensors (the Hugging Face tensor names, no prefix), config.json (pruned_config_json of
// source_dir's), and copies source_dir's tokenizer and sentence-transformers files. out_dir is created; it must
// not be source_dir.
BRISK_API Status save_pruned_model(const PrunedModel& model, const std::string& source_dir, const std::string& out_dir);
// The same model as one brisk model file (brisk/model/model_file.h's format, every layer fp32; plan "pruned"), which
// loads wherever a quantized file loads. `source_weights` (the source's weights file) gives the recorded SHA-256.
BRISK_API Status save_pruned_model_file(const PrunedModel& model, const std::string& source_dir,
                                        const std::string& source_weights, const std::string& path);

}  // namespace brisk::prune
