// brisk_prune_curve: what structured pruning costs in accuracy and buys in speed, on all-MiniLM-L6-v2.
//
//   build/release/benchmarks/brisk_prune_curve [--curve] [--guided] [--best] [--threads N] [--rounds N]
//       [--model DIR] [--calib FILE] [--heldout FILE] [--ffn LIST] [--heads LIST] [--targets LIST] [--step S]
//       [--save-dir DIR (--save-ffn F --save-heads H | --save-guided T [--save-budget params|flops])
//        [--save-reconstruct]]
//
// Sections (--curve when none is named and nothing is saved):
//   --curve   uniform amounts, FFN {0.1..0.5} x heads {0, 0.25, 0.5}, each without and with reconstruction
//             (prune_and_reconstruct with its defaults: local, damping 0.1); units ranked by activation importance.
//   --guided  one sensitivity sweep (structure granularity, default levels, activation importance, the built-in
//             mean-cosine metric on the calibration texts); then per target (fraction of the encoder layers' budget
//             to remove; parameters, then FLOPs at 128 tokens) allocate() against uniform(t, t), both reconstructed.
//   --best    iterative_schedule guided by FLOPs at 128 tokens, min_metric 0.97 (mean cosine on the calibration
//             texts), reconstructed; its path, and a row for the amounts it ends on.
// Each row: mean / worst cosine of the held-out sentences' embeddings against the unpruned model, FAQ top-1
// accuracy as brisk_quant_accuracy scores it (benchmarks/accuracy_util.h), and the speed at 32 x 128: the unpruned
// and the pruned encoder's embed() of the same batch, alternated (1 warm-up each, then --rounds rounds, default 7),
// medians of each and their ratio. The batch: 32 sequences of exactly 128 real tokens, each the concatenation of
// consecutive held-out sentences (joined by a space, tokenized, truncated to 128 with [CLS] and [SEP]). The
// unpruned rows time the unpruned model against a second encoder over the same weights: their ratio is the noise.
// LISTs are comma-separated: --ffn/--heads the curve's amounts, --targets the guided section's; --step the schedule's.
// The calibration texts give the activation statistics (importance, reconstruction) and the sweep's metric.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "accuracy_util.h"
#include "brisk/core/parallel.h"
#include "brisk/core/stats.h"
#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/loader.h"
#include "brisk/model/tokenizer.h"
#include "brisk/model/weights.h"
#include "brisk/prune/allocation.h"
#include "brisk/prune/importance.h"
#include "brisk/prune/reconstruct.h"
#include "brisk/prune/sensitivity.h"
#include "brisk/prune/structured.h"
#include "brisk/quant/quantizer.h"
#include "brisk/runtime/runtime.h"

#ifndef BRISK_SOURCE_DIR
#define BRISK_SOURCE_DIR "."
#endif

namespace {

using namespace brisk;
using namespace brisk::prune;
using namespace brisk::bench;
using Clock = std::chrono::steady_clock;

constexpr int64_t kSpeedBatch = 32, kSpeedTokens = 128;

// 32 sequences of exactly 128 tokens from consecutive held-out sentences.
PackedSequences speed_batch(const TextTokenizer& tok, const std::vector<std::string>& sentences) {
  PackedSequences batch;
  size_t next = 0;
  for (int64_t s = 0; s < kSpeedBatch; ++s) {
    std::string text;
    std::vector<int32_t> ids;
    while (static_cast<int64_t>(ids.size()) < kSpeedTokens) {
      text += (text.empty() ? "" : " ") + sentences[next++ % sentences.size()];
      ids = tok.encode(text, kSpeedTokens).value();
    }
    batch.add(ids);
  }
  return batch;
}

struct Args {
  std::string model = brisk::default_model_dir();
  std::string calib = std::string(BRISK_SOURCE_DIR) + "/benchmarks/data/calibration_texts.txt";
  std::string heldout = std::string(BRISK_SOURCE_DIR) + "/benchmarks/data/heldout_sentences.txt";
  bool curve = false, guided = false, best = false;
  int threads = 2, rounds = 7;
  std::string save_dir, save_budget = "params";
  double save_ffn = 0, save_heads = 0, save_guided = -1;
  bool save_reconstruct = false;
  std::vector<double> ffn = {0.1, 0.2, 0.3, 0.4, 0.5}, heads = {0.0, 0.25, 0.5}, targets = {0.2, 0.3, 0.4, 0.5};
  double step = 0.1;  // the iterative schedule's step
};

// Everything the sections share: the unpruned model, the data, and the unpruned model's reference results.
struct Bench {
  BertConfig config;
  Pooling pooling = Pooling::kMean;
  EncoderWeights weights;
  std::unique_ptr<BertEncoder> base;
  std::vector<PackedSequences> calib_batches, heldout_batches;
  PackedSequences speed;
  FaqSet faq;
  std::vector<float> ref_heldout;
  double base_faq = 0;
  ActivationStats stats;
  int rounds = 7;
};

struct Measure {
  double kept_layers = 0, kept_model = 0;  // % of the encoder layers' prunable parameters, % of all parameters
  quant::Fidelity fidelity;
  double faq = 0;
  double base_ms = 0, pruned_ms = 0;  // medians of the interleaved 32 x 128 embed() calls
};

Measure measure(const Bench& b, const PrunedModel& m) {
  Measure r;
  const double total = layers_cost(b.config, Budget::kParameters, kSpeedTokens);
  r.kept_layers = 100.0 * layers_cost(m.config, Budget::kParameters, kSpeedTokens) / total;
  r.kept_model = 100.0 * double(m.weights.num_parameters) / double(b.weights.num_parameters);
  auto encoder = BertEncoder::create(m.config, m.weights, Device::kCPU).value();
  r.fidelity = quant::compare_embeddings(
      b.ref_heldout, quant::embed_all(*encoder, b.heldout_batches, b.pooling).value(), b.config.hidden_size);
  r.faq = b.faq.accuracy(b.faq.retrieve(*encoder, b.pooling));
  std::vector<float> out(static_cast<size_t>(kSpeedBatch * b.config.hidden_size));
  auto time_ms = [&](const BertEncoder& e) {
    const auto t0 = Clock::now();
    if (!e.embed(b.speed, b.pooling, true, out.data()).ok()) std::abort();
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  time_ms(*b.base), time_ms(*encoder);  // warm-up
  std::vector<double> base_ms, pruned_ms;
  for (int i = 0; i < b.rounds; ++i) {
    base_ms.push_back(time_ms(*b.base));
    pruned_ms.push_back(time_ms(*encoder));
  }
  r.base_ms = brisk::percentile(base_ms, 50), r.pruned_ms = brisk::percentile(pruned_ms, 50);
  return r;
}

// The columns every section ends its rows with.
constexpr const char* kMeasureHeader =
    "mean cosine | worst cosine | FAQ top-1 (Δ points) | unpruned seq/s | pruned seq/s | speed vs unpruned |";
constexpr const char* kMeasureRule = "---|---|---|---|---|---|";

std::string cells(const Bench& b, const Measure& r) {
  return fmt::format("{:.5f} | {:.5f} | {:.1f}% ({:+.1f}) | {:.1f} | {:.1f} | **{:.2f}x** |", r.fidelity.mean_cosine,
                     r.fidelity.worst_cosine, r.faq, r.faq - b.base_faq, 1000.0 * kSpeedBatch / r.base_ms,
                     1000.0 * kSpeedBatch / r.pruned_ms, r.base_ms / r.pruned_ms);
}

StatusOr<PrunedModel> prune(const Bench& b, const LayerAmounts& amounts, bool reconstruct) {
  return prune_by_amounts(b.config, b.weights, amounts, Importance::kActivation, &b.stats, reconstruct,
                          ReconstructOptions{});
}

std::string pct(double f) { return fmt::format("{:.0f}", 100.0 * f); }

// "heads% / ffn%" per layer.
std::string amounts_text(const LayerAmounts& a) {
  std::vector<std::string> parts;
  for (size_t l = 0; l < a.heads.size(); ++l)
    parts.push_back(fmt::format("L{} {}/{}", l, pct(a.heads[l]), pct(a.ffn[l])));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void progress(const std::string& what) {
  fmt::print(stderr, "[prune_curve] {}\n", what);
  std::fflush(stderr);
}

void curve(const Bench& b, const Args& a) {
  fmt::print("\n## Uniform amounts (activation importance)\n\n");
  fmt::print("| ffn | heads | reconstruct | parameters kept (layers / model) | {}\n", kMeasureHeader);
  fmt::print("|---|---|---|---|{}\n", kMeasureRule);
  fmt::print("| 0 | 0 | - | 100.0% / 100.0% | {}\n", cells(b, measure(b, PrunedModel{b.config, b.weights, {}})));
  std::fflush(stdout);
  for (double ffn : a.ffn) {
    for (double heads : a.heads) {
      for (bool reconstruct : {false, true}) {
        progress(fmt::format("curve: ffn {} heads {} reconstruct {}", ffn, heads, reconstruct));
        const PrunedModel m = prune(b, uniform(b.config, heads, ffn), reconstruct).value();
        const Measure r = measure(b, m);
        fmt::print("| {} | {} | {} | {:.1f}% / {:.1f}% | {}\n", ffn, heads, reconstruct ? "yes" : "no", r.kept_layers,
                   r.kept_model, cells(b, r));
        std::fflush(stdout);
      }
    }
  }
}

StatusOr<SensitivityTable> sweep(const Bench& b) {
  progress("sensitivity sweep (structure, default levels, activation importance, mean cosine on calibration)");
  SensitivityOptions o;
  o.mode = "sweep";
  o.granularity = "structure";
  o.importance = Importance::kActivation;
  o.pooling = b.pooling;
  int64_t last = -1;
  o.progress = [&last](std::string_view stage, int64_t done, int64_t total) {
    if (done * 10 / total != last) fmt::print(stderr, "  {} {}/{}\n", stage, done, total), last = done * 10 / total;
  };
  const auto t0 = Clock::now();
  auto t = analyze_sensitivity(b.config, b.weights, b.calib_batches, &b.stats, o);
  progress(fmt::format("sweep took {:.0f} s", std::chrono::duration<double>(Clock::now() - t0).count()));
  return t;
}

const char* budget_name(Budget budget) { return budget == Budget::kFlops ? "FLOPs (128 tokens)" : "parameters"; }

void guided(const Bench& b, const Args& a, const SensitivityTable& table) {
  std::vector<std::pair<Budget, double>> chosen;
  for (Budget budget : {Budget::kParameters, Budget::kFlops}) {
    const double total = layers_cost(b.config, budget, kSpeedTokens);
    fmt::print("\n## Guided vs uniform, budget = {} (both reconstructed)\n\n", budget_name(budget));
    fmt::print("| target | method | removed | {}\n|---|---|---|{}\n", kMeasureHeader, kMeasureRule);
    fmt::print("| 0 | unpruned | 0 | {}\n", cells(b, measure(b, PrunedModel{b.config, b.weights, {}})));
    std::vector<std::string> where;
    for (double t : a.targets) {
      const LayerAmounts g = allocate(b.config, table, {t, budget, kSpeedTokens}).value();
      where.push_back(fmt::format("- target {}: {}", t, amounts_text(g)));
      for (const auto& [method, amounts] : {std::pair{"guided", g}, std::pair{"uniform", uniform(b.config, t, t)}}) {
        progress(fmt::format("guided: {} target {} {}", budget_name(budget), t, method));
        const Measure r = measure(b, prune(b, amounts, true).value());
        fmt::print("| {} | {} | {:.3f} | {}\n", t, method,
                   removed_cost(b.config, amounts, budget, kSpeedTokens) / total, cells(b, r));
        std::fflush(stdout);
      }
    }
    fmt::print("\nGuided amounts removed per layer (heads% / ffn%), budget = {}:\n\n{}\n", budget_name(budget),
               fmt::join(where, "\n"));
  }
}

void best(const Bench& b, const Args& a, const SensitivityTable& table) {
  progress(fmt::format("iterative schedule (FLOPs, guided, min_metric 0.97, step {})", a.step));
  ScheduleOptions o;
  o.min_metric = 0.97;
  o.step = a.step;
  o.budget = Budget::kFlops;
  o.seq_len = kSpeedTokens;
  o.guided = true;
  o.reconstruct = true;
  o.reconstruction = ReconstructOptions{};
  const std::vector<float> ref = quant::embed_all(*b.base, b.calib_batches, b.pooling).value();
  const AccuracyMetric metric = mean_cosine_metric(b.calib_batches, ref, b.config.hidden_size, b.pooling);
  const ScheduleResult s = iterative_schedule(b.config, b.weights, b.stats, &table, metric, o).value();
  fmt::print("\n## Iterative schedule (guided by FLOPs at 128 tokens, min mean cosine 0.97 on calibration)\n\n");
  fmt::print("| step target | removed | calibration mean cosine | accepted | amounts (heads% / ffn%) |\n");
  fmt::print("|---|---|---|---|---|\n");
  for (const ScheduleStep& st : s.path) {
    fmt::print("| {:.2f} | {:.3f} | {:.5f} | {} | {} |\n", st.target, st.removed, st.metric, st.accepted ? "yes" : "no",
               amounts_text(st.amounts));
  }
  const Measure r = measure(b, prune(b, s.amounts, true).value());
  fmt::print("\nThe last accepted step, measured like the other rows:\n\n| {}\n|{}\n| {}\n", kMeasureHeader,
             kMeasureRule, cells(b, r));
}

// "0.1,0.2" -> {0.1, 0.2}
std::vector<double> numbers(const std::string& text) {
  std::vector<double> out;
  for (const std::string& x : std::vector<std::string>(absl::StrSplit(text, ','))) out.push_back(std::stod(x));
  return out;
}

std::optional<Args> parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(f + " needs a value");
      return argv[++i];
    };
    try {
      if (f == "--curve")
        a.curve = true;
      else if (f == "--guided")
        a.guided = true;
      else if (f == "--best")
        a.best = true;
      else if (f == "--save-reconstruct")
        a.save_reconstruct = true;
      else if (f == "--model")
        a.model = value();
      else if (f == "--calib")
        a.calib = value();
      else if (f == "--heldout")
        a.heldout = value();
      else if (f == "--threads")
        a.threads = std::stoi(value());
      else if (f == "--rounds")
        a.rounds = std::stoi(value());
      else if (f == "--save-dir")
        a.save_dir = value();
      else if (f == "--save-ffn")
        a.save_ffn = std::stod(value());
      else if (f == "--save-heads")
        a.save_heads = std::stod(value());
      else if (f == "--save-guided")
        a.save_guided = std::stod(value());
      else if (f == "--save-budget")
        a.save_budget = value();
      else if (f == "--ffn")
        a.ffn = numbers(value());
      else if (f == "--heads")
        a.heads = numbers(value());
      else if (f == "--targets")
        a.targets = numbers(value());
      else if (f == "--step")
        a.step = std::stod(value());
      else
        throw std::invalid_argument("unknown flag " + f + " (see the comment at the top of prune_curve.cc)");
    } catch (const std::exception& e) {
      fmt::print(stderr, "brisk_prune_curve: {}\n", e.what());
      return std::nullopt;
    }
  }
  if (!a.curve && !a.guided && !a.best && a.save_dir.empty()) a.curve = true;
  return a;
}

int run(const Args& a) {
  ScopedNumThreads threads(a.threads);
  Bench b;
  b.rounds = a.rounds;
  LoadedModel loaded = load_model(a.model, {.fp32_directory_only = true}).value();
  b.config = loaded.config;
  b.pooling = loaded.pooling.mode;
  const TextTokenizer& tok = loaded.tokenizer;
  b.weights = std::move(loaded.weights);
  const std::vector<std::string> calib = read_lines(a.calib), heldout = read_lines(a.heldout);
  std::optional<FaqSet> faq = load_faq(BRISK_SOURCE_DIR, tok);
  if (calib.empty() || heldout.empty() || !faq) {
    fmt::print(stderr, "calibration ({}), held-out ({}) or FAQ data are missing\n", a.calib, a.heldout);
    return 1;
  }
  b.faq = std::move(*faq);
  b.calib_batches = pack(tok, calib, 32);
  b.heldout_batches = pack(tok, heldout, 32);
  b.speed = speed_batch(tok, heldout);
  b.base = BertEncoder::create(b.config, b.weights, Device::kCPU).value();
  b.ref_heldout = quant::embed_all(*b.base, b.heldout_batches, b.pooling).value();
  b.base_faq = b.faq.accuracy(b.faq.retrieve(*b.base, b.pooling));
  progress("collecting activation statistics on the calibration texts");
  b.stats = collect_activations(*b.base, b.calib_batches).value();

  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M %Z", std::localtime(&now));
  fmt::print("# brisk_prune_curve\n\n- date: {}; threads: {}; model: {}\n", date, a.threads, a.model);
  fmt::print("- {} calibration texts; {} held-out sentences; FAQ: {} questions ({} answerable) against {} entries\n",
             calib.size(), heldout.size(), b.faq.questions.size(), b.faq.answerable(), b.faq.entries.size());
  fmt::print("- unpruned FAQ top-1: {:.1f}%; speed batch: {} x {} tokens, 1 warm-up + {} interleaved rounds\n",
             b.base_faq, kSpeedBatch, b.speed.total_tokens() / kSpeedBatch, b.rounds);
  std::fflush(stdout);

  if (a.curve) curve(b, a);
  std::optional<SensitivityTable> table;
  const bool need_sweep = a.guided || a.best || (!a.save_dir.empty() && a.save_guided >= 0);
  if (need_sweep) table = sweep(b).value();
  if (a.guided) guided(b, a, *table);
  if (a.best) best(b, a, *table);
  if (!a.save_dir.empty()) {
    const Budget budget = a.save_budget == "flops" ? Budget::kFlops : Budget::kParameters;
    const LayerAmounts amounts = a.save_guided >= 0
                                     ? allocate(b.config, *table, {a.save_guided, budget, kSpeedTokens}).value()
                                     : uniform(b.config, a.save_heads, a.save_ffn);
    const PrunedModel m = prune(b, amounts, a.save_reconstruct).value();
    const Measure r = measure(b, m);
    if (const Status s = save_pruned_model(m, a.model, a.save_dir); !s.ok()) {
      fmt::print(stderr, "saving to {} failed: {}\n", a.save_dir, s.ToString());
      return 1;
    }
    fmt::print("\n## Saved to {}\n\n- amounts (heads% / ffn%): {}\n- reconstruct: {}\n\n| {}\n|{}\n| {}\n", a.save_dir,
               amounts_text(amounts), a.save_reconstruct ? "yes" : "no", kMeasureHeader, kMeasureRule, cells(b, r));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Args> args = parse(argc, argv);
  return args ? run(*args) : 2;
}
