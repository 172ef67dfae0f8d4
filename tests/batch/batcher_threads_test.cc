// Executor threads: the max_inflight_batches limit, in_order_completion, and executors woken by the queue
// delay on a manual clock.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <random>
#include <thread>

#include "batch/batch_test_util.h"

using namespace brisk;
using namespace brisk::batch;
using namespace brisk::batch::testing;

TEST_CASE("K executors never run more than max_inflight_batches batch functions at once", "[batch]") {
  const int threads = 4;
  const int limit = GENERATE(1, 2, 0);  // 0: as many as executor threads
  const int effective = limit == 0 ? threads : limit;
  std::mutex mu;
  std::condition_variable cv;
  int running = 0, max_running = 0;
  bool rendezvous_done = false;
  BatchLog log;
  TestFunctions f = echo_functions(&log);
  auto echo = f.run;
  f.run = [&](const BatchInfo& info, std::span<Req> in, std::span<absl::StatusOr<int>> out) {
    {
      std::unique_lock lock(mu);
      max_running = std::max(max_running, ++running);
      // The first batches wait (boundedly) until the limit is reached, so the test sees that it can be.
      if (!rendezvous_done) {
        cv.wait_for(lock, std::chrono::seconds(30), [&] { return running >= effective; });
        rendezvous_done = true;
        cv.notify_all();
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    {
      std::lock_guard lock(mu);
      --running;
    }
    return echo(info, in, out);
  };
  BatchPolicy p;
  p.executor_threads = threads;
  p.max_inflight_batches = limit;
  p.max_batch_size = 4;
  p.max_queue_delay = Duration::zero();
  Outcomes outcomes;
  auto made = TestBatcher::create(p, f);
  REQUIRE(made.ok());
  std::unique_ptr<TestBatcher> b = std::move(*made);
  std::atomic<int> refused{0};  // Catch assertions are not thread-safe: count on the producers
  std::vector<std::thread> producers;
  for (int t = 0; t < 2; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) refused += !b->submit(Req{t * 1000 + i, 1}, {}, outcomes.callback()).ok();
    });
  }
  for (std::thread& t : producers) t.join();
  CHECK(refused.load() == 0);
  REQUIRE(b->shutdown(ShutdownMode::kDrain).ok());
  CHECK(outcomes.size() == 400);
  CHECK(outcomes.duplicates().empty());
  CHECK(log.executed() == 400);
  CHECK(max_running <= effective);
  CHECK(max_running == effective);
  CHECK(b->stats().inflight_batches == 0);
}

TEST_CASE("in_order_completion calls back in admission order though batches finish out of order", "[batch]") {
  BatchLog log;
  TestFunctions f = echo_functions(&log);
  auto echo = f.run;
  // Batch 0 finishes only after another batch has (bounded wait), so finishing out of order is certain; the
  // rest sleep at random.
  std::mutex mu;
  std::condition_variable cv;
  bool other_done = false, overtaken = false;
  f.run = [&](const BatchInfo& info, std::span<Req> in, std::span<absl::StatusOr<int>> out) {
    if (info.sequence == 0) {
      std::unique_lock lock(mu);
      overtaken = cv.wait_for(lock, std::chrono::seconds(30), [&] { return other_done; });
    } else {
      std::mt19937 rng(static_cast<uint32_t>(info.sequence));
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    }
    absl::Status s = info.sequence % 5 == 3 ? absl::InternalError("some batches fail") : echo(info, in, out);
    if (info.sequence != 0) {
      std::lock_guard lock(mu);
      other_done = true;
      cv.notify_all();
    }
    return s;
  };
  BatchPolicy p;
  p.executor_threads = 4;
  p.max_batch_size = 3;
  p.max_queue_delay = Duration::zero();
  p.in_order_completion = true;
  p.levels[0].default_timeout = std::chrono::seconds(60);
  Outcomes outcomes;
  auto made = TestBatcher::create(p, f);
  REQUIRE(made.ok());
  std::unique_ptr<TestBatcher> b = std::move(*made);
  std::vector<RequestId> ids;
  for (int i = 0; i < 300; ++i) {
    auto id = b->submit(Req{i, 1}, {.priority = i % 3}, outcomes.callback());
    REQUIRE(id.ok());
    ids.push_back(*id);
    if (i % 17 == 5) (void)b->cancel(ids[ids.size() / 2]);
  }
  REQUIRE(b->shutdown(ShutdownMode::kDrain).ok());
  const std::vector<RequestId> order = outcomes.order();
  REQUIRE(order.size() == 300);
  for (size_t i = 0; i < order.size(); ++i) REQUIRE(order[i] == i + 1);
  CHECK(overtaken);
}

TEST_CASE("in_order_completion holds back a cancelled request until earlier ones complete", "[batch]") {
  BatchPolicy p = manual_policy();
  p.in_order_completion = true;
  Harness h(p);
  const RequestId a = h.submit(1), b = h.submit(2), c = h.submit(3);
  REQUIRE(h.batcher->cancel(c).ok());
  CHECK(h.out.size() == 0);  // c waits for a and b
  REQUIRE(h.batcher->cancel(a).ok());
  CHECK(h.out.order() == std::vector<RequestId>{a});
  h.advance(1ms);
  CHECK(h.run() == 1);
  CHECK(h.out.order() == std::vector<RequestId>{a, b, c});
  CHECK(h.out.code(c) == absl::StatusCode::kCancelled);
  CHECK(*h.out.get(b) == 2);
}

TEST_CASE("An executor on a manual clock forms the batch once the queue delay has passed", "[batch]") {
  BatchPolicy p;
  p.executor_threads = 2;
  p.max_queue_delay = 5ms;
  auto clock = std::make_shared<ManualClock>();
  BatchLog log;
  Outcomes outcomes;
  auto made = TestBatcher::create(p, echo_functions(&log), clock);
  REQUIRE(made.ok());
  std::unique_ptr<TestBatcher> b = std::move(*made);
  const TimePoint t0 = clock->now();
  for (int i = 0; i < 3; ++i) REQUIRE(b->submit(Req{i, 1}, {}, outcomes.callback()).ok());
  clock->advance(5ms);
  REQUIRE(eventually([&] { return outcomes.size() == 3; }));  // liveness bound only
  const auto batches = log.batches();
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].formed_at == t0 + 5ms);  // nothing ran before the delay: time stood still until then
  CHECK(batches[0].values == std::vector<int>{0, 1, 2});
}
