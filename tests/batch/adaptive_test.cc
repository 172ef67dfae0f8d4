// The adaptive batch sizer (multiplicative increase and decrease) (alone and through the batcher) and the token bucket.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "batch/batch_test_util.h"
#include "brisk/batch/adaptive.h"
#include "brisk/batch/internal/token_bucket.h"

using namespace brisk;
using namespace brisk::batch;
using namespace brisk::batch::testing;
using brisk::batch::internal::TokenBucket;

namespace {

AdaptivePolicy adaptive(Duration target, size_t window, size_t min_batch = 1) {
  AdaptivePolicy a;
  a.enabled = true;
  a.p99_target = target;  // compute budget: half of it
  a.window = window;
  a.min_batch_size = min_batch;
  return a;
}

// n batches filled to the current limit, each computing for `compute`, each request done after `latency`.
void feed(AdaptiveSizer& s, Duration compute, size_t n, Duration latency = Duration::zero()) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t g = s.generation();
    for (size_t k = 0; k < 4; ++k) s.record_latency(latency, g);
    s.record_batch(s.batch_limit(), compute, g);
  }
}

// The sizes the controller may take: the bounds and the multiples in between.
std::vector<size_t> ladder(size_t min_batch, size_t max_batch, size_t multiple) {
  std::set<size_t> l{min_batch, max_batch};
  for (size_t k = multiple; k < max_batch; k += multiple) {
    if (k > min_batch) l.insert(k);
  }
  return {l.begin(), l.end()};
}

// True when the values seen after convergence are one ladder value or two neighbouring ones.
bool one_step_at_most(const std::set<size_t>& seen, const std::vector<size_t>& rungs) {
  if (seen.size() == 1) return true;
  if (seen.size() != 2) return false;
  const auto lo = std::find(rungs.begin(), rungs.end(), *seen.begin());
  const auto hi = std::find(rungs.begin(), rungs.end(), *seen.rbegin());
  return lo != rungs.end() && hi != rungs.end() && hi - lo == 1;
}

}  // namespace

TEST_CASE("AdaptiveSizer is inert when disabled", "[batch]") {
  AdaptivePolicy a;
  AdaptiveSizer s(a, 32, 2ms, 8);
  feed(s, 1h, 10000, 1h);
  CHECK(s.batch_limit() == 32);
  CHECK(s.queue_delay() == 2ms);
  CHECK(s.decisions() == 0);
}

TEST_CASE("AdaptiveSizer shrinks 20% when batch compute is over its budget and grows 15% well under it", "[batch]") {
  AdaptiveSizer s(adaptive(20ms, 4), 64, 2ms, 8);  // compute budget 10 ms
  CHECK(s.compute_budget() == 10ms);
  CHECK(s.batch_limit() == 64);
  feed(s, 20ms, 3);
  CHECK(s.decisions() == 0);  // a window is 4 batches
  feed(s, 20ms, 1);
  CHECK(s.decisions() == 1);
  CHECK(s.last_compute_p99() == 20ms);
  CHECK(s.batch_limit() == 48);  // 64 x 0.8 = 51.2, down to a multiple of 8
  feed(s, 20ms, 4);
  CHECK(s.batch_limit() == 32);  // 38.4 -> 32
  feed(s, 8ms, 4);               // in the dead band [7, 10] ms: no change
  CHECK(s.batch_limit() == 32);
  feed(s, 10ms, 4);  // at the budget is not over it
  CHECK(s.batch_limit() == 32);
  feed(s, 6999us, 4);            // just under 0.7 x budget
  CHECK(s.batch_limit() == 40);  // 36.8 -> 40
  for (int i = 0; i < 10; ++i) feed(s, 1ms, 4);
  CHECK(s.batch_limit() == 64);  // bounded by the maximum
}

TEST_CASE("AdaptiveSizer moves the queue delay on end-to-end latency against the target", "[batch]") {
  AdaptiveSizer s(adaptive(20ms, 4), 64, 2ms, 8);
  feed(s, 1ms, 4, 30ms);  // compute well under budget, latency over target: limit stays at max, delay shrinks
  CHECK(s.batch_limit() == 64);
  CHECK(s.queue_delay() == 1600us);
  feed(s, 1ms, 4, 30ms);
  CHECK(s.queue_delay() == 1280us);
  feed(s, 1ms, 4, 16ms);  // dead band
  CHECK(s.queue_delay() == 1280us);
  feed(s, 1ms, 4, 1ms);
  CHECK(s.queue_delay() == 1472us);
  for (int i = 0; i < 10; ++i) feed(s, 1ms, 4, 1ms);
  CHECK(s.queue_delay() == 2ms);  // bounded by max_queue_delay
}

TEST_CASE("AdaptiveSizer grows only when batches reach the limit", "[batch]") {
  AdaptiveSizer s(adaptive(20ms, 4), 64, 2ms, 8);
  feed(s, 20ms, 8);
  REQUIRE(s.batch_limit() == 32);
  for (int i = 0; i < 20; ++i) {  // light load: batches of 5, far from the limit, fast
    const uint64_t g = s.generation();
    s.record_batch(5, 1ms, g);
  }
  CHECK(s.batch_limit() == 32);  // no evidence that a bigger batch stays within budget
  feed(s, 1ms, 4);
  CHECK(s.batch_limit() == 40);
}

TEST_CASE("AdaptiveSizer decides on the window's P99, not its maximum or mean", "[batch]") {
  AdaptiveSizer s(adaptive(20ms, 100), 64, 2ms, 8);
  feed(s, 1ms, 99);
  feed(s, 50ms, 1);  // the 100th-ranked sample alone is above P99
  CHECK(s.last_compute_p99() == 1ms);
  CHECK(s.batch_limit() == 64);
  feed(s, 1ms, 98);
  feed(s, 50ms, 2);  // now the 99th is
  CHECK(s.last_compute_p99() == 50ms);
  CHECK(s.batch_limit() == 48);
}

TEST_CASE("AdaptiveSizer drops samples measured under an older setting", "[batch]") {
  AdaptiveSizer s(adaptive(20ms, 4), 64, 2ms, 8);
  const uint64_t g0 = s.generation();
  for (int i = 0; i < 4; ++i) s.record_batch(64, 20ms, g0);
  CHECK(s.batch_limit() == 48);
  const uint64_t g1 = s.generation();
  CHECK(g1 != g0);
  for (int i = 0; i < 8; ++i) s.record_batch(64, 20ms, g0);  // stale: from batches formed at 64
  CHECK(s.decisions() == 1);
  CHECK(s.batch_limit() == 48);
  for (int i = 0; i < 4; ++i) s.record_batch(48, 8ms, g1);  // dead band: a decision, no change
  CHECK(s.decisions() == 2);
  CHECK(s.generation() == g1);
}

TEST_CASE("AdaptiveSizer stays on the ladder of multiples, between its bounds", "[batch]") {
  const size_t max_batch = GENERATE(64, 60);
  const size_t min_batch = GENERATE(1, 8);
  AdaptiveSizer s(adaptive(10ms, 2, min_batch), max_batch, 2ms, 8);
  const std::vector<size_t> rungs = ladder(min_batch, max_batch, 8);
  uint32_t x = 12345;
  for (int i = 0; i < 2000; ++i) {
    x = x * 1103515245u + 12345u;
    feed(s, (x >> 16) % 3 == 0 ? 20ms : 1ms, 2, (x >> 16) % 3 == 0 ? 30ms : 1ms);
    INFO("limit " << s.batch_limit());
    REQUIRE(std::find(rungs.begin(), rungs.end(), s.batch_limit()) != rungs.end());
  }
  for (int i = 0; i < 100; ++i) feed(s, 1h, 2, 1h);
  CHECK(s.batch_limit() == min_batch);
  CHECK(s.queue_delay() == Duration::zero());
}

TEST_CASE("AdaptiveSizer is stable under a steady latency model: at most two adjacent sizes", "[batch]") {
  // batch compute = a + b x limit ms against a 50 ms budget, fed one window at a time; after convergence the
  // limit may alternate between two neighbouring ladder values, never wider.
  const Duration target = 100ms;
  const size_t window = 16;
  const std::vector<size_t> rungs = ladder(1, 64, 8);
  int alternating = 0, settled = 0;
  for (double a : {0.0, 1.0, 2.5, 5.0, 10.0, 20.0, 34.0}) {
    for (double b = 0.0; b <= 15.0; b += 0.05) {
      AdaptiveSizer s(adaptive(target, window), 64, 2ms, 8);
      auto latency = [&] { return Duration(static_cast<int64_t>((a + b * s.batch_limit()) * 1e6)); };
      for (int i = 0; i < 100; ++i) feed(s, latency(), window);
      std::set<size_t> seen;
      for (int i = 0; i < 100; ++i) {
        feed(s, latency(), window);
        seen.insert(s.batch_limit());
      }
      INFO("a " << a << " b " << b << " sizes " << seen.size() << " from " << *seen.begin());
      REQUIRE(one_step_at_most(seen, rungs));
      (seen.size() == 2 ? alternating : settled) += 1;
    }
  }
  CHECK(alternating > 0);  // the grid covers both outcomes
  CHECK(settled > 0);
}

TEST_CASE("The batcher shrinks and grows its batch limit from observed compute time", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 64;
  p.preferred_batch_multiple = 8;
  p.max_queue_delay = 2ms;
  p.adaptive = adaptive(20ms, 1);  // compute budget 10 ms, a decision per batch
  Duration compute = 20ms;
  std::shared_ptr<ManualClock> clock;
  BatchLog log;
  TestFunctions f = echo_functions(&log, [&](const BatchInfo& info) { clock->advance(compute); });
  Harness h(p, f);
  clock = h.clock;
  for (int i = 0; i < 64; ++i) h.submit(i);
  CHECK(h.run() == 1);  // full: runs at once and computes for 20 ms > 10 ms
  CHECK(h.stats().batch_limit == 48);
  CHECK(h.stats().queue_delay == 2ms);  // latency 20 ms: not over the target, not well under it
  compute = 1ms;
  for (int i = 0; i < 64; ++i) h.submit(i);
  CHECK(h.run() == 1);  // a full batch of 48 in 1 ms: grows
  CHECK(log.sizes() == std::vector<size_t>{64, 48});
  CHECK(h.stats().batch_limit == 56);
  h.advance(1ms);  // the other 16 have now waited the 2 ms delay
  CHECK(h.run() == 1);
  CHECK(log.sizes() == std::vector<size_t>{64, 48, 16});
  CHECK(h.stats().batch_limit == 56);  // a batch of 16 says nothing about 64
  for (int i = 0; i < 64; ++i) h.submit(i);
  CHECK(h.run() == 1);
  CHECK(log.sizes().back() == 56);
}

TEST_CASE("The batcher's adaptive limit is stable under a steady latency model", "[batch]") {
  // Each batch is full at the current limit and computes for a + b x size ms, against a 50 ms budget.
  struct Model {
    double a, b;
  };
  const Model model = GENERATE(Model{0, 1}, Model{0, 4.2}, Model{5, 4.0}, Model{0, 7}, Model{20, 6.2}, Model{10, 12},
                               Model{40, 0.5}, Model{0, 30});
  BatchPolicy p = manual_policy();
  p.max_batch_size = 64;
  p.preferred_batch_multiple = 8;
  p.adaptive = adaptive(100ms, 4);
  std::shared_ptr<ManualClock> clock;
  BatchLog log;
  TestFunctions f = echo_functions(&log, [&](const BatchInfo& info) {
    clock->advance(Duration(static_cast<int64_t>((model.a + model.b * info.shape.size) * 1e6)));
  });
  Harness h(p, f);
  clock = h.clock;
  const std::vector<size_t> rungs = ladder(1, 64, 8);
  std::set<size_t> seen;
  for (int i = 0; i < 800; ++i) {
    const size_t limit = h.stats().batch_limit;
    REQUIRE(std::find(rungs.begin(), rungs.end(), limit) != rungs.end());
    for (size_t k = 0; k < limit; ++k) h.submit(static_cast<int>(k));
    REQUIRE(h.run() == 1);
    if (i >= 400) seen.insert(log.batches().back().values.size());
  }
  INFO("a " << model.a << " b " << model.b << ": " << seen.size() << " sizes from " << *seen.begin() << " to "
            << *seen.rbegin());
  CHECK(one_step_at_most(seen, rungs));
}

TEST_CASE("TokenBucket admits rate per second with bursts up to its depth", "[batch]") {
  const TimePoint t0(std::chrono::hours(1));
  SECTION("unlimited") {
    TokenBucket b(0, 0, t0);
    CHECK_FALSE(b.limited());
    for (int i = 0; i < 1000; ++i) REQUIRE(b.try_take(t0));
  }
  SECTION("default burst is max(1, rate)") {
    CHECK(TokenBucket(100, 0, t0).burst() == 100);
    CHECK(TokenBucket(0.5, 0, t0).burst() == 1);
    TokenBucket b(0.5, 0, t0);
    CHECK(b.try_take(t0));
    CHECK_FALSE(b.try_take(t0 + 1s));  // half a token
    CHECK(b.try_take(t0 + 2s));
  }
  SECTION("refill is capped at the burst, and time going back refills nothing") {
    TokenBucket b(10, 3, t0);
    for (int i = 0; i < 3; ++i) CHECK(b.try_take(t0));
    CHECK_FALSE(b.try_take(t0));
    CHECK_FALSE(b.try_take(t0 - 1h));
    CHECK(b.try_take(t0 + 100ms));
    CHECK_FALSE(b.try_take(t0 + 100ms));
    int taken = 0;
    while (b.try_take(t0 + 1h)) ++taken;
    CHECK(taken == 3);
  }
}
