// `brisk tune`: the traffic mixes, the search's budget, the report and the policy file.
#include "tune.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "brisk/core/parallel.h"
#include "brisk/core/text_lines.h"
#include "brisk/runtime/auto_tuner.h"
#include "output.h"

#ifndef BRISK_SOURCE_DIR
#define BRISK_SOURCE_DIR "."
#endif

namespace brisk::cli {

namespace {

using Clock = std::chrono::steady_clock;

// Passages of about 100 to 250 tokens: FAQ answers (faq.tsv's second column) joined in order until a word count
// drawn from 75 to 190 words (about 1.3 word pieces a word) is reached.
StatusOr<std::vector<std::string>> long_passages(const std::string& faq_path, size_t n, uint64_t seed) {
  BRISK_ASSIGN_OR_RETURN(std::vector<std::string> rows, read_text_lines(faq_path, "--faq"));
  std::vector<std::string> answers;
  for (const std::string& r : rows) {
    const size_t tab = r.find('\t');
    if (tab != std::string::npos) answers.push_back(r.substr(tab + 1));
  }
  if (answers.empty()) {
    return absl::InvalidArgumentError(fmt::format("--faq '{}' has no question<TAB>answer lines", faq_path));
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> words(75, 190);
  std::vector<std::string> out;
  size_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    const int target = words(rng);
    std::string passage;
    int count = 0;
    while (count < target) {
      std::istringstream in(answers[next++ % answers.size()]);
      for (std::string w; in >> w && count < target; ++count) passage += (passage.empty() ? "" : " ") + w;
    }
    out.push_back(passage);
  }
  return out;
}

StatusOr<std::vector<std::string>> mix_texts(const TuneFlags& f) {
  const std::string questions =
      f.questions.empty() ? std::string(BRISK_SOURCE_DIR) + "/examples/faq_assistant/questions.txt" : f.questions;
  const std::string faq = f.faq.empty() ? std::string(BRISK_SOURCE_DIR) + "/examples/faq_assistant/faq.tsv" : f.faq;
  if (f.mix == "faq") return read_text_lines(questions, "--questions");
  if (f.mix == "mixed") {
    BRISK_ASSIGN_OR_RETURN(std::vector<std::string> texts, read_text_lines(questions, "--questions"));
    // Items are picked uniformly: one passage per four questions makes 20% of the requests long.
    BRISK_ASSIGN_OR_RETURN(std::vector<std::string> passages,
                           long_passages(faq, std::max<size_t>(1, texts.size() / 4), f.seed));
    texts.insert(texts.end(), passages.begin(), passages.end());
    return texts;
  }
  return read_text_lines(f.mix, "--mix");
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  return in >> one ? one : -1;
}

std::string measurement_cells(const tune::Measurement& m) {
  return fmt::format("{:.1f} | {:.1f} | {:.1f} | {:.1f}% | {:.1f}", m.goodput, m.p50_ms, m.p99_ms,
                     100 * m.refused_share, m.mean_batch);
}

nlohmann::json measurement_json(const tune::Measurement& m) {
  return {{"goodput_per_s", m.goodput},       {"p50_ms", m.p50_ms},       {"p99_ms", m.p99_ms},
          {"refused_share", m.refused_share}, {"bad_share", m.bad_share}, {"mean_batch", m.mean_batch},
          {"stopped_early", m.stopped_early}};
}

nlohmann::json candidate_json(const tune::Candidate& c) {
  return {{"executor_threads", c.executor_threads},     {"num_threads", c.num_threads},
          {"max_batch_size", c.max_batch_size},         {"preferred_batch_multiple", c.preferred_batch_multiple},
          {"max_queue_delay_ms", c.max_queue_delay_ms}, {"max_inflight_batches", c.max_inflight_batches}};
}

}  // namespace

void TuneFlags::add_to(CLI::App& cmd) {
  model.add_to(cmd, kTextFlags);
  cmd.add_option("--rate", rate, "offered load: Poisson arrivals per second")->required()->check(CLI::PositiveNumber);
  cmd.add_option("--slo-p99-ms", slo_p99_ms, "the P99 latency target, ms (arrival to result)")
      ->required()
      ->check(CLI::Range(0.001, 3.6e6));
  cmd.add_option("--mix", mix,
                 "traffic: faq (short FAQ questions), mixed (80% questions, 20% passages of 100-250 "
                 "tokens) or a file with one text per line")
      ->capture_default_str();
  cmd.add_option("--questions", questions, "the FAQ questions, one a line (default: examples/faq_assistant's)");
  cmd.add_option("--faq", faq, "question<TAB>answer lines whose answers make the mixed mix's passages");
  cmd.add_option("--duration-s", duration_s, "seconds of arrivals per candidate")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd.add_option("--budget-s", budget_s, "the whole search's time budget, seconds (the final comparison included)")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd.add_option("--timeout-ms", timeout_ms, "each request's deadline, ms; -1: the SLO; 0: none")
      ->check(CLI::Range(-1.0, 3.6e6))
      ->capture_default_str();
  cmd.add_option("--cores", cores, "cores to split between executors and compute threads; 0: this machine's")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  cmd.add_option("--max-rounds", max_rounds, "coordinate-descent rounds at most")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  cmd.add_option("--final-repeats", final_repeats, "interleaved re-measurements of the winner and the defaults")
      ->check(CLI::Range(1, 10))
      ->capture_default_str();
  cmd.add_option("--seed", seed, "seed of the arrival schedule and the passages")->capture_default_str();
  cmd.add_option("--out", out, "the policy file to write")->capture_default_str();
  cmd.add_flag("--json", json_output, "print one JSON object instead of the tables");
}

int run_tune(TuneFlags& f) {
  if (Status s = f.model.validate(); !s.ok()) {
    report_error(s);
    return kExitUsage;
  }
  auto texts = mix_texts(f);
  if (!texts.ok()) return report_error(texts.status());
  const int cores = threads_or_available(f.cores);

  RuntimeOptions base = f.model.runtime_options();
  if (Status s = load_policy_path(base); !s.ok()) return report_error(s);  // --policy: start from that policy
  base.cache.result_cache_bytes = 0;  // every request reaches the model (texts are unique too)

  tune::LoadEvaluatorOptions eo;
  eo.base = base;
  eo.texts = *texts;
  eo.load.rate = f.rate;
  eo.load.duration_s = f.duration_s;
  eo.load.seed = f.seed;
  eo.load.slo = std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(f.slo_p99_ms));
  const double timeout_ms = f.timeout_ms < 0 ? f.slo_p99_ms : f.timeout_ms;
  eo.load.timeout = std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(timeout_ms));
  eo.warmup_s = std::min(1.0, f.duration_s / 2);

  tune::SearchOptions so;
  so.slo_p99_ms = f.slo_p99_ms;
  so.max_rounds = f.max_rounds;
  so.final_repeats = f.final_repeats;
  // One evaluation takes its duration, the warm-up, the runtime's creation and the drain: about duration + 2 s. The
  // final comparison's evaluations are reserved out of the budget.
  const double per_eval_s = f.duration_s + eo.warmup_s + 1.5;
  const double reserve_s = 2.0 * f.final_repeats * per_eval_s;
  const Clock::time_point start = Clock::now();
  so.out_of_time = [&] {
    const double spent = std::chrono::duration<double>(Clock::now() - start).count();
    return spent + per_eval_s + reserve_s > f.budget_s;
  };
  const double load_before = load_average();
  auto result = tune::search_policy(tune::candidate_of(base, cores), tune::default_search_space(cores),
                                    tune::evaluate_with_load_test(eo), so);
  if (!result.ok()) return report_error(result.status());
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  const double load_after = load_average();

  ServingPolicy policy = tune::policy_of_result(*result, base);
  PolicyProvenance& v = policy.provenance;
  v.mix = f.mix;
  v.rate_per_s = f.rate;
  v.slo_p99_ms = f.slo_p99_ms;
  v.duration_s = f.duration_s;
  if (load_after >= 0) v.load_average = load_after;
  if (Status s = write_policy_file(policy, f.out); !s.ok()) return report_error(s);

  const tune::SearchSpace space_for_grid = tune::default_search_space(cores);
  if (f.json_output) {
    nlohmann::json j;
    j["rate_per_s"] = f.rate;
    j["slo_p99_ms"] = f.slo_p99_ms;
    j["mix"] = f.mix;
    j["texts"] = texts->size();
    j["duration_s"] = f.duration_s;
    j["cores"] = cores;
    j["elapsed_s"] = elapsed_s;
    j["load_average_before"] = load_before;
    j["load_average_after"] = load_after;
    j["evaluations"] = result->evaluations;
    j["grid_size"] = space_for_grid.grid_size();
    j["rounds"] = result->rounds;
    j["stop_reason"] = result->stop_reason;
    j["winner_confirmed"] = result->winner_confirmed;
    j["chosen"] = candidate_json(result->chosen);
    j["chosen_final"] = measurement_json(result->chosen_final);
    j["winner"] = candidate_json(result->winner);
    j["winner_final"] = measurement_json(result->winner_final);
    j["defaults"] = candidate_json(result->defaults);
    j["defaults_final"] = measurement_json(result->defaults_final);
    j["policy_file"] = f.out;
    nlohmann::json trials = nlohmann::json::array();
    for (const tune::Trial& t : result->trials) {
      trials.push_back({{"round", t.round},
                        {"dimension", t.dimension},
                        {"adopted", t.adopted},
                        {"candidate", candidate_json(t.candidate)},
                        {"measurement", measurement_json(t.measurement)}});
    }
    j["trials"] = trials;
    fmt::print("{}\n", j.dump());
    return kExitOk;
  }
  fmt::print(
      "brisk tune: {} texts ({}), {:.1f} req/s, P99 SLO {:.1f} ms, {:.1f} s per candidate, {} cores; load "
      "average {:.2f} -> {:.2f}\n\n",
      texts->size(), f.mix, f.rate, f.slo_p99_ms, f.duration_s, cores, load_before, load_after);
  fmt::print("| # | round | varied | candidate | goodput/s | P50 ms | P99 ms | refused | mean batch | note |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < result->trials.size(); ++i) {
    const tune::Trial& t = result->trials[i];
    const std::string note = t.measurement.stopped_early                          ? "stopped early"
                             : t.adopted                                          ? "adopted"
                             : t.round > 0 && t.measurement.p99_ms > f.slo_p99_ms ? "P99 over SLO"
                                                                                  : "";
    fmt::print("| {} | {} | {} | {} | {} | {} |\n", i + 1, t.round < 0 ? "final" : std::to_string(t.round), t.dimension,
               tune::to_string(t.candidate), measurement_cells(t.measurement), note);
  }
  fmt::print("\n{} search evaluations in {} round(s) (a full grid: {}); stopped: {}; {:.0f} s in all\n\n",
             result->evaluations, result->rounds, space_for_grid.grid_size(), result->stop_reason, elapsed_s);
  fmt::print("| policy (final, interleaved, mean of {}) | goodput/s | P50 ms | P99 ms | refused | mean batch |\n",
             f.final_repeats);
  fmt::print("|---|---|---|---|---|---|\n");
  fmt::print("| defaults: {} | {} |\n", tune::to_string(result->defaults), measurement_cells(result->defaults_final));
  fmt::print("| winner: {} | {} |\n", tune::to_string(result->winner), measurement_cells(result->winner_final));
  fmt::print("\nchosen: {} ({}); written to {}\n", tune::to_string(result->chosen),
             result->winner_confirmed ? "the winner held up against the defaults"
             : result->winner == result->defaults
                 ? "no candidate beat the defaults"
                 : "the winner did not beat the defaults in the final comparison: keeping the defaults",
             f.out);
  return kExitOk;
}

}  // namespace brisk::cli
