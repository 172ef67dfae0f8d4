// Sensitivity-guided allocation of per-layer pruning amounts, and the iterative schedule that prunes step by step
// while a metric stays within tolerance.
//
// Budgets count what the encoder layers own (embeddings are never pruned): parameters, or FLOPs of one sequence of
// `seq_len` tokens (projections and attention). A target is the fraction of that budget to REMOVE.
//
//   BRISK_ASSIGN_OR_RETURN(SensitivityTable sweep, analyze_sensitivity(config, w, eval, &stats, {}));
//   BRISK_ASSIGN_OR_RETURN(LayerAmounts a, allocate(config, sweep, {.target = 0.4, .budget = Budget::kFlops}));
//
// allocate() starts from nothing pruned and repeatedly takes the next sweep level of the (layer, heads|ffn) group
// whose step costs the least metric per unit of budget removed, until the target is met: sensitive layers get less.
//
// Thread safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/prune/importance.h"
#include "brisk/prune/reconstruct.h"
#include "brisk/prune/sensitivity_report.h"

namespace brisk::prune {

enum class Budget : uint8_t { kParameters, kFlops };

struct BRISK_API AllocationOptions {
  double target = 0.3;  // fraction of the budget to remove, in [0, 1)
  Budget budget = Budget::kParameters;
  int64_t seq_len = 128;  // for kFlops
};

// What one head and one neuron of a layer cost in the budget.
BRISK_API double head_cost(const BertConfig& config, Budget budget, int64_t seq_len);
BRISK_API double neuron_cost(const BertConfig& config, Budget budget, int64_t seq_len);
// The budget the encoder layers hold now.
BRISK_API double layers_cost(const BertConfig& config, Budget budget, int64_t seq_len);
// Budget removed by amounts (counted as plan_by_amounts counts units).
BRISK_API double removed_cost(const BertConfig& config, const LayerAmounts& amounts, Budget budget, int64_t seq_len);

// Needs a structured sweep of this model ("heads" and "ffn" points per layer).
BRISK_API StatusOr<LayerAmounts> allocate(const BertConfig& config, const SensitivityTable& sweep,
                                          const AllocationOptions& options);

struct BRISK_API ScheduleOptions {
  double step = 0.1;  // the target grows by this each step
  double max_target = 0.9;
  double min_metric = 0.97;  // tolerance: continue while the metric stays at or above it
  Budget budget = Budget::kParameters;
  int64_t seq_len = 128;
  bool guided = true;  // allocate() from the sweep; false: the same fraction everywhere
  bool reconstruct = true;
  ReconstructOptions reconstruction;
  Importance importance = Importance::kActivation;
  Progress progress;
};

struct BRISK_API ScheduleStep {
  double target = 0.0;   // budget fraction asked
  double removed = 0.0;  // budget fraction removed
  double metric = 0.0;
  bool accepted = false;
  LayerAmounts amounts;
};

struct BRISK_API ScheduleResult {
  std::vector<ScheduleStep> path;  // every step tried, the last one rejected unless max_target was reached
  LayerAmounts amounts;            // of the last accepted step (all zero when none was)
};

// Prunes the unpruned model at target = step, 2 x step, ... (each time from the unpruned weights), evaluates
// `metric`, and stops at the first step below tolerance. `sweep` is needed when guided.
BRISK_API StatusOr<ScheduleResult> iterative_schedule(const BertConfig& config, const EncoderWeights& weights,
                                                      const ActivationStats& stats, const SensitivityTable* sweep,
                                                      const AccuracyMetric& metric, const ScheduleOptions& options);

// Scores the units, plans by the amounts, and prunes, with or without reconstruction: what `brisk prune` does.
BRISK_API StatusOr<PrunedModel> prune_by_amounts(const BertConfig& config, const EncoderWeights& weights,
                                                 const LayerAmounts& amounts, Importance importance,
                                                 const ActivationStats* stats, bool reconstruct,
                                                 const ReconstructOptions& reconstruction);

}  // namespace brisk::prune
