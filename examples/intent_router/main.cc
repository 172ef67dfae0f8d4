// intent_router: routes customer-service questions to intents with a few-shot intent head.
//
// The head is fitted once, without Python or a GPU, from a few labelled examples per intent:
//   brisk fit-intents --examples examples/intent_router/data/train.tsv --out head.safetensors
// The router then loads it through brisk::Runtime (RuntimeOptions::classification_head: the runtime classifies
// with it over the model's sentence embeddings) and calls Runtime::classify for each question. A question whose top
// probability is below --threshold (default: the head file's unknown_threshold) is routed to "unknown", a human
// agent in a real desk.
//
//   intent_router --head head.safetensors                 # one question per stdin line -> intent, probability
//   intent_router --head head.safetensors --eval examples/intent_router/data/heldout.tsv
//   intent_router --head head.safetensors --eval heldout.tsv --threshold 0.3 --json
//
// Output per question: label<TAB>probability<TAB>question (the top intent and its probability, also when the
// label is "unknown"). --eval reads label<TAB>text lines (out-of-scope questions labelled "unknown"), classifies
// each question alone (as a live desk would) and reports the in-scope accuracy (the right intent, not "unknown"),
// the precision and recall of "unknown", the overall accuracy and the latency per question (p50, p99); --json
// prints the report as one JSON object instead.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/stats.h"
#include "brisk/core/status.h"
#include "brisk/model/intent_head.h"
#include "brisk/runtime/runtime.h"

namespace {

using brisk::Status;
using brisk::StatusOr;
using Clock = std::chrono::steady_clock;

constexpr const char* kUnknown = "unknown";

struct Options {
  std::string model_dir;
  std::string head;
  std::string eval;
  double threshold = -1.0;  // < 0: the head file's unknown_threshold
  int threads = 0;
  bool json = false;
  bool quiet = false;
};

struct Routed {
  std::string label;  // the top intent, or "unknown" below the threshold
  std::string top;    // the top intent
  float probability = 0.0f;
};

StatusOr<Routed> route(const brisk::Runtime& rt, std::string_view question, double threshold) {
  const std::string_view texts[] = {question};
  BRISK_ASSIGN_OR_RETURN(std::vector<std::vector<brisk::LabelScore>> scores, rt.classify(texts, /*top_k=*/1));
  if (scores.size() != 1 || scores[0].empty()) {
    return absl::InternalError("Runtime::classify returned no label for the question");
  }
  const brisk::LabelScore& best = scores[0][0];
  return Routed{best.score >= threshold ? best.label : kUnknown, best.label, best.score};
}

int fail(const Status& s) {
  fmt::print(stderr, "intent_router: error: {}\n", std::string(s.message()));
  return 1;
}

int run_stream(const brisk::Runtime& rt, double threshold) {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    StatusOr<Routed> r = route(rt, line, threshold);
    if (!r.ok()) return fail(r.status());
    fmt::print("{}\t{:.3f}\t{}\n", r->label, r->probability, line);
    std::fflush(stdout);
  }
  return 0;
}

int run_eval(const brisk::Runtime& rt, const Options& o, double threshold, const std::vector<std::string>& labels) {
  StatusOr<brisk::IntentExamples> ex = brisk::read_intent_examples(o.eval);
  if (!ex.ok()) return fail(ex.status());
  for (const std::string& gold : ex->labels) {
    if (gold != kUnknown && std::find(labels.begin(), labels.end(), gold) == labels.end()) {
      fmt::print(stderr, "intent_router: warning: {} has the label '{}', which the head does not know\n", o.eval, gold);
    }
  }
  if (StatusOr<Routed> warm = route(rt, "warm-up question", threshold); !warm.ok()) return fail(warm.status());

  int64_t in_scope = 0, in_scope_right = 0, unknown_gold = 0, unknown_predicted = 0, unknown_right = 0, right = 0;
  std::vector<double> ms;
  nlohmann::json mistakes = nlohmann::json::array();
  for (int64_t i = 0; i < ex->size(); ++i) {
    const std::string& text = ex->texts[static_cast<size_t>(i)];
    const std::string& gold = ex->labels[static_cast<size_t>(ex->label_ids[static_cast<size_t>(i)])];
    const auto t0 = Clock::now();
    StatusOr<Routed> r = route(rt, text, threshold);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!r.ok()) return fail(r.status());
    const bool is_unknown = gold == kUnknown, said_unknown = r->label == kUnknown;
    unknown_gold += is_unknown;
    unknown_predicted += said_unknown;
    unknown_right += is_unknown && said_unknown;
    in_scope += !is_unknown;
    in_scope_right += !is_unknown && r->label == gold;
    right += r->label == gold;
    if (r->label != gold) {
      mistakes.push_back({{"line", ex->lines[static_cast<size_t>(i)]},
                          {"text", text},
                          {"expected", gold},
                          {"routed", r->label},
                          {"top", r->top},
                          {"probability", r->probability}});
    }
  }
  std::sort(ms.begin(), ms.end());
  auto ratio = [](int64_t a, int64_t b) { return b == 0 ? NAN : static_cast<double>(a) / static_cast<double>(b); };
  const nlohmann::json report = {
      {"questions", ex->size()},
      {"threshold", threshold},
      {"in_scope", in_scope},
      {"in_scope_accuracy", ratio(in_scope_right, in_scope)},
      {"unknown", unknown_gold},
      {"unknown_precision", ratio(unknown_right, unknown_predicted)},
      {"unknown_recall", ratio(unknown_right, unknown_gold)},
      {"accuracy", ratio(right, ex->size())},
      {"latency_p50_ms", brisk::percentile(ms, 50)},
      {"latency_p99_ms", brisk::percentile(ms, 99)},
      {"mistakes", mistakes},
  };
  if (o.json) {
    fmt::print("{}\n", report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  }
  if (!o.quiet) {
    for (const auto& m : mistakes) {
      fmt::print("  line {:>3}: expected {:<15} routed {:<15} (top {} {:.3f})  {}\n", m["line"].get<int64_t>(),
                 m["expected"].get<std::string>(), m["routed"].get<std::string>(), m["top"].get<std::string>(),
                 m["probability"].get<double>(), m["text"].get<std::string>());
    }
  }
  fmt::print("intent_router --eval {}: {} questions ({} in scope, {} unknown), threshold {:.2f}\n", o.eval, ex->size(),
             in_scope, unknown_gold, threshold);
  fmt::print("  in-scope accuracy   {:6.1f}%  ({} of {} routed to the right intent)\n",
             100.0 * ratio(in_scope_right, in_scope), in_scope_right, in_scope);
  fmt::print("  unknown precision   {:6.1f}%  ({} of {} routed to unknown were out of scope)\n",
             100.0 * ratio(unknown_right, unknown_predicted), unknown_right, unknown_predicted);
  fmt::print("  unknown recall      {:6.1f}%  ({} of {} out-of-scope questions routed to unknown)\n",
             100.0 * ratio(unknown_right, unknown_gold), unknown_right, unknown_gold);
  fmt::print("  overall accuracy    {:6.1f}%  ({} of {})\n", 100.0 * ratio(right, ex->size()), right, ex->size());
  fmt::print("  latency per question p50 {:.2f} ms, p99 {:.2f} ms\n", brisk::percentile(ms, 50),
             brisk::percentile(ms, 99));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.model_dir = brisk::default_model_dir();
  CLI::App app{"intent_router: route customer-service questions to intents with a few-shot intent head"};
  app.add_option("--head", o.head, "the head file written by `brisk fit-intents`")->required();
  app.add_option("--model", o.model_dir, "the embedding model the head was fitted over")->capture_default_str();
  app.add_option("--eval", o.eval, "label<TAB>question file to evaluate (out-of-scope questions labelled unknown)");
  app.add_option("--threshold", o.threshold,
                 "top probability below which a question is unknown (default: the "
                 "head file's unknown_threshold)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--threads", o.threads, "compute threads; 0 = the CPUs this process may use")
      ->check(CLI::Range(0, brisk::kMaxThreads));
  app.add_flag("--json", o.json, "--eval: print the report as one JSON object");
  app.add_flag("--quiet", o.quiet, "--eval: only the report, not the misrouted questions");
  CLI11_PARSE(app, argc, argv);

  StatusOr<brisk::IntentHeadFile> head = brisk::load_intent_head(o.head);
  if (!head.ok()) return fail(head.status());
  const double threshold = o.threshold >= 0.0 ? o.threshold : static_cast<double>(head->unknown_threshold);

  brisk::RuntimeOptions options;
  options.model_dir = o.model_dir;
  options.classification_head = o.head;
  options.num_threads = o.threads;
  StatusOr<std::unique_ptr<brisk::Runtime>> rt = brisk::Runtime::create(options);
  if (!rt.ok()) return fail(rt.status());
  return o.eval.empty() ? run_stream(**rt, threshold) : run_eval(**rt, o, threshold, head->head.labels);
}
