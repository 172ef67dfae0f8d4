// Retraining-free reconstruction (Kwon et al. 2022, "A Fast Post-Training Pruning Framework for Transformers"):
// after heads or neurons are removed, the projection that reads them (the attention output, the feed-forward output)
// is re-fitted by ridge least squares so that, on the unpruned model's calibration activations, the layer's output
// stays as close as it can to the unpruned one:
//
//   min ||X_S W'ᵀ + b' - (X Wᵀ + b)||² + λ ||W' - W_S||²,   λ = damping x mean(diag(X_Sᵀ X_S))
//
// with X the projection's input, S the kept columns. The ridge pulls towards the kept weights as they were (not
// towards zero), so directions the calibration text does not excite keep their trained values: with few tokens the
// re-fit falls back to plain pruning instead of overfitting. The solve needs only Xᵀ X and Σ x (ActivationStats).
//
//   BRISK_ASSIGN_OR_RETURN(ActivationStats stats, collect_activations(*encoder, calibration_batches));
//   BRISK_ASSIGN_OR_RETURN(PrunedModel m, prune_and_reconstruct(config, weights, plan, stats, {}));
//
// Thread safety: reentrant; the inputs are never modified.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "brisk/prune/importance.h"
#include "brisk/prune/structured.h"

namespace brisk::prune {

struct BRISK_API ReconstructOptions {
  // Ridge λ relative to the mean kept activation energy; 0 for plain least squares. 0.1 generalised best to held-out
  // text on all-MiniLM-L6-v2 with 201 calibration texts (benchmarks/RESULTS.md).
  double damping = 0.1;
  // true: layer by layer on the pruned model's own activations, matching the unpruned model's projection output plus
  // residual (errors of earlier layers are absorbed; every attention-output and FFN-output projection from the first
  // pruned layer on is re-fitted); false: each pruned projection alone on the unpruned activations (ridge_refit).
  bool sequential = false;
};

struct BRISK_API Refit {
  Tensor weight;  // f32 [out, kept columns]
  Tensor bias;    // f32 [out]
};

// Re-fits one projection. gram/sum/tokens describe its full input (width = weight.dim(1)); keep lists the kept
// input columns in order. An error names `name` when the system is singular (damping 0 with dependent or dead
// columns, or fewer tokens than columns), or the statistics do not match the weight.
BRISK_API StatusOr<Refit> ridge_refit(const std::string& name, const Tensor& weight, const Tensor& bias,
                                      const std::vector<double>& gram, const std::vector<double>& sum, int64_t tokens,
                                      const std::vector<int64_t>& keep, const ReconstructOptions& options);

// prune_structured, then the re-fit (see ReconstructOptions::sequential). `stats` must come from the unpruned model
// (collect_activations, which keeps the calibration batches); layers are removed last.
BRISK_API StatusOr<PrunedModel> prune_and_reconstruct(const BertConfig& config, const EncoderWeights& weights,
                                                      const StructuredPlan& plan, const ActivationStats& stats,
                                                      const ReconstructOptions& options);

}  // namespace brisk::prune
