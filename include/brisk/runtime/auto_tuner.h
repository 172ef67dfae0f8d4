// The auto-tuner's search: which batching policy (executors x compute threads, max batch, preferred multiple, queue
// delay, batches in flight) gives the most goodput with P99 within an SLO, found by coordinate descent with early
// stopping rather than a full grid. The evaluator is injected: `brisk tune` measures each candidate with the open-loop
// load generator (brisk/runtime/load_test.h, evaluate_with_load_test below); tests pass a synthetic objective.
//
//   brisk::tune::SearchSpace space = brisk::tune::default_search_space(/*cores=*/2);
//   brisk::tune::SearchOptions so{.slo_p99_ms = 50};
//   auto result = brisk::tune::search_policy(brisk::tune::candidate_of(defaults), space, evaluate, so);
//   // result->chosen: the winner after the final interleaved comparison with the defaults
//
// The search: start from the defaults (measured first). Each round visits the dimensions in order and tries every
// value of one with the others at the incumbent's; a value that beats the incumbent beyond noise becomes the
// incumbent. It stops when a round brings no improvement, after max_rounds, or when the time budget is spent. An
// evaluation is told the incumbent, so it may stop a candidate early once it is clearly worse (should_stop_early).
// Finally the winner and the defaults are measured again, interleaved, and the winner is chosen only if it is at least
// as good there.
//
// Thread safety: search_policy() calls the evaluator on its own thread, one candidate at a time.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/runtime/load_test.h"
#include "brisk/runtime/runtime.h"
#include "brisk/runtime/serving_policy.h"

namespace brisk::tune {

// One point of the search space.
struct Candidate {
  int executor_threads = 1;
  int num_threads = 1;  // compute threads per forward pass
  size_t max_batch_size = 32;
  size_t preferred_batch_multiple = 8;
  double max_queue_delay_ms = 0;
  int max_inflight_batches = 0;  // 0: executor_threads
  bool operator==(const Candidate&) const = default;
};
BRISK_API std::string to_string(const Candidate& c);
// The candidate of options (num_threads 0 becomes `cores`).
BRISK_API Candidate candidate_of(const RuntimeOptions& options, int cores);
// options with c's values.
BRISK_API RuntimeOptions with_candidate(RuntimeOptions options, const Candidate& c);

// What one evaluation measured.
struct Measurement {
  double goodput = 0;  // completed within the SLO, per second
  double p50_ms = 0, p99_ms = 0;
  double refused_share = 0;  // refused, expired or failed, of offered
  double bad_share = 0;      // not good (late, refused, expired, failed), of offered: 1 - goodput / rate
  double mean_batch = 0;
  bool stopped_early = false;
};

// The values each dimension may take. A pair (executors, threads) is one dimension: they share the cores.
struct SearchSpace {
  std::vector<std::pair<int, int>> thread_splits;
  std::vector<size_t> max_batch_sizes;
  std::vector<size_t> preferred_multiples;  // values above max_batch_size are skipped
  std::vector<double> queue_delays_ms;
  std::vector<int> inflight;           // 0, or limits below executor_threads (others are skipped)
  BRISK_API size_t grid_size() const;  // every combination: what a full grid would evaluate
};
// Thread splits e x t with e * t = cores (and 1 x cores), batch sizes 4..64, multiples 1..8, delays 0..5 ms,
// inflight 0 and 1.
BRISK_API SearchSpace default_search_space(int cores);

struct SearchOptions {
  double slo_p99_ms = 100;
  double goodput_noise = 0.03;  // relative goodput differences below this are noise
  double p99_noise = 0.10;      // relative P99 differences below this are noise (ties on goodput: lower P99 wins)
  int max_rounds = 3;
  size_t max_evaluations = 200;
  int final_repeats = 2;  // interleaved re-measurements of the winner and the defaults each
  // Asked before each search evaluation (true: stop searching and go to the final comparison). Empty: no budget.
  std::function<bool()> out_of_time;
};

// Measures one candidate. `incumbent` (null for the defaults and the final comparison) lets it stop early.
using Evaluator = std::function<StatusOr<Measurement>(const Candidate& candidate, const Measurement* incumbent)>;

struct Trial {
  Candidate candidate;
  Measurement measurement;
  int round = 0;          // 0: the defaults; 1, 2, ...: search rounds; -1: the final comparison
  std::string dimension;  // which dimension was varied ("defaults", "final")
  bool adopted = false;   // became the incumbent
};

struct SearchResult {
  Candidate defaults, winner, chosen;  // chosen: the winner, or the defaults when the final comparison says so
  Measurement defaults_final, winner_final, chosen_final;  // averaged over the final repeats
  std::vector<Trial> trials;
  int rounds = 0;
  size_t evaluations = 0;   // search evaluations (the final comparison not counted)
  std::string stop_reason;  // "no improvement", "max rounds", "budget", "max evaluations"
  bool winner_confirmed = false;
};

// True when `a` beats `b`: meets the SLO where b does not; else more goodput beyond noise; else, goodput within
// noise, a lower P99 beyond noise.
BRISK_API bool better(const Measurement& a, const Measurement& b, const SearchOptions& options);
// Whether a running evaluation should stop: after at least min_requests arrivals, its bad share so far (finished
// late, expired or failed, and refused) exceeds both 3% (more than 1% late is a P99 past the SLO; 3% is clearly so)
// and the incumbent's bad share by a margin (x1.1 + 2 points): it has lost already. `incumbent` null: never.
BRISK_API bool should_stop_early(const load_test::Progress& progress, const Measurement* incumbent,
                                 size_t min_requests = 40);

BRISK_API StatusOr<SearchResult> search_policy(const Candidate& defaults, const SearchSpace& space,
                                               const Evaluator& evaluate, const SearchOptions& options);

// The real evaluator: a Runtime per candidate (base options with its values), warmed up, then run_open_loop with
// `load`; early stopping through should_stop_early.
struct LoadEvaluatorOptions {
  RuntimeOptions base;
  std::vector<std::string> texts;
  load_test::OpenLoopOptions load;  // rate, duration, slo, seed
  double warmup_s = 0.5;
};
BRISK_API Evaluator evaluate_with_load_test(LoadEvaluatorOptions options);

// The policy file of a search's chosen candidate, with its provenance (tool, version, date, measurements).
BRISK_API ServingPolicy policy_of_result(const SearchResult& result, const RuntimeOptions& base);

}  // namespace brisk::tune
