// Pruning sensitivity analysis of a BERT-family encoder: how much a metric drops as each part of the model is pruned.
//
//   mode "sweep" (Distiller): each unit group is pruned alone at each level (0 to 0.9 by default) and the metric is
//                measured. Groups: per layer, its heads ("heads") and its feed-forward neurons ("ffn"), removed
//                structurally in order of importance; or, with granularity "tensor", each linear weight pruned
//                element-wise by magnitude (kind = the linear's role, e.g. "intermediate").
//   mode "zero": each whole layer, then each head, removed alone; the table gives the drop per removed parameter.
//
// The metric is the user's AccuracyMetric, or the built-in mean cosine between the candidate's and the unpruned
// model's embeddings of the evaluation batches.
//
//   SensitivityOptions o;
//   o.mode = "sweep";
//   o.progress = bar.callback();
//   BRISK_ASSIGN_OR_RETURN(SensitivityTable t, analyze_sensitivity(config, weights, eval_batches, stats, o));
//   BRISK_RETURN_IF_ERROR(write_sensitivity_outputs(t, "sensitivity/"));   // csv, json, svg
//
// Thread safety: reentrant; the inputs are never modified.
#pragma once

#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/weights.h"
#include "brisk/prune/importance.h"
#include "brisk/prune/sensitivity_report.h"

namespace brisk::prune {

struct BRISK_API SensitivityOptions {
  std::string mode = "sweep";             // "sweep" or "zero"
  std::string granularity = "structure";  // sweep only: "structure" (heads, ffn) or "tensor" (each linear weight)
  std::vector<double> levels = {0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  Importance importance = Importance::kActivation;  // the order units are removed in a structured sweep
  Pooling pooling = Pooling::kMean;                 // for the built-in metric
  AccuracyMetric metric;                            // optional: replaces the built-in mean cosine
  std::string metric_name = "mean_cosine";
  Progress progress;
};

// `stats`: collect_activations of this model, for a structured sweep in activation order; when null, they are
// collected from eval_batches.
BRISK_API StatusOr<SensitivityTable> analyze_sensitivity(const BertConfig& config, const EncoderWeights& weights,
                                                         const std::vector<PackedSequences>& eval_batches,
                                                         const ActivationStats* stats,
                                                         const SensitivityOptions& options);

// The built-in metric: the mean cosine of a candidate's embeddings of `batches` against `reference` (the unpruned
// model's, from embed_all in brisk/model/fidelity.h).
BRISK_API AccuracyMetric mean_cosine_metric(std::vector<PackedSequences> batches, std::vector<float> reference,
                                            int64_t hidden, Pooling pooling);

}  // namespace brisk::prune
