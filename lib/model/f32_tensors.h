// The f32 tensors of an encoder besides its linear layers and word embeddings (position and token-type
// embeddings, the LayerNorms), under the names a model file gives them and with the shapes the config implies: what
// the quantized model file (lib/quant) and the pruned model directory (lib/prune) write and check. Internal to brisk.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk/model/config.h"
#include "brisk/model/weights.h"

namespace brisk {

struct F32TensorSlot {
  std::string name;
  Tensor* tensor;
  std::vector<int64_t> shape;
};

inline std::vector<F32TensorSlot> f32_tensors(EncoderWeights& w, const BertConfig& c) {
  const int64_t h = c.hidden_size;
  const bool distil = c.family == ModelFamily::kDistilBert;
  EmbeddingWeights& e = w.embeddings;
  std::vector<F32TensorSlot> out = {
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

}  // namespace brisk
