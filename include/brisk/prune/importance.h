// Importance of the structured units (attention heads, feed-forward neurons) of a BERT-family encoder, and the
// structured plan that removes the least important ones.
//
// Scores, higher = more important:
//   kL1, kL2      magnitude: the L1 / L2 norm of everything a unit owns (a head's Q, K, V rows and biases and its
//                 attention-output columns; a neuron's intermediate row and bias and its output column);
//   kActivation   measured on calibration activations: the norm of the unit's contribution to its layer's output,
//                 ||C_h W_o,hᵀ||_F for head h (exactly the output change when the head is masked), and
//                 ||a_j|| · ||W_out[:, j]|| for neuron j (Wanda's |W|·||X|| for a whole column).
//
//   BRISK_ASSIGN_OR_RETURN(ActivationStats stats, collect_activations(*encoder, calibration_batches));
//   BRISK_ASSIGN_OR_RETURN(UnitScores s, score_units(config, weights, Importance::kActivation, &stats));
//   BRISK_ASSIGN_OR_RETURN(StructuredPlan plan, plan_by_amounts(config, s, uniform(config, 0.25, 0.3)));
//
// Thread safety: the functions are reentrant and never modify their inputs.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/weights.h"
#include "brisk/prune/structured.h"

namespace brisk::prune {

// Second moments of the unpruned activations that the following projections read, per layer: the attention output's
// input (the concatenated head contexts, width attn) and the feed-forward output's input (the neurons, width ffn).
struct BRISK_API LayerActivations {
  int64_t tokens = 0;
  int64_t attn = 0, ffn = 0;
  std::vector<double> context_gram, context_sum;  // [attn, attn] = Σ xᵀx, [attn] = Σ x
  std::vector<double> ffn_gram, ffn_sum;          // [ffn, ffn], [ffn]
};

struct BRISK_API ActivationStats {
  std::vector<LayerActivations> layers;
  std::vector<PackedSequences>
      batches;  // the calibration batches they came from (sequential reconstruction reruns them)
};

// One pass of `encoder` over the batches with an activation tap.
BRISK_API StatusOr<ActivationStats> collect_activations(const BertEncoder& encoder,
                                                        const std::vector<PackedSequences>& batches);

enum class Importance : uint8_t { kL1, kL2, kActivation };
BRISK_API std::string_view importance_name(Importance importance);
// "l1", "l2", "activation"; anything else is an error listing them.
BRISK_API StatusOr<Importance> parse_importance(std::string_view name);

struct BRISK_API UnitScores {
  std::vector<std::vector<double>> heads;    // [layer][slot]: the layer's kept heads, in weight order
  std::vector<std::vector<double>> neurons;  // [layer][neuron]
};

// kActivation needs the stats of this very model (an error otherwise).
BRISK_API StatusOr<UnitScores> score_units(const BertConfig& config, const EncoderWeights& weights,
                                           Importance importance, const ActivationStats* stats);

// Fractions to remove per layer: heads[l] of layer l's kept heads, ffn[l] of its neurons, each in [0, 1).
struct BRISK_API LayerAmounts {
  std::vector<double> heads, ffn;
};
BRISK_API LayerAmounts uniform(const BertConfig& config, double heads, double ffn);

// Removes the lowest-scoring round(amount x count) units of each layer (ties: the lower number first). A head
// amount that would remove every head of a layer keeps its best head.
BRISK_API StatusOr<StructuredPlan> plan_by_amounts(const BertConfig& config, const UnitScores& scores,
                                                   const LayerAmounts& amounts);

}  // namespace brisk::prune
