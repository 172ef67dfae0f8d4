// Batcher basics: how each request completes (result, batch error, per-result error, exception), the future
// form of submit, bad input with its messages, BatchPolicy::validate(), and the metrics in stats() and in the
// Prometheus exposition.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "batch/batch_test_util.h"
#include "brisk/batch/batcher_metrics.h"
#include "brisk/metrics/prometheus.h"

using namespace brisk;
using namespace brisk::batch;
using namespace brisk::batch::testing;

TEST_CASE("Batcher completes every request exactly once with its result", "[batch]") {
  Harness h;
  std::vector<RequestId> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(h.submit(100 + i));
  CHECK(ids == std::vector<RequestId>{1, 2, 3, 4, 5});  // admission order, starting at 1
  CHECK(h.out.size() == 0);
  h.advance(1ms);
  CHECK(h.run() == 1);
  REQUIRE(h.out.size() == 5);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(h.out.get(ids[i]).ok());
    CHECK(*h.out.get(ids[i]) == 100 + i);
  }
  CHECK(h.out.duplicates().empty());
  CHECK(h.run() == 0);  // nothing left
  h.batcher.reset();
  CHECK(h.out.size() == 5);  // the destructor completes nothing twice
}

TEST_CASE("Batcher delivers the batch function's errors: returned, per result, thrown, left unset", "[batch]") {
  enum Mode { kReturn, kPerResult, kThrow, kThrowInt, kUnset };
  Mode mode = GENERATE(kReturn, kPerResult, kThrow, kThrowInt, kUnset);
  BatchLog log;
  TestFunctions f;
  f.run = [&](const BatchInfo& info, std::span<Req> in, std::span<absl::StatusOr<int>> out) -> absl::Status {
    log.record(info, in);
    switch (mode) {
      case kReturn: return absl::DataLossError("device fell over");
      case kPerResult:
        for (size_t i = 0; i < in.size(); ++i) {
          out[i] = in[i].value % 2 ? absl::StatusOr<int>(absl::OutOfRangeError("odd input")) : in[i].value;
        }
        return absl::OkStatus();
      case kThrow: throw std::runtime_error("boom");
      case kThrowInt: throw 42;
      case kUnset: out[0] = in[0].value; return absl::OkStatus();
    }
    return absl::OkStatus();
  };
  Harness h(manual_policy(), f);
  const RequestId a = h.submit(2), b = h.submit(3);
  h.advance(1ms);
  REQUIRE(h.run() == 1);
  REQUIRE(h.out.size() == 2);
  CHECK(h.out.duplicates().empty());
  const BatcherStats s = h.stats();
  CHECK(s.batches == 1);
  switch (mode) {
    case kReturn:
      for (RequestId id : {a, b}) {
        CHECK(h.out.code(id) == absl::StatusCode::kDataLoss);
        CHECK(contains(h.out.get(id).status(), "device fell over"));
      }
      CHECK(s.failed == 2);
      CHECK(s.failed_batches == 1);
      break;
    case kPerResult:
      REQUIRE(h.out.get(a).ok());
      CHECK(*h.out.get(a) == 2);
      CHECK(h.out.code(b) == absl::StatusCode::kOutOfRange);
      CHECK(s.completed == 1);
      CHECK(s.failed == 1);
      CHECK(s.failed_batches == 0);
      break;
    case kThrow:
      for (RequestId id : {a, b}) {
        CHECK(h.out.code(id) == absl::StatusCode::kInternal);
        CHECK(contains(h.out.get(id).status(), "threw: boom"));
      }
      CHECK(s.failed == 2);
      CHECK(s.failed_batches == 1);
      break;
    case kThrowInt:
      CHECK(contains(h.out.get(a).status(), "non-standard exception"));
      CHECK(contains(h.out.get(b).status(), "non-standard exception"));
      break;
    case kUnset:
      REQUIRE(h.out.get(a).ok());
      CHECK(h.out.code(b) == absl::StatusCode::kInternal);
      CHECK(contains(h.out.get(b).status(), "left result 1 unset"));
      break;
  }
}

TEST_CASE("Batcher future submit and throwing callbacks", "[batch]") {
  Harness h;
  auto sub = h.batcher->submit(Req{7, 1});
  REQUIRE(sub.ok());
  auto& [id, fut] = *sub;
  CHECK(id == 1);
  // A callback that throws does not take the batcher down; it is counted.
  REQUIRE(h.batcher->submit(Req{8, 1}, {}, [](RequestId, absl::StatusOr<int>) { throw std::runtime_error("x"); }).ok());
  h.advance(1ms);
  REQUIRE(h.run() == 1);
  REQUIRE(fut.wait_for(0s) == std::future_status::ready);
  auto r = fut.get();
  REQUIRE(r.ok());
  CHECK(*r == 7);
  CHECK(h.stats().callback_exceptions == 1);
  CHECK(h.stats().completed == 2);
}

TEST_CASE("Batcher rejects bad input with a clear message and never calls back", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_tokens = 100;
  p.memory_budget_bytes = 10000;  // limit 8000 with the default headroom 0.8
  BatchLog log;
  TestFunctions f = echo_functions(&log);
  f.estimate_bytes = [](const BatchShape& s) { return s.size * s.max_cost * 100; };
  Harness h(p, f);

  auto empty = h.batcher->submit(Req{1, 1}, {}, TestBatcher::Callback{});
  CHECK(empty.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(empty.status(), "callback is empty"));

  for (int prio : {-1, 3, 1000}) {
    auto r = h.try_submit(1, {.priority = prio});
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(r.status(), "priority " + std::to_string(prio) + " is out of range; expected 0..2"));
  }

  auto tokens = h.try_submit(1, {}, 101);
  CHECK(tokens.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(tokens.status(), "costs 101"));
  CHECK(contains(tokens.status(), "max_batch_tokens 100"));

  auto memory = h.try_submit(1, {}, 81);  // 8100 bytes > 8000
  CHECK(memory.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(memory.status(), "8100 bytes"));
  CHECK(contains(memory.status(), "memory limit of 8000"));
  CHECK(h.try_submit(1, {}, 80).ok());  // 8000 bytes fits exactly

  const BatcherStats s = h.stats();
  CHECK(s.rejected_invalid == 5);  // the priorities, the tokens, the memory; an empty callback is not counted
  CHECK(s.submitted == 1);
  REQUIRE(h.batcher->shutdown(ShutdownMode::kCancel).ok());
  auto late = h.try_submit(1);
  CHECK(late.status().code() == absl::StatusCode::kUnavailable);
  CHECK(contains(late.status(), "shut down"));
  CHECK(h.stats().rejected_shutdown == 1);
  CHECK(h.out.size() == 1);  // only the admitted one was called back
  CHECK(log.size() == 0);
}

TEST_CASE("BatchPolicy::validate names each bad field, and create() refuses it", "[batch]") {
  struct Case {
    std::function<void(BatchPolicy&)> edit;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {[](BatchPolicy& p) { p.max_batch_size = 0; }, "max_batch_size is 0"},
      {[](BatchPolicy& p) { p.max_queue_delay = -1ms; }, "max_queue_delay is negative"},
      {[](BatchPolicy& p) { p.preferred_batch_multiple = 0; }, "preferred_batch_multiple is 0"},
      {[](BatchPolicy& p) { p.memory_headroom = 0; }, "memory_headroom is 0"},
      {[](BatchPolicy& p) { p.memory_headroom = 1.5; }, "memory_headroom is 1.5"},
      {[](BatchPolicy& p) { p.levels.clear(); }, "levels is empty"},
      {[](BatchPolicy& p) { p.aging_interval = -1ms; }, "aging_interval is negative"},
      {[](BatchPolicy& p) { p.max_queue_size = 0; }, "max_queue_size is 0"},
      {[](BatchPolicy& p) { p.executor_threads = -1; }, "executor_threads is -1"},
      {[](BatchPolicy& p) { p.executor_threads = 257; }, "executor_threads is 257"},
      {[](BatchPolicy& p) { p.max_inflight_batches = -1; }, "max_inflight_batches is negative"},
      {[](BatchPolicy& p) { p.levels[1].rate_limit = -1; }, "levels[1].rate_limit is negative"},
      {[](BatchPolicy& p) { p.levels[2].burst = -1; }, "levels[2].burst is negative"},
      {[](BatchPolicy& p) { p.levels[0].default_timeout = -1ms; }, "levels[0].default_timeout is negative"},
      {[](BatchPolicy& p) { p.adaptive.enabled = true, p.adaptive.p99_target = 0ms; }, "adaptive.p99_target"},
      {[](BatchPolicy& p) { p.adaptive.enabled = true, p.adaptive.decrease_factor = 1; }, "adaptive.decrease_factor"},
      {[](BatchPolicy& p) { p.adaptive.enabled = true, p.adaptive.increase_factor = 1; }, "adaptive.increase_factor"},
      {[](BatchPolicy& p) { p.adaptive.enabled = true, p.adaptive.well_under = 1; }, "adaptive.well_under"},
      {[](BatchPolicy& p) { p.adaptive.enabled = true, p.adaptive.window = 0; }, "adaptive.window is 0"},
  };
  CHECK(BatchPolicy{}.validate().ok());
  BatchLog log;
  for (const Case& c : cases) {
    BatchPolicy p = manual_policy();
    c.edit(p);
    const absl::Status s = p.validate();
    INFO(c.needle << " -> " << s);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(s, "BatchPolicy." + c.needle));
    auto b = TestBatcher::create(p, echo_functions(&log));
    CHECK(b.status() == s);
  }
  auto no_run = TestBatcher::create(manual_policy(), TestFunctions{});
  CHECK(no_run.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(no_run.status(), "BatchFunctions.run is empty"));
}

TEST_CASE("Batcher stats agree with what the test observed", "[batch]") {
  BatchPolicy p = manual_policy();
  p.max_batch_size = 4;
  p.max_queue_delay = 5ms;
  p.max_queue_size = 10;
  BatchLog log;
  TestFunctions f = echo_functions(&log);
  f.run = [&](const BatchInfo& info, std::span<Req> in, std::span<absl::StatusOr<int>> out) {
    log.record(info, in);
    for (size_t i = 0; i < in.size(); ++i) {
      out[i] = in[i].value < 0 ? absl::StatusOr<int>(absl::InvalidArgumentError("negative")) : in[i].value;
    }
    return absl::OkStatus();
  };
  Harness h(p, f);
  // Four requests, costs 1..4 at levels 1 and 0: a full batch, which runs at once before any delay passed.
  for (int i = 1; i <= 4; ++i) h.submit(i, {.priority = i % 2}, static_cast<size_t>(i));
  CHECK(h.run() == 1);
  // Then one that fails, one that is cancelled, one that expires, one rejected as already late.
  const RequestId failing = h.submit(-1, {}, 2);
  const RequestId to_cancel = h.submit(9);
  const RequestId to_expire = h.submit(9, {.deadline = h.now() + 2ms});
  REQUIRE(h.batcher->cancel(to_cancel).ok());
  CHECK(h.try_submit(1, {.deadline = h.now()}).status().code() == absl::StatusCode::kDeadlineExceeded);
  h.advance(5ms);  // to_expire is now late; the failing one has waited 5 ms
  CHECK(h.run() == 1);
  REQUIRE(log.size() == 2);
  CHECK(h.out.code(failing) == absl::StatusCode::kInvalidArgument);
  CHECK(h.out.code(to_cancel) == absl::StatusCode::kCancelled);
  CHECK(h.out.code(to_expire) == absl::StatusCode::kDeadlineExceeded);
  // Fill the queue to its limit of 10 and overflow it once.
  for (int i = 0; i < 10; ++i) h.submit(1);
  CHECK(h.try_submit(1).status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(h.stats().queued == 10);
  CHECK(h.stats().queued_per_level == std::vector<size_t>{10, 0, 0});
  REQUIRE(h.batcher->shutdown(ShutdownMode::kCancel).ok());

  const BatcherStats s = h.stats();
  CHECK(s.submitted == 17);
  CHECK(s.completed == 4);
  CHECK(s.failed == 1);
  CHECK(s.cancelled == 1);
  CHECK(s.expired == 1);
  CHECK(s.shutdown == 10);
  CHECK(s.rejected_deadline == 1);
  CHECK(s.rejected_overloaded == 1);
  CHECK(s.batches == 2);
  CHECK(s.batch_size.count() == 2);
  CHECK(s.batch_size.sum() == 5);
  CHECK(s.batch_size.max() == 4);
  CHECK(s.batch_size.min() == 1);
  CHECK(s.tokens == 1 + 2 + 3 + 4 + 2);
  CHECK(s.padded_tokens == 4 * 4 + 1 * 2);
  CHECK(s.padding_waste() == Approx(1.0 - 12.0 / 18.0));
  CHECK(s.queue_time.count() == 5);
  CHECK(s.queue_time.min() == 0);  // the full batch started at once
  CHECK(s.queue_time.max() == static_cast<uint64_t>(std::chrono::nanoseconds(5ms).count()));
  REQUIRE(s.queue_time_per_level.size() == 3);
  CHECK(s.queue_time_per_level[0].count() == 3);  // values 2, 4 and the failing one
  CHECK(s.queue_time_per_level[1].count() == 2);
  CHECK(s.queued == 0);
  CHECK(s.batch_limit == 4);
  CHECK(s.queue_delay == 5ms);
  CHECK(h.out.size() == 17);
  CHECK(h.out.duplicates().empty());
}

TEST_CASE("write_prometheus exposes the batcher's families with their labels", "[batch]") {
  Harness h;
  h.submit(1);
  h.submit(2, {.priority = 2});
  h.advance(1ms);
  REQUIRE(h.run() == 1);
  h.submit(3, {.priority = 1});
  brisk::metrics::PrometheusWriter w;
  write_prometheus(w, h.stats(), h.batcher->policy(), "brisk_batcher", {{"model", "minilm"}});
  REQUIRE(w.status().ok());
  const std::string text = w.str();
  INFO(text);
  for (const char* line : {
           "# TYPE brisk_batcher_requests_total counter",
           "brisk_batcher_requests_total{model=\"minilm\",outcome=\"completed\"} 2",
           "brisk_batcher_requests_total{model=\"minilm\",outcome=\"rejected_overloaded\"} 0",
           "brisk_batcher_submitted_total{model=\"minilm\"} 3",
           "brisk_batcher_batches_total{model=\"minilm\"} 1",
           "brisk_batcher_tokens_total{model=\"minilm\"} 2",
           "brisk_batcher_padded_tokens_total{model=\"minilm\"} 2",
           "# TYPE brisk_batcher_queue_seconds summary",
           "brisk_batcher_queue_seconds{model=\"minilm\",quantile=\"0.99\"}",
           "brisk_batcher_queue_seconds_count{model=\"minilm\"} 2",
           "brisk_batcher_batch_size_count{model=\"minilm\"} 1",
           "brisk_batcher_level_queue_seconds_count{model=\"minilm\",priority=\"realtime\"} 1",
           "brisk_batcher_level_queue_seconds_count{model=\"minilm\",priority=\"bulk\"} 1",
           "brisk_batcher_level_queued{model=\"minilm\",priority=\"async\"} 1",
           "brisk_batcher_queued{model=\"minilm\"} 1",
           "brisk_batcher_inflight_batches{model=\"minilm\"} 0",
           "brisk_batcher_batch_limit{model=\"minilm\"} 32",
           "brisk_batcher_padding_waste_ratio{model=\"minilm\"} 0",
       }) {
    CHECK(text.find(line) != std::string::npos);
  }
}
