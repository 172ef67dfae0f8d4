// Sensitivity-guided allocation and the iterative schedule. See include/brisk/prune/allocation.h.
#include "brisk/prune/allocation.h"

#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "brisk/prune/mask.h"

namespace brisk::prune {

namespace {

int64_t count(double amount, int64_t n) { return std::min(static_cast<int64_t>(std::nearbyint(amount * n)), n - 1); }

// One (layer, kind) curve of a structured sweep: levels ascending, metric at each.
struct Curve {
  int64_t layer = 0;
  bool heads = false;
  std::vector<double> levels, metrics;
  size_t at = 0;  // the level taken so far
};

}  // namespace

double head_cost(const BertConfig& c, Budget budget, int64_t t) {
  const double h = static_cast<double>(c.hidden_size), d = static_cast<double>(c.head_dim());
  const double n = static_cast<double>(t);
  // Q, K, V rows and biases, attention-output columns; or their multiply-adds plus the head's attention.
  return budget == Budget::kParameters ? 4 * h * d + 3 * d : 8 * n * h * d + 4 * n * n * d;
}

double neuron_cost(const BertConfig& c, Budget budget, int64_t t) {
  const double h = static_cast<double>(c.hidden_size);
  return budget == Budget::kParameters ? 2 * h + 1 : 4 * static_cast<double>(t) * h;
}

double layers_cost(const BertConfig& c, Budget budget, int64_t t) {
  double total = 0;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    total += static_cast<double>(c.layer_heads(l)) * head_cost(c, budget, t) +
             static_cast<double>(c.layer_intermediate_size(l)) * neuron_cost(c, budget, t);
  }
  return total;
}

double removed_cost(const BertConfig& c, const LayerAmounts& a, Budget budget, int64_t t) {
  double removed = 0;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const size_t i = static_cast<size_t>(l);
    if (i < a.heads.size()) removed += count(a.heads[i], c.layer_heads(l)) * head_cost(c, budget, t);
    if (i < a.ffn.size()) removed += count(a.ffn[i], c.layer_intermediate_size(l)) * neuron_cost(c, budget, t);
  }
  return removed;
}

StatusOr<LayerAmounts> allocate(const BertConfig& c, const SensitivityTable& sweep, const AllocationOptions& o) {
  BRISK_RETURN_IF_ERROR(check_amount(o.target, "allocation target"));
  std::map<std::pair<int64_t, bool>, Curve> curves;
  for (const SensitivityPoint& p : sweep.points) {
    if (sweep.mode != "sweep" || (p.kind != "heads" && p.kind != "ffn")) continue;
    Curve& curve = curves[{p.layer, p.kind == "heads"}];
    curve.layer = p.layer;
    curve.heads = p.kind == "heads";
    curve.levels.push_back(p.sparsity);
    curve.metrics.push_back(p.metric);
  }
  if (static_cast<int64_t>(curves.size()) != 2 * c.num_hidden_layers) {
    return absl::InvalidArgumentError(absl::StrCat("the sweep has ", curves.size(), " heads/ffn curves; expected ",
                                                   2 * c.num_hidden_layers,
                                                   " (a structured sweep of this model: 2 per layer)"));
  }
  for (auto& [key, curve] : curves) {
    if (curve.levels.empty() || curve.levels.front() != 0.0) {
      return absl::InvalidArgumentError("the sweep's levels must start at 0; expected the unpruned point first");
    }
  }
  LayerAmounts a = uniform(c, 0.0, 0.0);
  const double total = layers_cost(c, o.budget, o.seq_len);
  auto cost_of = [&](const Curve& curve, double level) {
    const int64_t n = curve.heads ? c.layer_heads(curve.layer) : c.layer_intermediate_size(curve.layer);
    return count(level, n) * (curve.heads ? head_cost(c, o.budget, o.seq_len) : neuron_cost(c, o.budget, o.seq_len));
  };
  while (removed_cost(c, a, o.budget, o.seq_len) < o.target * total) {
    // The cheapest move: any group's jump to any higher level, by metric lost per budget removed.
    Curve* best = nullptr;
    size_t best_level = 0;
    double best_ratio = std::numeric_limits<double>::infinity();
    for (auto& [key, curve] : curves) {
      for (size_t j = curve.at + 1; j < curve.levels.size(); ++j) {
        const double gained = cost_of(curve, curve.levels[j]) - cost_of(curve, curve.levels[curve.at]);
        if (gained <= 0) continue;
        const double ratio = std::max(0.0, curve.metrics[curve.at] - curve.metrics[j]) / gained;
        if (ratio < best_ratio) {
          best_ratio = ratio;
          best = &curve;
          best_level = j;
        }
      }
    }
    if (best == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("allocation target ", o.target,
                                                     " cannot be met with the sweep's levels; expected a target of at "
                                                     "most ",
                                                     removed_cost(c, a, o.budget, o.seq_len) / total));
    }
    best->at = best_level;
    (best->heads ? a.heads : a.ffn)[static_cast<size_t>(best->layer)] = best->levels[best_level];
  }
  return a;
}

StatusOr<PrunedModel> prune_by_amounts(const BertConfig& config, const EncoderWeights& weights,
                                       const LayerAmounts& amounts, Importance importance, const ActivationStats* stats,
                                       bool reconstruct, const ReconstructOptions& reconstruction) {
  BRISK_ASSIGN_OR_RETURN(UnitScores scores, score_units(config, weights, importance, stats));
  BRISK_ASSIGN_OR_RETURN(StructuredPlan plan, plan_by_amounts(config, scores, amounts));
  if (!reconstruct) return prune_structured(config, weights, plan);
  if (stats == nullptr) {
    return absl::InvalidArgumentError("reconstruction needs activation statistics; expected collect_activations()");
  }
  return prune_and_reconstruct(config, weights, plan, *stats, reconstruction);
}

StatusOr<ScheduleResult> iterative_schedule(const BertConfig& config, const EncoderWeights& weights,
                                            const ActivationStats& stats, const SensitivityTable* sweep,
                                            const AccuracyMetric& metric, const ScheduleOptions& o) {
  if (!metric) return absl::InvalidArgumentError("iterative_schedule needs a metric; expected an AccuracyMetric");
  if (!(o.step > 0 && o.step < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("schedule step is ", o.step, "; expected a fraction in (0, 1)"));
  }
  if (o.guided && sweep == nullptr) {
    return absl::InvalidArgumentError("a guided schedule needs a structured sweep; expected analyze_sensitivity()");
  }
  ScheduleResult result;
  result.amounts = uniform(config, 0.0, 0.0);
  const double total = layers_cost(config, o.budget, o.seq_len);
  const int64_t steps = static_cast<int64_t>(std::floor(o.max_target / o.step + 1e-9));
  for (int64_t k = 1; k <= steps; ++k) {
    ScheduleStep step;
    step.target = static_cast<double>(k) * o.step;
    if (o.guided) {
      BRISK_ASSIGN_OR_RETURN(step.amounts, allocate(config, *sweep, {step.target, o.budget, o.seq_len}));
    } else {
      step.amounts = uniform(config, step.target, step.target);
    }
    step.removed = removed_cost(config, step.amounts, o.budget, o.seq_len) / total;
    BRISK_ASSIGN_OR_RETURN(PrunedModel m, prune_by_amounts(config, weights, step.amounts, o.importance, &stats,
                                                           o.reconstruct, o.reconstruction));
    BRISK_ASSIGN_OR_RETURN(auto encoder, BertEncoder::create(m.config, m.weights, Device::kCPU));
    BRISK_ASSIGN_OR_RETURN(step.metric, metric(*encoder));
    step.accepted = step.metric >= o.min_metric;
    if (o.progress) o.progress("schedule", k, steps);
    result.path.push_back(step);
    if (!step.accepted) break;
    result.amounts = step.amounts;
  }
  return result;
}

}  // namespace brisk::prune
