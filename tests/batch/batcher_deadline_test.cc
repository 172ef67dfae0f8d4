// Deadlines (at enqueue, while queued, before execution; kReject and kDelay; default timeouts) and cancellation
// (queued, in flight, unknown ids).
#include <catch2/catch.hpp>

#include <future>

#include "batch/batch_test_util.h"

using namespace brisk;
using namespace brisk::batch;
using namespace brisk::batch::testing;

TEST_CASE("A deadline already past at submit is refused with DEADLINE_EXCEEDED", "[batch]") {
  Harness h;
  for (Duration ago : {Duration::zero(), Duration(1s)}) {
    auto r = h.try_submit(1, {.deadline = h.now() - ago});
    CHECK(r.status().code() == absl::StatusCode::kDeadlineExceeded);
    CHECK(contains(r.status(), "deadline has already passed"));
  }
  CHECK(h.stats().rejected_deadline == 2);
  CHECK(h.stats().submitted == 0);
  h.advance(1ms);
  CHECK(h.run() == 0);
  CHECK(h.out.size() == 0);  // never called back
}

TEST_CASE("A queued request expires at its deadline and never reaches the batch function", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_queue_delay = 10ms;
  Harness h(p);
  const RequestId late = h.submit(1, {.deadline = h.now() + 3ms});
  const RequestId patient = h.submit(2);
  h.advance(2ms);
  CHECK(h.run() == 0);
  CHECK_FALSE(h.out.has(late));  // not before its deadline
  h.advance(1ms);
  CHECK(h.run() == 0);
  REQUIRE(h.out.has(late));  // exactly at it
  CHECK(h.out.code(late) == absl::StatusCode::kDeadlineExceeded);
  CHECK(contains(h.out.get(late).status(), "while it was queued"));
  CHECK(h.stats().expired == 1);
  CHECK(h.stats().queued == 1);
  h.advance(7ms);
  CHECK(h.run() == 1);
  CHECK(h.log.values() == std::vector<int>{2});
  REQUIRE(h.out.get(patient).ok());
  CHECK(h.out.calls(late) == 1);
}

TEST_CASE("The deadline timer thread expires queued requests with executor threads running", "[batch]") {
  BatchPolicy p;
  p.executor_threads = 1;
  p.max_queue_delay = 1h;  // the executor never forms a batch on its own
  auto clock = std::make_shared<ManualClock>();
  BatchLog log;
  auto made = TestBatcher::create(p, echo_functions(&log), clock);
  REQUIRE(made.ok());
  std::unique_ptr<TestBatcher> b = std::move(*made);
  auto expiring = b->submit(Req{1, 1}, {.deadline = clock->now() + 5ms});
  auto patient = b->submit(Req{2, 1});
  REQUIRE(expiring.ok());
  REQUIRE(patient.ok());
  clock->advance(5ms);
  // Liveness bound only: the timer polls the manual clock every 200 us.
  REQUIRE(expiring->second.wait_for(60s) == std::future_status::ready);
  CHECK(expiring->second.get().status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(log.size() == 0);
  CHECK(b->stats().queued == 1);
  REQUIRE(b->shutdown(ShutdownMode::kDrain).ok());
  REQUIRE(patient->second.wait_for(0s) == std::future_status::ready);
  CHECK(*patient->second.get() == 2);
  CHECK(log.values() == std::vector<int>{2});
}

TEST_CASE("No kReject request reaches the batch function at or after its deadline", "[batch]") {
  // The clock moves while the batcher works: an expired request's callback advances it by 1 ms. The request
  // dropped at the pre-execution check must not run, and the batch's started_at must be the instant of that
  // check, so every request the batch function sees has deadline > started_at.
  std::shared_ptr<ManualClock> clock;
  BatchLog log;
  size_t late_seen = 0;
  TestFunctions f = echo_functions(&log, [&](const BatchInfo& info) {
    for (const RequestInfo& r : info.requests) {
      if (r.deadline <= info.started_at) ++late_seen;
    }
  });
  BatchPolicy p = manual_policy();
  p.max_queue_delay = 1ms;
  Harness h(p, f);
  clock = h.clock;
  const TimePoint t0 = h.now();
  Outcomes advancing;
  auto advance_then_record = [&] {
    return [&, inner = advancing.callback()](RequestId id, absl::StatusOr<int> r) mutable {
      clock->advance(1ms);
      inner(id, std::move(r));
    };
  };
  const RequestId e = *h.batcher->submit(Req{1, 1}, {.deadline = t0 + 1ms}, advance_then_record());
  const RequestId x = *h.batcher->submit(Req{2, 1}, {.deadline = t0 + 1500us}, advance_then_record());
  const RequestId y = h.submit(3, {.deadline = t0 + 2500us});
  const RequestId z = h.submit(4);
  h.advance(1ms);
  // expire_due drops e at t0+1 (its callback moves the clock to t0+2); the batch forms at t0+2 with x, y, z;
  // the check drops x (its callback moves the clock to t0+3); y (deadline t0+2.5) may run only if the batch
  // counts as started at t0+2.
  CHECK(h.run() == 1);
  CHECK(advancing.code(e) == absl::StatusCode::kDeadlineExceeded);
  CHECK(advancing.code(x) == absl::StatusCode::kDeadlineExceeded);
  CHECK(contains(advancing.get(x).status(), "before it ran"));
  REQUIRE(log.size() == 1);
  CHECK(log.values() == std::vector<int>{3, 4});
  CHECK(log.batches()[0].formed_at == t0 + 2ms);
  CHECK(log.batches()[0].started_at == t0 + 2ms);
  CHECK(late_seen == 0);
  CHECK(h.out.get(y).ok());
  CHECK(h.out.get(z).ok());
  CHECK(h.stats().expired == 2);
}

TEST_CASE("kDelay requests run after every request that is not late", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 1;
  p.aging_interval = Duration::zero();
  p.levels[1].deadline_action = DeadlineAction::kDelay;
  SECTION("late while queued") {
    Harness h(p);
    const RequestId d = h.submit(1, {.priority = 1, .deadline = h.now() + 2ms});
    h.submit(2, {.priority = 2});
    h.advance(2ms);
    CHECK(h.run() == 2);
    CHECK(h.log.values() == std::vector<int>{2, 1});  // level 1 behind level 2 once late
    REQUIRE(h.out.get(d).ok());                       // soft deadline: it still runs
    CHECK(h.stats().expired == 0);
  }
  SECTION("not late: normal priority") {
    Harness h(p);
    h.submit(1, {.priority = 1, .deadline = h.now() + 10ms});
    h.submit(2, {.priority = 2});
    h.advance(2ms);
    CHECK(h.run() == 2);
    CHECK(h.log.values() == std::vector<int>{1, 2});
  }
  SECTION("late at submit: admitted, last") {
    Harness h(p);
    auto d = h.try_submit(1, {.priority = 1, .deadline = h.now()});
    REQUIRE(d.ok());
    h.submit(2, {.priority = 2});
    h.submit(0, {.priority = 0});
    h.advance(1ms);
    CHECK(h.run() == 3);
    CHECK(h.log.values() == std::vector<int>{0, 2, 1});
    CHECK(h.out.get(*d).ok());
  }
}

TEST_CASE("A level's default_timeout applies when no deadline is given", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_queue_delay = 10ms;
  p.levels[0].default_timeout = 5ms;
  Harness h(p);
  const TimePoint t0 = h.now();
  const RequestId dflt = h.submit(1);
  const RequestId explicit_deadline = h.submit(2, {.deadline = t0 + 1h});
  const RequestId other_level = h.submit(3, {.priority = 1});
  h.advance(5ms);
  CHECK(h.run() == 0);
  CHECK(h.out.code(dflt) == absl::StatusCode::kDeadlineExceeded);
  CHECK_FALSE(h.out.has(explicit_deadline));
  h.advance(5ms);
  CHECK(h.run() == 1);
  CHECK(h.out.get(explicit_deadline).ok());
  CHECK(h.out.get(other_level).ok());
  const auto b = h.log.batches();
  REQUIRE(b.size() == 1);
  REQUIRE(b[0].requests.size() == 2);
  CHECK(b[0].requests[0].deadline == t0 + 1h);
  CHECK(b[0].requests[1].deadline == kNoDeadline);
}

TEST_CASE("Cancelling a queued request completes it with CANCELLED at once", "[batch]") {
  BatchPolicy p = manual_policy();
  p.levels[2].deadline_action = DeadlineAction::kDelay;
  Harness h(p);
  const RequestId a = h.submit(1), b = h.submit(2), c = h.submit(3, {.priority = 2, .deadline = h.now()});
  REQUIRE(h.batcher->cancel(b).ok());
  REQUIRE(h.out.has(b));  // before cancel() returned
  CHECK(h.out.code(b) == absl::StatusCode::kCancelled);
  CHECK(contains(h.out.get(b).status(), "request 2 was cancelled"));
  REQUIRE(h.batcher->cancel(c).ok());  // a late kDelay request
  CHECK(h.out.code(c) == absl::StatusCode::kCancelled);
  CHECK(h.stats().queued == 1);
  CHECK(h.batcher->cancel(b).code() == absl::StatusCode::kNotFound);  // already completed
  h.advance(1ms);
  CHECK(h.run() == 1);
  CHECK(h.log.values() == std::vector<int>{1});
  CHECK(h.out.get(a).ok());
  CHECK(h.stats().cancelled == 2);
  CHECK(h.out.duplicates().empty());
}

TEST_CASE("Cancelling a running request drops its result: CANCELLED when the batch ends", "[batch]") {
  TestBatcher* self = nullptr;
  Outcomes* outcomes = nullptr;
  BatchLog log;
  absl::Status first_cancel, second_cancel;
  bool called_back_during_run = true;
  TestFunctions f;
  f.run = [&](const BatchInfo& info, std::span<Req> in, std::span<absl::StatusOr<int>> out) {
    log.record(info, in);
    first_cancel = self->cancel(info.requests[1].id);
    second_cancel = self->cancel(info.requests[1].id);
    called_back_during_run = outcomes->has(info.requests[1].id);
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i].value;
    return absl::OkStatus();
  };
  Harness h(manual_policy(), f);
  self = h.batcher.get();
  outcomes = &h.out;
  const RequestId a = h.submit(1), b = h.submit(2), c = h.submit(3);
  h.advance(1ms);
  CHECK(h.run() == 1);
  CHECK(first_cancel.ok());
  CHECK(second_cancel.code() == absl::StatusCode::kNotFound);
  CHECK_FALSE(called_back_during_run);
  CHECK(h.out.code(b) == absl::StatusCode::kCancelled);
  CHECK(contains(h.out.get(b).status(), "while running"));
  CHECK(*h.out.get(a) == 1);
  CHECK(*h.out.get(c) == 3);
  CHECK(h.stats().cancelled == 1);
  CHECK(h.stats().completed == 2);
  CHECK(h.batcher->cancel(a).code() == absl::StatusCode::kNotFound);
}

TEST_CASE("Cancelling an unknown id is NOT_FOUND", "[batch]") {
  Harness h;
  for (RequestId id : {RequestId{0}, RequestId{1}, RequestId{999}}) {
    const absl::Status s = h.batcher->cancel(id);
    CHECK(s.code() == absl::StatusCode::kNotFound);
    CHECK(contains(s, "request " + std::to_string(id) + " is not queued or running"));
  }
  CHECK(h.stats().cancelled == 0);
}

TEST_CASE("reject_predicted_late refuses at submit what the queue ahead cannot clear by the deadline", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 4;
  p.max_queue_delay = 1h;  // batches run only when full, so the test decides what is queued
  p.reject_predicted_late = true;
  p.length_bucketing = false;  // FIFO: the test decides the order batches take requests in
  std::shared_ptr<ManualClock> clock;
  BatchLog log;
  TestFunctions f = echo_functions(&log, [&](const BatchInfo& info) {
    clock->advance(Duration(1ms) * static_cast<int64_t>(info.shape.total_cost));  // 1000 cost units per second
  });
  Harness h(p, f);
  clock = h.clock;
  // Before 8 batches have been measured there is no estimate: a request it would refuse is admitted.
  auto early = h.try_submit(0, {.priority = 1, .deadline = h.now() + 1ms}, 100);
  CHECK(early.ok());
  for (int i = 0; i < 35; ++i) h.submit(i, {.priority = 1});
  REQUIRE(h.run() == 9);  // 36 requests: 9 full batches measured, the first (with the 100-cost one) in time
  CHECK(h.stats().completed == 36);

  for (int i = 0; i < 3; ++i) h.submit(i, {.priority = 1}, 6);  // 18 cost units queued at priority 1: ~18 ms
  auto late = h.try_submit(9, {.priority = 1, .deadline = h.now() + 10ms}, 1);
  REQUIRE_FALSE(late.ok());
  CHECK(late.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(contains(late.status(), "the work ahead needs about 19 ms, past the request's deadline in 10 ms"));
  CHECK(contains(late.status(), "reject_predicted_late"));
  CHECK(h.stats().rejected_overloaded == 1);
  // The same deadline at priority 0 has nothing ahead of it; a later deadline at priority 1 can be met.
  CHECK(h.try_submit(10, {.priority = 0, .deadline = h.now() + 10ms}, 1).ok());
  CHECK(h.try_submit(11, {.priority = 1, .deadline = h.now() + 50ms}, 1).ok());
}

namespace {

// reject_predicted_late with batches of 4 that run only when full (FIFO), each costing 1 ms per cost unit on the
// manual clock (1000 cost units per second, measured over 9 batches at construction). during_batch, when set, runs
// once at the start of the next batch, while it is in flight.
struct InFlightPrediction {
  static BatchPolicy policy() {
    BatchPolicy p = manual_policy();
    p.max_batch_size = 4;
    p.max_queue_delay = 1h;
    p.reject_predicted_late = true;
    p.length_bucketing = false;
    return p;
  }
  InFlightPrediction()
      : h(policy(), echo_functions(&log, [this](const BatchInfo& info) {
            if (during_batch) std::exchange(during_batch, nullptr)();
            h.clock->advance(Duration(1ms) * static_cast<int64_t>(info.shape.total_cost));
          })) {
    for (int i = 0; i < 36; ++i) h.submit(i);
    REQUIRE(h.run() == 9);
  }
  std::function<void()> during_batch;
  BatchLog log;
  Harness h;
};

}  // namespace

TEST_CASE("reject_predicted_late counts the batch in flight and the rest of the request's own batch", "[batch]") {
  InFlightPrediction t;
  Harness& h = t.h;
  auto& during_batch = t.during_batch;

  // A batch of cost 40 starts (40 ms). Submitted while it runs, with nothing queued, a request of cost 2 waits for
  // the batch in flight, then for its own batch, which fills behind it to 4 requests at the mean queued cost:
  // 40 + 2 + 3 x 2 = 48 ms. Before, the prediction saw only the 2 of its own cost.
  absl::StatusOr<RequestId> probe, second, patient;
  during_batch = [&] {
    probe = h.try_submit(100, {.deadline = h.now() + 45ms}, 2);
    patient = h.try_submit(101, {.deadline = h.now() + 60ms}, 2);
    // Now one request (cost 2) is queued ahead: 40 + 2 + 2 + 2 x 2 = 48 ms for a second one.
    second = h.try_submit(102, {.deadline = h.now() + 47ms}, 2);
  };
  for (int i = 0; i < 4; ++i) h.submit(i, {}, 10);
  REQUIRE(h.run() == 1);
  REQUIRE_FALSE(probe.ok());
  CHECK(probe.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(contains(probe.status(), "the work ahead needs about 48 ms, past the request's deadline in 45 ms"));
  REQUIRE(patient.ok());
  REQUIRE_FALSE(second.ok());
  CHECK(contains(second.status(), "the work ahead needs about 48 ms, past the request's deadline in 47 ms"));
  CHECK(h.stats().rejected_overloaded == 2);

  // With the batch finished and an executor free, the same request needs only the queue and itself: 2 + 2 = 4 ms.
  CHECK(h.try_submit(103, {.deadline = h.now() + 5ms}, 2).ok());
}

TEST_CASE("reject_predicted_late fills the request's batch at the measured arrival rate, not to the limit", "[batch]") {
  InFlightPrediction t;
  Harness& h = t.h;
  auto& during_batch = t.during_batch;
  // Then requests arrive 200 ms apart: about 5 per second once the first burst has decayed.
  for (int i = 0; i < 16; ++i) {
    h.advance(200ms);
    h.submit(i);
  }
  REQUIRE(h.run() == 4);

  // As in the test above, a batch of cost 40 runs and a request of cost 2 arrives with nothing queued. At 5 requests
  // per second, about 0.2 more join its batch in the 40 ms before it starts, not 3: 40 + 2 + 0.2 x 2 = 42 ms.
  absl::StatusOr<RequestId> probe, tight;
  during_batch = [&] {
    tight = h.try_submit(101, {.deadline = h.now() + 41ms}, 2);  // the batch in flight and its own cost alone: 42 ms
    probe = h.try_submit(100, {.deadline = h.now() + 45ms}, 2);  // refused when the batch was assumed to fill (48 ms)
  };
  for (int i = 0; i < 4; ++i) h.submit(i, {}, 10);
  REQUIRE(h.run() == 1);
  CHECK(probe.ok());
  REQUIRE_FALSE(tight.ok());
  CHECK(contains(tight.status(), "the work ahead needs about 42 ms, past the request's deadline in 41 ms"));
}

TEST_CASE("fail_late_results answers DEADLINE_EXCEEDED for a request whose batch ended past its deadline", "[batch]") {
  for (const bool fail_late : {true, false}) {
    BatchPolicy p = manual_policy();
    p.max_batch_size = 3;
    p.max_queue_delay = 1h;
    p.fail_late_results = fail_late;
    std::shared_ptr<ManualClock> clock;
    BatchLog log;
    TestFunctions f = echo_functions(&log, [&](const BatchInfo&) { clock->advance(5ms); });
    Harness h(p, f);
    clock = h.clock;
    const RequestId tight = h.submit(1, {.deadline = h.now() + 3ms});  // in time at the start, late at the end
    const RequestId roomy = h.submit(2, {.deadline = h.now() + 5ms});  // finishes exactly at its deadline
    const RequestId open = h.submit(3);
    REQUIRE(h.run() == 1);
    CHECK(log.values() == std::vector<int>{1, 2, 3});  // all three were computed
    REQUIRE(h.out.get(roomy).ok());
    REQUIRE(h.out.get(open).ok());
    CHECK(h.out.calls(tight) == 1);
    if (fail_late) {
      CHECK(h.out.code(tight) == absl::StatusCode::kDeadlineExceeded);
      CHECK(contains(h.out.get(tight).status(), "deadline passed while its batch ran (finished 2 ms late"));
      CHECK(h.stats().expired == 1);
      CHECK(h.stats().completed == 2);
    } else {
      REQUIRE(h.out.get(tight).ok());
      CHECK(*h.out.get(tight) == 1);
      CHECK(h.stats().expired == 0);
      CHECK(h.stats().completed == 3);
    }
  }
}
