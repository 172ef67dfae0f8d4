// Sensitivity analysis: sweeps and one-unit-at-a-time removal. See include/brisk/prune/sensitivity.h.
#include "brisk/prune/sensitivity.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "brisk/prune/mask.h"
#include "brisk/prune/structured.h"
#include "brisk/model/fidelity.h"

namespace brisk::prune {

namespace {

// The linear roles within a layer, in linear_slots order (BERT names; plot panels).
constexpr const char* kRoles[6] = {"query", "key", "value", "attention.output", "intermediate", "output"};

struct Evaluator {
  const AccuracyMetric& metric;
  const Progress& progress;
  int64_t done = 0, total = 0;

  StatusOr<double> operator()(const BertConfig& c, const EncoderWeights& w, const std::string& what) {
    BRISK_ASSIGN_OR_RETURN(auto encoder, BertEncoder::create(c, w, Device::kCPU));
    BRISK_ASSIGN_OR_RETURN(double m, metric(*encoder));
    ++done;
    if (progress) progress(what, done, total);
    return m;
  }
};

int64_t parameters_of(const BertConfig& c) { return EncoderWeights::expected_num_parameters(c); }

Status structured_sweep(const BertConfig& c, const EncoderWeights& w, const ActivationStats* stats,
                        const SensitivityOptions& o, Evaluator& eval, SensitivityTable& table) {
  BRISK_ASSIGN_OR_RETURN(UnitScores scores, score_units(c, w, o.importance, stats));
  const int64_t base = parameters_of(c);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    for (const char* kind : {"heads", "ffn"}) {
      const bool heads = std::string(kind) == "heads";
      const std::string unit = heads ? absl::StrCat(layer_unit_name(c, l), ".attention")
                                     : absl::StrCat(layer_unit_name(c, l), ".",
                                                    c.family == ModelFamily::kDistilBert ? "ffn" : "intermediate");
      for (double level : o.levels) {
        SensitivityPoint p{unit, kind, absl::StrCat("layer ", l), l, -1, level, 0, table.baseline};
        if (level > 0) {
          LayerAmounts a = uniform(c, 0.0, 0.0);
          (heads ? a.heads : a.ffn)[static_cast<size_t>(l)] = level;
          BRISK_ASSIGN_OR_RETURN(StructuredPlan plan, plan_by_amounts(c, scores, a));
          BRISK_ASSIGN_OR_RETURN(PrunedModel m, prune_structured(c, w, plan));
          p.parameters_removed = base - parameters_of(m.config);
          BRISK_ASSIGN_OR_RETURN(p.metric, eval(m.config, m.weights, unit));
        }
        table.points.push_back(p);
      }
    }
  }
  return absl::OkStatus();
}

Status tensor_sweep(const BertConfig& c, const EncoderWeights& w, const SensitivityOptions& o, Evaluator& eval,
                    SensitivityTable& table) {
  const std::vector<std::string> names = layer_names(c);  // the linear layers first, 6 a layer
  for (size_t i = 0; i < static_cast<size_t>(6 * c.num_hidden_layers); ++i) {
    const int64_t layer = static_cast<int64_t>(i / 6);
    for (double level : o.levels) {
      SensitivityPoint p{names[i] + ".weight", kRoles[i % 6], absl::StrCat("layer ", layer), layer, -1, level, 0,
                         table.baseline};
      if (level > 0) {
        UnstructuredOptions u;
        u.amount = level;
        u.layers = {names[i]};
        EncoderWeights pruned = w;
        BRISK_ASSIGN_OR_RETURN(UnstructuredResult r, prune_unstructured(pruned, c, u));
        p.parameters_removed = r.pruned;
        BRISK_ASSIGN_OR_RETURN(p.metric, eval(c, pruned, p.unit));
      }
      table.points.push_back(p);
    }
  }
  return absl::OkStatus();
}

Status zero_units(const BertConfig& c, const EncoderWeights& w, Evaluator& eval, SensitivityTable& table) {
  const int64_t base = parameters_of(c);
  auto removed = [&](const StructuredPlan& plan, SensitivityPoint p) -> Status {
    BRISK_ASSIGN_OR_RETURN(PrunedModel m, prune_structured(c, w, plan));
    p.parameters_removed = base - parameters_of(m.config);
    BRISK_ASSIGN_OR_RETURN(p.metric, eval(m.config, m.weights, p.unit));
    table.points.push_back(p);
    return absl::OkStatus();
  };
  if (c.num_hidden_layers > 1) {
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      StructuredPlan plan;
      plan.layers = {l};
      BRISK_RETURN_IF_ERROR(removed(plan, {layer_unit_name(c, l), "layer", "layers", l, -1, 1.0, 0, 0.0}));
    }
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::vector<int64_t> heads = kept_heads(c, l);
    if (heads.size() < 2) continue;  // a layer's last head is not removable alone
    for (int64_t h : heads) {
      StructuredPlan plan;
      plan.heads[l] = {h};
      BRISK_RETURN_IF_ERROR(removed(plan, {head_unit_name(c, l, h), "head", absl::StrCat("layer ", l), l, h,
                                           1.0 / static_cast<double>(heads.size()), 0, 0.0}));
    }
  }
  return absl::OkStatus();
}

}  // namespace

AccuracyMetric mean_cosine_metric(std::vector<PackedSequences> batches, std::vector<float> reference, int64_t hidden,
                                  Pooling pooling) {
  return [batches = std::move(batches), reference = std::move(reference), hidden,
          pooling](const BertEncoder& candidate) -> StatusOr<double> {
    BRISK_ASSIGN_OR_RETURN(std::vector<float> e, embed_all(candidate, batches, pooling));
    return compare_embeddings(reference, e, hidden).mean_cosine;
  };
}

StatusOr<SensitivityTable> analyze_sensitivity(const BertConfig& config, const EncoderWeights& weights,
                                               const std::vector<PackedSequences>& eval_batches,
                                               const ActivationStats* stats, const SensitivityOptions& options) {
  BRISK_RETURN_IF_ERROR(check_prunable(config, "analyze_sensitivity"));
  const SensitivityOptions& o = options;
  if (o.mode != "sweep" && o.mode != "zero") {
    return absl::InvalidArgumentError(absl::StrCat("sensitivity mode is \"", o.mode, "\"; expected sweep or zero"));
  }
  if (o.granularity != "structure" && o.granularity != "tensor") {
    return absl::InvalidArgumentError(
        absl::StrCat("sensitivity granularity is \"", o.granularity, "\"; expected structure or tensor"));
  }
  for (double level : o.levels) BRISK_RETURN_IF_ERROR(check_amount(level, "sensitivity level"));
  if (eval_batches.empty() && !o.metric) {
    return absl::InvalidArgumentError("sensitivity analysis has no evaluation text; expected at least one batch");
  }
  AccuracyMetric metric = o.metric;
  BRISK_ASSIGN_OR_RETURN(auto unpruned, BertEncoder::create(config, weights, Device::kCPU));
  if (!metric) {
    BRISK_ASSIGN_OR_RETURN(std::vector<float> reference, embed_all(*unpruned, eval_batches, o.pooling));
    metric = mean_cosine_metric(eval_batches, std::move(reference), config.hidden_size, o.pooling);
  }
  SensitivityTable table;
  table.mode = o.mode;
  table.metric_name = o.metric ? o.metric_name : "mean_cosine";
  BRISK_ASSIGN_OR_RETURN(table.baseline, metric(*unpruned));
  // A structured sweep in activation order measures the activations on the evaluation text unless given them.
  std::optional<ActivationStats> collected;
  if (stats == nullptr && o.mode == "sweep" && o.granularity == "structure" &&
      o.importance == Importance::kActivation && !eval_batches.empty()) {
    BRISK_ASSIGN_OR_RETURN(collected, collect_activations(*unpruned, eval_batches));
    stats = &*collected;
  }
  unpruned.reset();
  Evaluator eval{metric, o.progress};
  int64_t levels = 0;
  for (double level : o.levels) levels += level > 0;
  if (o.mode == "zero") {
    eval.total = config.num_hidden_layers > 1 ? config.num_hidden_layers : 0;
    for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
      if (config.layer_heads(l) > 1) eval.total += config.layer_heads(l);
    }
    BRISK_RETURN_IF_ERROR(zero_units(config, weights, eval, table));
  } else if (o.granularity == "tensor") {
    eval.total = 6 * config.num_hidden_layers * levels;
    BRISK_RETURN_IF_ERROR(tensor_sweep(config, weights, o, eval, table));
  } else {
    eval.total = 2 * config.num_hidden_layers * levels;
    BRISK_RETURN_IF_ERROR(structured_sweep(config, weights, stats, o, eval, table));
  }
  return table;
}

}  // namespace brisk::prune
