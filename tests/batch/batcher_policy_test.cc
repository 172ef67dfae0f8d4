// How batches are formed, on a ManualClock with run_ready(): max_batch_size and max_queue_delay, the preferred
// multiple, the padded-token budget, length bucketing, the memory budget (and a request that outgrew it after
// submit), strict priority with aging, per-level rate limits and the queue limits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <future>
#include <random>
#include <thread>

#include "batch/batch_test_util.h"

using namespace brisk;
using namespace brisk::batch;
using namespace brisk::batch::testing;

TEST_CASE("Batcher waits max_queue_delay from the oldest request, and runs a full batch at once", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 4;
  p.max_queue_delay = 5ms;
  Harness h(p);
  const TimePoint t0 = h.now();
  h.submit(1);
  h.advance(2ms);
  h.submit(2);
  h.submit(3);
  h.advance(2ms);  // the oldest has waited 4 ms
  CHECK(h.run() == 0);
  CHECK(h.out.size() == 0);
  h.advance(1ms);  // 5 ms since the oldest, 3 ms since the newest
  CHECK(h.run() == 1);
  REQUIRE(h.log.size() == 1);
  CHECK(h.log.values() == std::vector<int>{1, 2, 3});
  CHECK(h.log.batches()[0].formed_at == t0 + 5ms);
  CHECK(h.out.size() == 3);

  // Four (a full batch) run without waiting; a fifth then waits alone.
  for (int i = 0; i < 5; ++i) h.submit(10 + i);
  CHECK(h.run() == 1);
  CHECK(h.log.sizes() == std::vector<size_t>{3, 4});
  CHECK(h.stats().queued == 1);
  h.advance(5ms);
  CHECK(h.run() == 1);
  CHECK(h.log.sizes() == std::vector<size_t>{3, 4, 1});
}

TEST_CASE("Batcher rounds a batch down to preferred_batch_multiple only when the queue is deeper", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 32;
  p.preferred_batch_multiple = 8;
  p.max_queue_delay = 1ms;

  SECTION("a token budget that admits 13 gives 8, and the rest runs whole once the delay passes") {
    p.max_batch_tokens = 13;
    Harness h(p);
    for (int i = 0; i < 20; ++i) h.submit(i);
    CHECK(h.run() == 1);  // the queued cost (20) exceeds the budget: ready at once
    CHECK(h.log.sizes() == std::vector<size_t>{8});
    CHECK(h.log.values() == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});  // the tail went back in order
    CHECK(h.stats().queued == 12);
    h.advance(1ms);
    CHECK(h.run() == 1);
    CHECK(h.log.sizes() == std::vector<size_t>{8, 12});  // empties the queue: not rounded
  }
  SECTION("max_batch_size 12 with a deep queue gives batches of 8") {
    p.max_batch_size = 12;
    Harness h(p);
    for (int i = 0; i < 30; ++i) h.submit(i);
    CHECK(h.run() == 3);
    CHECK(h.log.sizes() == std::vector<size_t>{8, 8, 8});
    h.advance(1ms);
    CHECK(h.run() == 1);
    CHECK(h.log.sizes() == std::vector<size_t>{8, 8, 8, 6});
    std::vector<int> expect(30);
    for (int i = 0; i < 30; ++i) expect[i] = i;
    CHECK(h.log.values() == expect);
  }
  SECTION("when the delay expires a short batch is not held back") {
    Harness h(p);
    for (int i = 0; i < 5; ++i) h.submit(i);
    CHECK(h.run() == 0);
    h.advance(1ms);
    CHECK(h.run() == 1);
    CHECK(h.log.sizes() == std::vector<size_t>{5});
    for (int i = 0; i < 13; ++i) h.submit(i);
    h.advance(1ms);
    CHECK(h.run() == 1);
    CHECK(h.log.sizes() == std::vector<size_t>{5, 13});
  }
  SECTION("when the delay expires a batch is not held back, though a request of another length stays queued") {
    Harness h(p);
    for (int i = 0; i < 10; ++i) h.submit(i);
    h.submit(100, {}, 1000);  // far from the others' bucket: it waits for a batch of its own
    CHECK(h.run() == 0);
    h.advance(1ms);
    CHECK(h.run() == 2);
    CHECK(h.log.sizes() == std::vector<size_t>{10, 1});
  }
}

TEST_CASE("Batcher keeps the padded cost (size x longest) within max_batch_tokens", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 64;
  p.max_batch_tokens = 256;

  SECTION("FIFO: the list head that does not fit ends the batch") {
    p.length_bucketing = false;
    Harness h(p);
    h.submit(0, {}, 100);
    for (int i = 1; i <= 3; ++i) h.submit(i, {}, 10);
    h.advance(1ms);
    CHECK(h.run() == 2);
    REQUIRE(h.log.size() == 2);
    const auto b = h.log.batches();
    CHECK(b[0].values == std::vector<int>{0, 1});  // 2 x 100 = 200; a third would pad to 300
    CHECK(b[0].padded_cost == 200);
    CHECK(b[1].values == std::vector<int>{2, 3});
    CHECK(b[1].padded_cost == 20);
  }
  SECTION("random costs, bucketed: every batch fits and its shape is exact") {
    Harness h(p);
    std::mt19937 rng(7);
    for (int i = 0; i < 300; ++i) h.submit(i, {.priority = static_cast<int>(rng() % 3)}, 1 + rng() % 128);
    h.advance(1ms);
    while (h.run() > 0) {
    }
    CHECK(h.out.size() == 300);
    CHECK(h.log.executed() == 300);
    uint64_t tokens = 0, padded = 0;
    for (const SeenBatch& b : h.log.batches()) {
      size_t max_cost = 0, total = 0;
      for (const RequestInfo& r : b.requests) max_cost = std::max(max_cost, r.cost), total += r.cost;
      CHECK(b.shape.size == b.requests.size());
      CHECK(b.shape.max_cost == max_cost);
      CHECK(b.shape.total_cost == total);
      CHECK(b.padded_cost == b.requests.size() * max_cost);
      CHECK(b.padded_cost <= 256);
      tokens += total;
      padded += b.padded_cost;
    }
    CHECK(h.stats().tokens == tokens);
    CHECK(h.stats().padded_tokens == padded);
  }
}

TEST_CASE("Length bucketing groups similar lengths and cuts padding against FIFO", "[batch]") {
  auto run_mix = [](bool bucketing) {
    BatchPolicy p = manual_policy();
    p.max_batch_size = 8;
    p.length_bucketing = bucketing;
    Harness h(p);
    for (int i = 0; i < 32; ++i) h.submit(i, {}, i % 2 ? 128 : 8);
    h.advance(1ms);
    while (h.run() > 0) {
    }
    REQUIRE(h.out.size() == 32);
    for (const SeenBatch& b : h.log.batches()) {
      CHECK(b.values.size() == 8);
      if (bucketing) {  // one length per batch
        for (const RequestInfo& r : b.requests) CHECK(r.cost == b.requests[0].cost);
      }
    }
    return h.stats();
  };
  const BatcherStats fifo = run_mix(false), bucketed = run_mix(true);
  CHECK(fifo.tokens == 16 * 8 + 16 * 128);
  CHECK(bucketed.tokens == fifo.tokens);
  CHECK(fifo.padded_tokens == 4 * 8 * 128);
  CHECK(bucketed.padded_tokens == 2 * 8 * 8 + 2 * 8 * 128);
  CHECK(bucketed.padded_tokens < fifo.padded_tokens);
  CHECK(fifo.padding_waste() == Approx(1.0 - 2176.0 / 4096.0));
  CHECK(bucketed.padding_waste() == 0.0);
  CHECK(fifo.batch_padded_tokens.sum() == fifo.padded_tokens);
}

TEST_CASE("A bucketed batch does not pad short requests to a far longer one, they wait for their own batch",
          "[batch]") {
  const int spread = GENERATE(0, 1, 4);
  BatchPolicy p = manual_policy();
  p.max_batch_size = 8;
  p.bucket_spread = spread;
  Harness h(p);
  h.submit(0, {.priority = 1}, 8);
  h.submit(1, {.priority = 1}, 16);  // the next bucket up
  h.submit(2, {.priority = 1}, 8);
  h.submit(3, {.priority = 0}, 128);  // the most urgent: it anchors the first batch
  h.submit(4, {.priority = 1}, 128);
  h.advance(1ms);
  while (h.run() > 0) {
  }
  REQUIRE(h.out.size() == 5);
  std::vector<std::vector<int>> batches;
  for (const SeenBatch& b : h.log.batches()) batches.push_back(b.values);
  if (spread == 4) {  // 8..15 and 128..255 are 4 buckets apart: one batch, nearest lengths first
    CHECK(batches == std::vector<std::vector<int>>{{3, 4, 1, 0, 2}});
  } else if (spread == 1) {
    CHECK(batches == std::vector<std::vector<int>>{{3, 4}, {0, 2, 1}});
  } else {
    CHECK(batches == std::vector<std::vector<int>>{{3, 4}, {0, 2}, {1}});
  }
}

TEST_CASE("Batcher keeps every batch's memory estimate within headroom x budget", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 64;
  p.memory_budget_bytes = 100000;
  p.memory_headroom = 0.8;
  const size_t limit = 80000;
  auto estimate = [](const BatchShape& s) { return s.size * s.max_cost * 100 + s.total_cost * 10; };
  BatchLog log;
  size_t violations = 0, largest = 0;
  TestFunctions f = echo_functions(&log);
  auto echo = f.run;
  f.estimate_bytes = estimate;
  f.run = [&](const BatchInfo& info, std::span<Req> in, std::span<absl::StatusOr<int>> out) {
    const size_t bytes = estimate(info.shape);
    if (bytes > limit) ++violations;
    largest = std::max(largest, bytes);
    return echo(info, in, out);
  };
  Harness h(p, f);
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) h.submit(i, {}, 1 + rng() % 100);
  h.advance(1ms);
  while (h.run() > 0) {
  }
  CHECK(h.out.size() == 200);
  CHECK(log.executed() == 200);
  CHECK(violations == 0);
  CHECK(largest <= limit);
  CHECK(log.size() > 4);  // without the budget, 200 requests fit in 4 batches of 64
}

TEST_CASE("Batcher serves strict priority without aging", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 3;
  p.aging_interval = Duration::zero();
  p.length_bucketing = GENERATE(false, true);
  Harness h(p);
  for (int prio : {2, 1, 0}) {
    for (int i = 0; i < 3; ++i) h.submit(prio * 10 + i, {.priority = prio}, 1 + i);
  }
  h.advance(1h);  // waiting does not help without aging
  CHECK(h.run() == 3);
  const auto b = h.log.batches();
  REQUIRE(b.size() == 3);
  for (int k = 0; k < 3; ++k) {
    for (const RequestInfo& r : b[k].requests) CHECK(r.priority == k);
  }
}

TEST_CASE("Aging lets a low-priority request compete after priority x aging_interval", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 1;
  p.max_queue_delay = Duration::zero();
  p.aging_interval = 10ms;
  // L (level 2) at t0, M (level 1) at t0 + 1 ms, then two level-0 requests at t0 + x; who runs first?
  auto order_at = [&](Duration x) {
    Harness h(p);
    const TimePoint t0 = h.now();
    h.submit(2, {.priority = 2});
    h.advance(1ms);
    h.submit(1, {.priority = 1});
    h.advance(x - 1ms);
    REQUIRE(h.now() == t0 + x);
    h.submit(0, {.priority = 0});
    h.submit(0, {.priority = 0});
    while (h.run() > 0) {
    }
    return h.log.values();
  };
  CHECK(order_at(5ms) == std::vector<int>{0, 0, 1, 2});   // nobody has aged
  CHECK(order_at(10ms) == std::vector<int>{0, 0, 2, 1});  // L aged to level 1 and is older than M
  CHECK(order_at(11ms) == std::vector<int>{1, 0, 0, 2});  // M aged to level 0, older than the newcomers
  CHECK(order_at(19ms) == std::vector<int>{1, 0, 0, 2});
  CHECK(order_at(20ms) == std::vector<int>{2, 1, 0, 0});  // L waited 2 x aging_interval: level 0, oldest
}

TEST_CASE("Aging keeps a steady stream of high-priority work from starving a low-priority request", "[batch]") {
  const bool aging = GENERATE(true, false);
  BatchPolicy p = manual_policy();
  p.max_batch_size = 1;
  p.max_queue_delay = Duration::zero();
  p.aging_interval = aging ? 10ms : Duration::zero();
  TestBatcher* self = nullptr;
  std::shared_ptr<ManualClock> clock;
  BatchLog log;
  Outcomes stream;
  int submitted = 1;
  TestFunctions f = echo_functions(&log);
  auto echo = f.run;
  f.run = [&](const BatchInfo& info, std::span<Req> in, std::span<absl::StatusOr<int>> out) {
    clock->advance(1ms);  // each batch takes 1 ms, and one new high-priority request arrives meanwhile
    if (submitted < 100) {
      ++submitted;
      REQUIRE(self->submit(Req{0, 1}, {.priority = 0}, stream.callback()).ok());
    }
    return echo(info, in, out);
  };
  Harness h(p, f);
  self = h.batcher.get();
  clock = h.clock;
  const TimePoint t0 = h.now();
  h.submit(2, {.priority = 2});
  h.submit(0, {.priority = 0});
  while (h.run() > 0) {
  }
  const auto batches = log.batches();
  REQUIRE(batches.size() == 101);
  size_t low_at = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (batches[i].values[0] == 2) low_at = i;
  }
  if (aging) {
    // It competes as level 0 from t0 + 20 ms on and is older than every queued request then.
    CHECK(batches[low_at].formed_at - t0 == 20ms);
    CHECK(low_at == 20);
  } else {
    CHECK(low_at == 100);  // strict priority: only after the stream stops
  }
}

TEST_CASE("Per-level token buckets reject with RESOURCE_EXHAUSTED and refill with time", "[batch]") {
  BatchPolicy p = manual_policy();
  p.levels[1].rate_limit = 10;
  p.levels[1].burst = 2;
  Harness h(p);
  CHECK(h.try_submit(1, {.priority = 1}).ok());
  CHECK(h.try_submit(1, {.priority = 1}).ok());
  auto over = h.try_submit(1, {.priority = 1});
  CHECK(over.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(contains(over.status(), "priority 1 (async)"));
  CHECK(contains(over.status(), "rate limit of 10 requests/s"));
  CHECK(brisk::batch::is_rate_limited(over.status()));
  for (int i = 0; i < 5; ++i) CHECK(h.try_submit(0, {.priority = 0}).ok());  // other levels are unlimited
  h.advance(50ms);                                                           // half a token
  CHECK(h.try_submit(1, {.priority = 1}).status().code() == absl::StatusCode::kResourceExhausted);
  h.advance(100ms);  // 1.5 tokens
  CHECK(h.try_submit(1, {.priority = 1}).ok());
  CHECK(h.try_submit(1, {.priority = 1}).status().code() == absl::StatusCode::kResourceExhausted);
  h.advance(10s);  // refills to the burst of 2, no more
  CHECK(h.try_submit(1, {.priority = 1}).ok());
  CHECK(h.try_submit(1, {.priority = 1}).ok());
  CHECK(h.try_submit(1, {.priority = 1}).status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(h.stats().rejected_overloaded == 4);
  CHECK(h.stats().submitted == 10);
}

TEST_CASE("Queue limits per level and in total reject at once, naming the limit", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_queue_size = 5;
  p.levels[1].max_queue_size = 2;
  Harness h(p);
  h.submit(1, {.priority = 1});
  h.submit(1, {.priority = 1});
  auto level_full = h.try_submit(1, {.priority = 1});
  CHECK(level_full.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(contains(level_full.status(), "priority 1 (async) holds 2 requests (levels[1].max_queue_size 2)"));
  h.submit(0);
  h.submit(0);
  const RequestId third = h.submit(2, {.priority = 2});
  auto total_full = h.try_submit(0);
  CHECK(total_full.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(contains(total_full.status(), "the queue holds 5 requests (BatchPolicy.max_queue_size 5)"));
  CHECK(h.stats().rejected_overloaded == 2);
  CHECK(h.out.size() == 0);
  REQUIRE(h.batcher->cancel(third).ok());  // room again
  CHECK(h.try_submit(0).ok());
  h.advance(1ms);
  CHECK(h.run() == 1);
  CHECK(h.try_submit(1, {.priority = 1}).ok());  // the level drained too
  CHECK(h.out.size() == 6);
}

TEST_CASE("A group larger than the queue is INVALID_ARGUMENT, never the retryable RESOURCE_EXHAUSTED", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 8;
  p.max_queue_size = 4;
  p.levels[1].max_queue_size = 2;
  p.levels[2].rate_limit = 1;
  p.levels[2].burst = 3;
  Harness h(p);
  auto group_of = [&](size_t n, int priority) {
    std::vector<Req> requests(n, Req{7, 1});
    std::vector<TestBatcher::Callback> callbacks;
    for (size_t i = 0; i < n; ++i) callbacks.push_back(h.out.callback());
    return h.batcher->submit_all(std::move(requests), {.priority = priority}, std::move(callbacks));
  };
  // Into an empty queue: one more than the capacity is refused as a request to split, naming both numbers.
  auto too_big = group_of(5, 0);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(too_big.status(),
                 "the group has 5 requests; expected at most 4, the queue's capacity "
                 "(BatchPolicy.max_queue_size)"));
  auto level_too_big = group_of(3, 1);
  REQUIRE_FALSE(level_too_big.ok());
  CHECK(level_too_big.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(level_too_big.status(),
                 "the group has 3 requests; expected at most 2, the capacity of priority 1 "
                 "(async) (levels[1].max_queue_size)"));
  // A rate-limited level's bucket never holds more than its burst.
  auto burst_too_big = group_of(4, 2);
  REQUIRE_FALSE(burst_too_big.ok());
  CHECK(burst_too_big.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(burst_too_big.status(),
                 "the group has 4 requests; expected at most 3, the burst of priority 2 "
                 "(bulk) (levels[2].burst)"));
  CHECK(h.stats().rejected_invalid == 12);  // counted per request: 5 + 3 + 4
  CHECK(h.stats().rejected_overloaded == 0);
  CHECK(h.stats().submitted == 0);
  CHECK(h.out.size() == 0);
  // Exactly the capacity fits an empty queue and runs.
  auto whole = group_of(4, 0);
  REQUIRE(whole.ok());
  CHECK(whole->size() == 4);
  // A group that fits the capacity but not what is left of it now is an overload, to retry: RESOURCE_EXHAUSTED.
  auto later = group_of(1, 0);
  REQUIRE_FALSE(later.ok());
  CHECK(later.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(h.stats().rejected_overloaded == 1);
  h.advance(1ms);
  CHECK(h.run() == 1);
  CHECK(h.out.size() == 4);
  for (RequestId id : *whole) CHECK(*h.out.get(id) == 7);
  CHECK(group_of(2, 1).ok());  // the level's capacity exactly
  CHECK(group_of(2, 2).ok());  // within the burst
}

TEST_CASE("evict_lower_priority makes room in a full queue for a more urgent request", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 8;
  p.max_queue_delay = 1h;
  p.max_queue_size = 3;
  p.evict_lower_priority = GENERATE(false, true);
  Harness h(p);
  const RequestId low_old = h.submit(0, {.priority = 2});
  h.advance(1ms);
  const RequestId low_new = h.submit(1, {.priority = 2});
  const RequestId mid = h.submit(2, {.priority = 1});
  auto urgent = h.try_submit(3, {.priority = 0});
  auto same = h.try_submit(4, {.priority = 2});  // never evicts its own level
  CHECK_FALSE(same.ok());
  if (!p.evict_lower_priority) {
    REQUIRE_FALSE(urgent.ok());
    CHECK(urgent.status().code() == absl::StatusCode::kResourceExhausted);
    CHECK(h.out.size() == 0);
    return;
  }
  REQUIRE(urgent.ok());
  REQUIRE(h.out.size() == 1);  // the newest request of the least urgent level, completed at once
  CHECK(h.out.code(low_new) == absl::StatusCode::kResourceExhausted);
  CHECK(contains(h.out.get(low_new).status(), "evicted from the full queue for a more urgent one"));
  CHECK(h.stats().evicted == 1);
  CHECK(h.stats().queued == 3);
  h.batcher->shutdown(ShutdownMode::kDrain).IgnoreError();
  CHECK(*h.out.get(low_old) == 0);
  CHECK(*h.out.get(mid) == 2);
  CHECK(*h.out.get(*urgent) == 3);
}

TEST_CASE("A request whose memory estimate outgrew the limit after submit fails instead of staying queued", "[batch]") {
  BatchPolicy p = manual_policy();
  p.memory_budget_bytes = 100;
  p.memory_headroom = 1.0;
  p.max_queue_delay = 1ms;
  std::atomic<size_t> bytes_per_token{1};
  BatchLog log;
  TestFunctions f = echo_functions(&log);
  f.estimate_bytes = [&](const BatchShape& s) { return s.total_cost * bytes_per_token.load(); };
  Harness h(p, f);
  const RequestId big = h.submit(1, {}, 10);  // 10 bytes alone: admitted
  const RequestId small = h.submit(2, {}, 1);
  bytes_per_token = 50;  // now 500 bytes alone, past the limit of 100; the small one needs 50
  h.advance(1ms);
  CHECK(h.run() == 2);  // the big one fails on its own, the small one runs
  CHECK(h.run() == 0);
  REQUIRE(h.out.has(big));
  const absl::Status failed = h.out.get(big).status();
  CHECK(failed.code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(failed, "500 bytes"));
  CHECK(contains(failed, "limit of 100"));
  CHECK(*h.out.get(small) == 2);
  CHECK(log.values() == std::vector<int>{2});
  CHECK(h.stats().queued == 0);
  CHECK(h.stats().failed == 1);
}

TEST_CASE("An executor fails a request that fits alone only under the submitting thread's estimate", "[batch]") {
  // The estimate depends on the asking thread (as a per-thread thread count once made it): the request fits when
  // submit() checks it and not when the executor forms a batch. It must fail, not sit queued with the executor
  // spinning on a ready queue.
  BatchPolicy p;
  p.executor_threads = 1;
  p.memory_budget_bytes = 100;
  p.memory_headroom = 1.0;
  p.max_queue_delay = 0ms;
  const std::thread::id submitter = std::this_thread::get_id();
  BatchLog log;
  TestFunctions f = echo_functions(&log);
  f.estimate_bytes = [submitter](const BatchShape& s) {
    return s.total_cost * (std::this_thread::get_id() == submitter ? 1 : 50);
  };
  auto made = TestBatcher::create(p, f);
  REQUIRE(made.ok());
  std::unique_ptr<TestBatcher> b = std::move(*made);
  auto big = b->submit(Req{1, 10});
  REQUIRE(big.ok());
  auto small = b->submit(Req{2, 1});
  REQUIRE(small.ok());
  REQUIRE(big->second.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  const absl::Status failed = big->second.get().status();
  CHECK(failed.code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(failed, "500 bytes"));
  REQUIRE(small->second.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(*small->second.get() == 2);
}
