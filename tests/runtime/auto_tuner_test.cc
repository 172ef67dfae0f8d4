// The auto-tuner's search (brisk/runtime/auto_tuner.h) against deterministic synthetic objectives, its comparison and
// early-stopping rules, and the open-loop load generator (brisk/runtime/load_test.h) it drives. No timing is asserted.
#include "brisk/runtime/auto_tuner.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "runtime/runtime_test_util.h"
#include "test_util.h"

namespace {

using brisk::tune::Candidate;
using brisk::tune::Measurement;

// A smooth objective whose optimum is known: exec 1 x threads 2, batch 16, multiple 4, delay 2 ms, inflight 0.
// Goodput falls away from it in every dimension; P99 rises; all meet a 50 ms SLO.
Measurement synthetic(const Candidate& c) {
  double penalty = std::abs(std::log2(static_cast<double>(c.max_batch_size)) - 4) * 4 +
                   std::abs(std::log2(static_cast<double>(c.preferred_batch_multiple)) - 2) * 3 +
                   std::abs(c.max_queue_delay_ms - 2) * 2 + (c.executor_threads == 1 && c.num_threads == 2 ? 0 : 10) +
                   c.max_inflight_batches * 5;
  Measurement m;
  m.goodput = 100 - penalty;
  m.p99_ms = 20 + penalty / 2;
  m.p50_ms = m.p99_ms / 2;
  m.bad_share = penalty / 100;
  return m;
}

Candidate defaults() {
  Candidate c;  // the runtime's defaults on 2 cores
  c.executor_threads = 1;
  c.num_threads = 2;
  c.max_batch_size = 32;
  c.preferred_batch_multiple = 8;
  c.max_queue_delay_ms = 0;
  c.max_inflight_batches = 0;
  return c;
}

}  // namespace

TEST_CASE("search finds a known optimum in far fewer evaluations than the grid, and keeps it after the final check") {
  const brisk::tune::SearchSpace space = brisk::tune::default_search_space(2);
  size_t calls = 0;
  auto evaluate = [&](const Candidate& c, const Measurement*) -> brisk::StatusOr<Measurement> {
    ++calls;
    return synthetic(c);
  };
  brisk::tune::SearchOptions so;
  so.slo_p99_ms = 50;
  auto r = brisk::tune::search_policy(defaults(), space, evaluate, so);
  REQUIRE(r.ok());
  Candidate best = defaults();
  best.max_batch_size = 16;
  best.preferred_batch_multiple = 4;
  best.max_queue_delay_ms = 2;
  INFO(brisk::tune::to_string(r->winner));
  CHECK(r->winner == best);
  CHECK(r->chosen == best);
  CHECK(r->winner_confirmed);
  CHECK(r->stop_reason == "no improvement");
  // The full grid of the default space on 2 cores: 19 (batch, multiple <= batch) pairs x 4 delays for each of the
  // 1-executor splits (1x2, 1x1), and twice that for 2x1 (inflight 0 or 1).
  const size_t grid = space.grid_size();
  CHECK(grid == 2 * 19 * 4 + 19 * 4 * 2);
  CHECK(r->evaluations < grid / 4);
  CHECK(calls == r->evaluations + 2 * 2);  // plus the interleaved final comparison, 2 repeats of each
  CHECK(r->chosen_final.goodput == synthetic(best).goodput);
  CHECK(r->defaults_final.goodput == synthetic(defaults()).goodput);
}

TEST_CASE("search stops after a round without improvement, search evaluations see the incumbent") {
  size_t with_incumbent = 0, without = 0;
  auto flat = [&](const Candidate&, const Measurement* incumbent) -> brisk::StatusOr<Measurement> {
    (incumbent ? with_incumbent : without) += 1;
    Measurement m;
    m.goodput = 50;
    m.p99_ms = 30;
    return m;
  };
  brisk::tune::SearchOptions so;
  so.slo_p99_ms = 50;
  const brisk::tune::SearchSpace space = brisk::tune::default_search_space(2);
  auto r = brisk::tune::search_policy(defaults(), space, flat, so);
  REQUIRE(r.ok());
  CHECK(r->rounds == 1);
  CHECK(r->stop_reason == "no improvement");
  CHECK(r->winner == defaults());
  CHECK_FALSE(r->winner_confirmed);
  // Round 1 tries every other value of each dimension once: 2 splits + 4 batches + 3 multiples + 3 delays + 0
  // inflight values (1 exceeds the single executor).
  CHECK(r->evaluations == 1 + 2 + 4 + 3 + 3);
  CHECK(with_incumbent == r->evaluations - 1);
  CHECK(without == 1 + 2);  // the defaults first, then the final comparison (winner == defaults: defaults only)
}

TEST_CASE("search respects the time budget and the evaluation cap") {
  int asked = 0;
  brisk::tune::SearchOptions so;
  so.slo_p99_ms = 50;
  so.out_of_time = [&] { return ++asked > 3; };
  auto evaluate = [](const Candidate& c, const Measurement*) -> brisk::StatusOr<Measurement> { return synthetic(c); };
  auto r = brisk::tune::search_policy(defaults(), brisk::tune::default_search_space(2), evaluate, so);
  REQUIRE(r.ok());
  CHECK(r->stop_reason == "budget");
  CHECK(r->evaluations == 1 + 3);

  so.out_of_time = nullptr;
  so.max_evaluations = 6;
  r = brisk::tune::search_policy(defaults(), brisk::tune::default_search_space(2), evaluate, so);
  REQUIRE(r.ok());
  CHECK(r->stop_reason == "max evaluations");
  CHECK(r->evaluations == 6);
}

TEST_CASE("a winner that loses the final interleaved comparison is not chosen") {
  Candidate lucky = defaults();
  lucky.max_batch_size = 8;
  std::map<std::string, int> seen;
  auto evaluate = [&](const Candidate& c, const Measurement*) -> brisk::StatusOr<Measurement> {
    Measurement m;
    m.p99_ms = 30;
    m.goodput = 50;
    // The lucky candidate measured high once (noise); after that it is worse than the defaults.
    if (c == lucky) m.goodput = seen[brisk::tune::to_string(c)]++ == 0 ? 80 : 40;
    return m;
  };
  brisk::tune::SearchOptions so;
  so.slo_p99_ms = 50;
  auto r = brisk::tune::search_policy(defaults(), brisk::tune::default_search_space(2), evaluate, so);
  REQUIRE(r.ok());
  CHECK(r->winner == lucky);
  CHECK_FALSE(r->winner_confirmed);
  CHECK(r->chosen == defaults());
  CHECK(r->chosen_final.goodput == 50);
  CHECK(r->winner_final.goodput == 40);
}

TEST_CASE("an evaluator error ends the search with it") {
  auto failing = [](const Candidate& c, const Measurement*) -> brisk::StatusOr<Measurement> {
    if (c.max_batch_size == 4) return absl::InternalError("candidate broke");
    return synthetic(c);
  };
  auto r = brisk::tune::search_policy(defaults(), brisk::tune::default_search_space(2), failing, {});
  REQUIRE_FALSE(r.ok());
  CHECK(std::string(r.status().message()) == "candidate broke");
}

TEST_CASE("better: the SLO first, then goodput beyond noise, then lower P99") {
  brisk::tune::SearchOptions so;
  so.slo_p99_ms = 50;
  auto m = [](double goodput, double p99) {
    Measurement x;
    x.goodput = goodput;
    x.p99_ms = p99;
    return x;
  };
  CHECK(brisk::tune::better(m(10, 40), m(90, 60), so));  // meets the SLO, the other does not
  CHECK_FALSE(brisk::tune::better(m(90, 60), m(10, 40), so));
  CHECK(brisk::tune::better(m(100, 40), m(90, 40), so));       // 11% more goodput
  CHECK_FALSE(brisk::tune::better(m(91, 45), m(90, 40), so));  // 1% more goodput is noise, and P99 is higher
  CHECK(brisk::tune::better(m(90, 30), m(91, 40), so));        // goodput within noise, P99 25% lower
  CHECK_FALSE(brisk::tune::better(m(90, 38), m(90, 40), so));  // 5% lower P99 is noise
}

TEST_CASE("should_stop_early: clearly worse than the incumbent, after enough requests") {
  Measurement incumbent;
  incumbent.bad_share = 0.01;
  brisk::load_test::Progress p;
  p.submitted = 100;
  p.late = 2;
  CHECK_FALSE(brisk::tune::should_stop_early(p, &incumbent));  // 2% bad: not clearly past a P99 SLO
  p.late = 4;
  CHECK(brisk::tune::should_stop_early(p, &incumbent));  // 4% > max(3%, 1.1 x 1% + 2%)
  CHECK_FALSE(brisk::tune::should_stop_early(p, nullptr));
  p.submitted = 20;
  p.late = 10;
  CHECK_FALSE(brisk::tune::should_stop_early(p, &incumbent));  // too few requests to judge
  incumbent.bad_share = 0.30;                                  // an overloaded incumbent
  p.submitted = 100;
  p.late = 30;
  p.refused = 3;
  CHECK_FALSE(brisk::tune::should_stop_early(p, &incumbent));  // 33% < 1.1 x 30% + 2%
  p.refused = 10;
  CHECK(brisk::tune::should_stop_early(p, &incumbent));
}

TEST_CASE("percentile is the nearest rank, the Poisson schedule is seeded and has the rate's count") {
  // Nearest-rank examples of the textbook definition (e.g. Wikipedia "Percentile"): {15, 20, 35, 40, 50}.
  const std::vector<int64_t> v = {15, 20, 35, 40, 50};
  CHECK(brisk::load_test::percentile(v, 5) == 15);
  CHECK(brisk::load_test::percentile(v, 30) == 20);
  CHECK(brisk::load_test::percentile(v, 40) == 20);
  CHECK(brisk::load_test::percentile(v, 50) == 35);
  CHECK(brisk::load_test::percentile(v, 100) == 50);
  CHECK(brisk::load_test::percentile({}, 50) == 0);

  const auto a = brisk::load_test::poisson_schedule({{.rate = 1000}}, 10, 7, 42);
  const auto b = brisk::load_test::poisson_schedule({{.rate = 1000}}, 10, 7, 42);
  const auto c = brisk::load_test::poisson_schedule({{.rate = 1000}}, 10, 7, 43);
  REQUIRE(a.size() == b.size());
  CHECK(a.front().at == b.front().at);
  CHECK(a.back().item == b.back().item);
  CHECK(a.front().at != c.front().at);
  // Poisson(10000): 4 standard deviations are 400.
  CHECK(std::abs(static_cast<double>(a.size()) - 10000) < 400);
  for (size_t i = 1; i < a.size(); ++i) REQUIRE(a[i - 1].at <= a[i].at);
  for (const auto& x : a) REQUIRE(x.item < 7);
}

TEST_CASE("run_open_loop accounts for every arrival on a real runtime and refuses bad arguments") {
  auto rt = brisk::testing::make_runtime(brisk::testing::uncached_runtime_options());
  const std::vector<std::string> texts = {"how do I reset my PIN?", "what are your opening hours?", "lost card"};
  brisk::load_test::OpenLoopOptions o;
  o.rate = 20;
  o.duration_s = 1;
  o.seed = 3;
  o.slo = std::chrono::seconds(10);
  auto r = brisk::load_test::run_open_loop(*rt, texts, o);
  REQUIRE(r.ok());
  const size_t scheduled = brisk::load_test::poisson_schedule({{.rate = 20}}, 1, texts.size(), 3).size();
  CHECK(r->offered == scheduled);
  CHECK(r->completed + r->refused + r->expired + r->failed == r->offered);
  CHECK(r->failed == 0);
  CHECK(r->p50_ms <= r->p99_ms);
  CHECK(r->mean_tokens > 3);  // the texts plus their " #k" suffix reached the model
  CHECK_FALSE(r->stopped_early);

  // keep_going stops the arrivals; what was submitted still completes.
  o.duration_s = 5;
  o.keep_going = [](const brisk::load_test::Progress& p) { return p.elapsed_s < 0.3; };
  r = brisk::load_test::run_open_loop(*rt, texts, o);
  REQUIRE(r.ok());
  CHECK(r->stopped_early);
  CHECK(r->offered < brisk::load_test::poisson_schedule({{.rate = 20}}, 5, texts.size(), 3).size());
  CHECK(r->completed + r->refused + r->expired + r->failed == r->offered);

  o.keep_going = nullptr;
  o.rate = 0;
  auto bad = brisk::load_test::run_open_loop(*rt, texts, o);
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()) == "run_open_loop: rate is 0; expected > 0 per second");
  bad = brisk::load_test::run_open_loop(*rt, {}, o);
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()) == "run_open_loop: texts is empty; expected at least one text");
}
