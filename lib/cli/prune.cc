// `brisk sensitivity` and `brisk prune`. See prune.h.
#include "prune.h"

#include "brisk/model/loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "absl/strings/str_split.h"
#include "brisk/core/parallel.h"
#include "brisk/model/tokenizer.h"
#include "brisk/prune/allocation.h"
#include "brisk/prune/mask.h"
#include "brisk/prune/sensitivity.h"
#include "brisk/prune/torchscript.h"
#include "brisk/quant/quantizer.h"
#include "brisk/runtime/runtime.h"
#include "printable.h"
#include "progress_bar.h"
#include "text_batches.h"

namespace brisk::cli {
namespace {

using namespace brisk::prune;

StatusOr<std::vector<double>> parse_levels(const std::string& text) {
  if (text.empty()) return SensitivityOptions{}.levels;
  std::vector<double> levels;
  for (const std::string& part : std::vector<std::string>(absl::StrSplit(text, ','))) {
    double v = 0;
    if (!absl::SimpleAtod(part, &v)) {
      return absl::InvalidArgumentError(
          fmt::format("--levels has '{}'; expected comma-separated fractions such as 0,0.25,0.5", part));
    }
    BRISK_RETURN_IF_ERROR(check_amount(v, "--levels"));
    levels.push_back(v);
  }
  return levels;
}

// What mattered least: zero mode ranks the layers by their heads' mean drop; a sweep ranks groups at mid level.
void print_summary(const SensitivityTable& t) {
  fmt::print("{} over {} points; baseline {} = {:.5f}\n", t.mode, t.points.size(), t.metric_name, t.baseline);
  std::map<std::string, std::pair<double, int>> by_series;
  for (const SensitivityPoint& p : t.points) {
    if (t.mode == "zero" ? p.kind != "head" : std::fabs(p.sparsity - 0.5) > 1e-9) continue;
    auto& [sum, n] = by_series[t.mode == "zero" ? p.series : p.series + " " + p.kind];
    sum += t.baseline - p.metric;
    ++n;
  }
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [name, v] : by_series) ranked.emplace_back(v.first / v.second, name);
  std::sort(ranked.begin(), ranked.end());
  fmt::print("{} (least sensitive first):\n",
             t.mode == "zero" ? "mean drop when one head is removed" : "drop at sparsity 0.5");
  for (const auto& [drop, name] : ranked) fmt::print("  {:<24} {:.6f}\n", printable(name), drop);
  for (const SensitivityPoint& p : t.points) {
    if (p.kind == "layer") fmt::print("  remove {:<32} drop {:.6f}\n", printable(p.unit), t.baseline - p.metric);
  }
}

Status torchscript_sensitivity_cli(const SensitivityFlags& f, const std::vector<double>& levels, ProgressBar& bar) {
  BRISK_ASSIGN_OR_RETURN(TorchScriptModel model, TorchScriptModel::load(f.model));
  const std::string tok_dir = f.tokenizer.empty() ? std::filesystem::path(f.model).parent_path().string() : f.tokenizer;
  BRISK_ASSIGN_OR_RETURN(TextTokenizer tok, TextTokenizer::from_model_dir(tok_dir.empty() ? "." : tok_dir));
  BRISK_ASSIGN_OR_RETURN(auto batches, read_text_batches(f.texts, tok, f.max_seq_len, "texts", f.max_texts));
  BRISK_ASSIGN_OR_RETURN(auto inputs, token_inputs(model, batches));
  TorchSensitivityOptions o;
  o.mode = f.mode;
  o.levels = levels;
  BRISK_ASSIGN_OR_RETURN(o.metric, output_cosine_metric(model, std::move(inputs)));
  o.progress = bar.callback();
  BRISK_ASSIGN_OR_RETURN(SensitivityTable t, torchscript_sensitivity(model, o));
  bar.finish();
  BRISK_RETURN_IF_ERROR(write_sensitivity_outputs(t, f.out));
  print_summary(t);
  return absl::OkStatus();
}

Status sensitivity(const SensitivityFlags& f) {
  ScopedNumThreads threads(f.threads);
  BRISK_ASSIGN_OR_RETURN(std::vector<double> levels, parse_levels(f.levels));
  ProgressBar bar;
  if (!std::filesystem::is_directory(f.model)) return torchscript_sensitivity_cli(f, levels, bar);
  // --max-seq-len is capped at what the model's positions hold (load_model resolves it into m.max_seq_len).
  BRISK_ASSIGN_OR_RETURN(LoadedModel m,
                         load_model(f.model, {.max_seq_len = f.max_seq_len, .fp32_directory_only = true}));
  BRISK_ASSIGN_OR_RETURN(auto batches, read_text_batches(f.texts, m.tokenizer, m.max_seq_len, "texts", f.max_texts));
  SensitivityOptions o;
  o.mode = f.mode;
  o.granularity = f.granularity;
  o.levels = levels;
  o.pooling = m.pooling.mode;
  o.progress = bar.callback();
  BRISK_ASSIGN_OR_RETURN(o.importance, parse_importance(f.importance));
  BRISK_ASSIGN_OR_RETURN(SensitivityTable t, analyze_sensitivity(m.config, m.weights, batches, nullptr, o));
  bar.finish();
  BRISK_RETURN_IF_ERROR(write_sensitivity_outputs(t, f.out));
  print_summary(t);
  fmt::print("wrote {}/sensitivity.csv, .json, .svg\n", printable(f.out));
  return absl::OkStatus();
}

StatusOr<std::vector<int64_t>> parse_int_list(const std::string& text, const char* flag) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  for (const std::string& part : std::vector<std::string>(absl::StrSplit(text, ','))) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v)) {
      return absl::InvalidArgumentError(fmt::format("{} has '{}'; expected comma-separated layer numbers", flag, part));
    }
    out.push_back(v);
  }
  return out;
}

// Per-layer amounts: uniform, guided by a sweep, or found by the iterative schedule.
StatusOr<LayerAmounts> choose_amounts(const PruneFlags& f, const LoadedModel& m,
                                      const std::vector<PackedSequences>& batches, const ActivationStats& stats,
                                      Importance importance, ProgressBar& bar) {
  const Budget budget = f.target_flops > 0 ? Budget::kFlops : Budget::kParameters;
  std::optional<SensitivityTable> sweep;
  if (f.guided) {
    if (!f.sweep.empty()) {
      BRISK_ASSIGN_OR_RETURN(std::string text, read_text_file(f.sweep));
      BRISK_ASSIGN_OR_RETURN(sweep, SensitivityTable::from_json(text, f.sweep));
    } else {
      SensitivityOptions o;
      o.importance = importance;
      o.pooling = m.pooling.mode;
      o.progress = bar.callback();
      BRISK_ASSIGN_OR_RETURN(sweep, analyze_sensitivity(m.config, m.weights, batches, &stats, o));
    }
  }
  if (f.schedule) {
    BRISK_ASSIGN_OR_RETURN(auto unpruned, BertEncoder::create(m.config, m.weights, Device::kCPU));
    BRISK_ASSIGN_OR_RETURN(std::vector<float> ref, quant::embed_all(*unpruned, batches, m.pooling.mode));
    ScheduleOptions o;
    o.step = f.step;
    o.min_metric = f.min_cosine;
    o.budget = budget;
    o.guided = f.guided;
    o.reconstruct = f.reconstruct;
    o.reconstruction.damping = f.damping;
    o.reconstruction.sequential = f.reconstruct_mode == "sequential";
    o.importance = importance;
    o.progress = bar.callback();
    BRISK_ASSIGN_OR_RETURN(
        ScheduleResult r,
        iterative_schedule(m.config, m.weights, stats, sweep ? &*sweep : nullptr,
                           mean_cosine_metric(batches, ref, m.config.hidden_size, m.pooling.mode), o));
    bar.finish();
    fmt::print("schedule path ({} budget removed -> calibration cosine):\n",
               budget == Budget::kFlops ? "FLOPs" : "parameter");
    for (const ScheduleStep& s : r.path) {
      fmt::print("  target {:.2f}  removed {:.3f}  cosine {:.5f}  {}\n", s.target, s.removed, s.metric,
                 s.accepted ? "accepted" : "rejected: below --min-cosine");
    }
    return r.amounts;
  }
  if (f.guided) {
    const double target = f.target_flops > 0 ? f.target_flops : f.target_params;
    return allocate(m.config, *sweep, {target, budget, 128});
  }
  return uniform(m.config, f.heads, f.ffn);
}

Status prune_cmd(const PruneFlags& f) {
  ScopedNumThreads threads(f.threads);
  if (f.guided && !f.schedule && (f.target_params > 0) == (f.target_flops > 0)) {
    return absl::InvalidArgumentError("--guided needs exactly one of --target-params and --target-flops");
  }
  BRISK_ASSIGN_OR_RETURN(LoadedModel m,
                         load_model(f.model, {.max_seq_len = f.max_seq_len, .fp32_directory_only = true}));
  BRISK_ASSIGN_OR_RETURN(auto batches, read_text_batches(f.calib, m.tokenizer, m.max_seq_len, "calibration"));
  BRISK_ASSIGN_OR_RETURN(Importance importance, parse_importance(f.importance));
  BRISK_ASSIGN_OR_RETURN(auto unpruned, BertEncoder::create(m.config, m.weights, Device::kCPU));
  BRISK_ASSIGN_OR_RETURN(ActivationStats stats, collect_activations(*unpruned, batches));
  ProgressBar bar;
  BRISK_ASSIGN_OR_RETURN(LayerAmounts amounts, choose_amounts(f, m, batches, stats, importance, bar));
  BRISK_ASSIGN_OR_RETURN(UnitScores scores, score_units(m.config, m.weights, importance, &stats));
  BRISK_ASSIGN_OR_RETURN(StructuredPlan plan, plan_by_amounts(m.config, scores, amounts));
  std::vector<std::string> units;
  if (!f.units.empty()) units = absl::StrSplit(f.units, ',');
  BRISK_ASSIGN_OR_RETURN(std::vector<int64_t> layers, parse_int_list(f.layers, "--layers"));
  for (int64_t l : layers) units.push_back(layer_unit_name(m.config, l));
  BRISK_ASSIGN_OR_RETURN(StructuredPlan extra, parse_units(m.config, units));
  for (auto& [l, h] : extra.heads) plan.heads[l].insert(plan.heads[l].end(), h.begin(), h.end());
  for (auto& [l, n] : extra.neurons) plan.neurons[l].insert(plan.neurons[l].end(), n.begin(), n.end());
  plan.layers = extra.layers;
  PrunedModel pruned;
  if (f.reconstruct) {
    ReconstructOptions r;
    r.damping = f.damping;
    r.sequential = f.reconstruct_mode == "sequential";
    BRISK_ASSIGN_OR_RETURN(pruned, prune_and_reconstruct(m.config, m.weights, plan, stats, r));
  } else {
    BRISK_ASSIGN_OR_RETURN(pruned, prune_structured(m.config, m.weights, plan));
  }
  if (f.unstructured > 0 || !f.n_m.empty()) {
    UnstructuredOptions u;
    u.amount = f.unstructured;
    u.global = f.global;
    if (!f.n_m.empty()) {
      const std::vector<std::string> nm = absl::StrSplit(f.n_m, ':');
      if (nm.size() != 2 || !absl::SimpleAtoi(nm[0], &u.n) || !absl::SimpleAtoi(nm[1], &u.m)) {
        return absl::InvalidArgumentError(fmt::format("--n-m is '{}'; expected N:M such as 2:4", f.n_m));
      }
      u.n_m = true;
    }
    BRISK_ASSIGN_OR_RETURN(UnstructuredResult r, prune_unstructured(pruned.weights, pruned.config, u));
    fmt::print("unstructured: {} of {} weights zeroed (the shapes stay; only structured pruning is faster)\n", r.pruned,
               r.total);
  }
  pruned.head_tensors = m.head_tensors;
  if (f.out.ends_with(".safetensors")) {
    BRISK_RETURN_IF_ERROR(save_pruned_model_file(pruned, f.model, m.weights.weights_file, f.out));
  } else {
    BRISK_RETURN_IF_ERROR(save_pruned_model(pruned, f.model, f.out));
  }

  const BertConfig& c = pruned.config;
  fmt::print("{:<8} {:>6} {:>6}\n", "layer", "heads", "ffn");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    fmt::print("{:<8} {:>6} {:>6}\n", l, c.layer_heads(l), c.layer_intermediate_size(l));
  }
  BRISK_ASSIGN_OR_RETURN(auto encoder, BertEncoder::create(c, pruned.weights, Device::kCPU));
  BRISK_ASSIGN_OR_RETURN(std::vector<float> ref, quant::embed_all(*unpruned, batches, m.pooling.mode));
  BRISK_ASSIGN_OR_RETURN(std::vector<float> got, quant::embed_all(*encoder, batches, m.pooling.mode));
  const quant::Fidelity fid = quant::compare_embeddings(ref, got, c.hidden_size);
  const int64_t before = m.weights.num_parameters, after = pruned.weights.num_parameters;
  fmt::print("parameters {} -> {} ({:.1f}%); layer FLOPs at 128 tokens {:.1f}% of the unpruned\n", before, after,
             100.0 * double(after) / double(before),
             100.0 * layers_cost(c, Budget::kFlops, 128) / layers_cost(m.config, Budget::kFlops, 128));
  fmt::print("calibration-set cosine vs unpruned: mean {:.5f}, worst {:.5f}{}\n", fid.mean_cosine, fid.worst_cosine,
             f.reconstruct ? " (reconstructed on this set)" : "");
  fmt::print("wrote {}\n", printable(f.out));
  return absl::OkStatus();
}

int report(const Status& s) {
  if (s.ok()) return 0;
  fmt::print(stderr, "brisk: error: {}\n", printable(std::string(s.message())));
  return 1;
}

}  // namespace

void SensitivityFlags::add_to(CLI::App& cmd) {
  model = brisk::default_model_dir();
  cmd.add_option("--model", model, "model directory, or a TorchScript module (.pt)")->capture_default_str();
  cmd.add_option("--texts", texts, "evaluation texts, one a line")->required();
  cmd.add_option("--out", out, "directory for sensitivity.csv, .json and .svg")->required();
  cmd.add_option("--mode", mode, "sweep: each group at each level; zero: one layer or head at a time")
      ->check(CLI::IsMember({"sweep", "zero"}))
      ->capture_default_str();
  cmd.add_option("--granularity", granularity, "sweep: structure (heads, ffn) or tensor (each weight)")
      ->check(CLI::IsMember({"structure", "tensor"}))
      ->capture_default_str();
  cmd.add_option("--levels", levels, "sweep levels, comma-separated (default 0,0.1,...,0.9)");
  cmd.add_option("--importance", importance, "order units are removed in: activation, l1, l2")->capture_default_str();
  cmd.add_option("--tokenizer", tokenizer, "tokenizer directory for a .pt module (default: its folder)");
  cmd.add_option("--max-texts", max_texts, "use only the first N texts; 0 = all")->check(CLI::Range(0, 1 << 30));
  cmd.add_option("--threads", threads, "compute threads; 0 = the CPUs this process may use")
      ->check(CLI::Range(0, brisk::kMaxThreads));
  cmd.add_option("--max-seq-len", max_seq_len, "tokens per text")->check(CLI::Range(2, 512))->capture_default_str();
}

void PruneFlags::add_to(CLI::App& cmd) {
  model = brisk::default_model_dir();
  cmd.add_option("--model", model, "fp32 model directory")->capture_default_str();
  cmd.add_option("--calib", calib, "calibration texts, one a line")->required();
  cmd.add_option("--out", out, "the pruned model directory to write, or a brisk model file (*.safetensors)")
      ->required();
  cmd.add_option("--heads", heads, "fraction of each layer's heads to remove")->check(CLI::Range(0.0, 0.999));
  cmd.add_option("--ffn", ffn, "fraction of each layer's ffn neurons to remove")->check(CLI::Range(0.0, 0.999));
  cmd.add_option("--layers", layers, "whole layers to remove, e.g. 4,5");
  cmd.add_option("--units", units, "units to remove by name, e.g. encoder.layer.5.attention.head.3");
  cmd.add_flag("--guided", guided, "allocate per-layer amounts from a sensitivity sweep");
  cmd.add_option("--target-params", target_params, "--guided: fraction of layer parameters to remove")
      ->check(CLI::Range(0.0, 0.999));
  cmd.add_option("--target-flops", target_flops, "--guided: fraction of layer FLOPs (128 tokens) to remove")
      ->check(CLI::Range(0.0, 0.999));
  cmd.add_option("--sweep", sweep, "--guided: a sensitivity.json from brisk sensitivity (else swept here)");
  cmd.add_flag("--schedule", schedule, "prune step by step while the cosine stays above --min-cosine");
  cmd.add_option("--step", step, "--schedule: budget fraction added per step")->check(CLI::Range(0.01, 0.9));
  cmd.add_option("--min-cosine", min_cosine, "--schedule: calibration cosine to keep")->check(CLI::Range(0.0, 1.0));
  cmd.add_flag("--reconstruct", reconstruct, "re-fit the following projections by ridge least squares");
  cmd.add_option("--damping", damping, "ridge damping, relative")->check(CLI::Range(0.0, 1e6))->capture_default_str();
  cmd.add_option("--reconstruct-mode", reconstruct_mode,
                 "sequential: layer by layer on the pruned model's activations; local: each projection alone")
      ->check(CLI::IsMember({"sequential", "local"}))
      ->capture_default_str();
  cmd.add_option("--importance", importance, "activation, l1 or l2")->capture_default_str();
  cmd.add_option("--unstructured", unstructured, "then zero this fraction of each weight by magnitude")
      ->check(CLI::Range(0.0, 0.999));
  cmd.add_flag("--global", global, "--unstructured: one ranking across layers");
  cmd.add_option("--n-m", n_m, "then apply N:M semi-structured masks, e.g. 2:4");
  cmd.add_option("--threads", threads, "compute threads; 0 = the CPUs this process may use")
      ->check(CLI::Range(0, brisk::kMaxThreads));
  cmd.add_option("--max-seq-len", max_seq_len, "tokens per text")->check(CLI::Range(2, 512))->capture_default_str();
}

int run_sensitivity(const SensitivityFlags& flags) { return report(sensitivity(flags)); }
int run_prune(const PruneFlags& flags) { return report(prune_cmd(flags)); }

}  // namespace brisk::cli
