// Shared helpers for the batcher tests: a small request type, a recorder of callbacks and of the batches the
// batch function saw, and a harness that drives a Batcher on a ManualClock with executor_threads = 0, so that
// nothing runs in the background and every timing decision is made by the test.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "brisk/batch/batcher.h"

namespace brisk::batch::testing {

using namespace std::chrono_literals;

struct Req {
  int value = 0;
  size_t cost = 1;
};
using TestBatcher = Batcher<Req, int>;
using TestFunctions = BatchFunctions<Req, int>;

// Every callback the batcher made: how often per id, in which order, with what.
class Outcomes {
 public:
  TestBatcher::Callback callback() {
    return [this](RequestId id, absl::StatusOr<int> r) {
      std::lock_guard lock(mu_);
      ++calls_[id];
      order_.push_back(id);
      results_.insert_or_assign(id, std::move(r));
    };
  }
  bool has(RequestId id) const {
    std::lock_guard lock(mu_);
    return results_.count(id) != 0;
  }
  int calls(RequestId id) const {
    std::lock_guard lock(mu_);
    auto it = calls_.find(id);
    return it == calls_.end() ? 0 : it->second;
  }
  absl::StatusOr<int> get(RequestId id) const {
    std::lock_guard lock(mu_);
    auto it = results_.find(id);
    if (it == results_.end()) return absl::UnknownError("no callback for this id");
    return it->second;
  }
  absl::StatusCode code(RequestId id) const { return get(id).status().code(); }
  size_t size() const {
    std::lock_guard lock(mu_);
    return order_.size();
  }
  std::vector<RequestId> order() const {
    std::lock_guard lock(mu_);
    return order_;
  }
  // Ids called back more than once (must stay empty).
  std::vector<RequestId> duplicates() const {
    std::lock_guard lock(mu_);
    std::vector<RequestId> d;
    for (const auto& [id, n] : calls_) {
      if (n != 1) d.push_back(id);
    }
    return d;
  }

 private:
  mutable std::mutex mu_;
  std::map<RequestId, int> calls_;
  std::map<RequestId, absl::StatusOr<int>> results_;
  std::vector<RequestId> order_;
};

// What the batch function saw, batch by batch.
struct SeenBatch {
  uint64_t sequence = 0;
  TimePoint formed_at, started_at;
  BatchShape shape;
  size_t padded_cost = 0;
  std::vector<RequestInfo> requests;
  std::vector<int> values;
};

class BatchLog {
 public:
  void record(const BatchInfo& info, std::span<const Req> in) {
    SeenBatch b{info.sequence,
                info.formed_at,
                info.started_at,
                info.shape,
                info.padded_cost,
                {info.requests.begin(), info.requests.end()},
                {}};
    for (const Req& r : in) b.values.push_back(r.value);
    std::lock_guard lock(mu_);
    batches_.push_back(std::move(b));
  }
  std::vector<SeenBatch> batches() const {
    std::lock_guard lock(mu_);
    return batches_;
  }
  size_t size() const {
    std::lock_guard lock(mu_);
    return batches_.size();
  }
  std::vector<size_t> sizes() const {
    std::vector<size_t> s;
    for (const SeenBatch& b : batches()) s.push_back(b.values.size());
    return s;
  }
  // Every value the batch function saw, in execution order.
  std::vector<int> values() const {
    std::vector<int> v;
    for (const SeenBatch& b : batches()) v.insert(v.end(), b.values.begin(), b.values.end());
    return v;
  }
  size_t executed() const { return values().size(); }

 private:
  mutable std::mutex mu_;
  std::vector<SeenBatch> batches_;
};

// A batch function that records the batch and answers each request with its value.
inline TestFunctions echo_functions(BatchLog* log) {
  TestFunctions f;
  f.run = [log](const BatchInfo& info, std::span<Req> in, std::span<absl::StatusOr<int>> out) {
    log->record(info, in);
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i].value;
    return absl::OkStatus();
  };
  f.cost = [](const Req& r) { return r.cost; };
  return f;
}

// The same, calling `before` (advance a clock, block on a gate, inspect the batch) ahead of each echo.
inline TestFunctions echo_functions(BatchLog* log, std::function<void(const BatchInfo&)> before) {
  TestFunctions f = echo_functions(log);
  f.run = [echo = std::move(f.run), before = std::move(before)](const BatchInfo& info, std::span<Req> in,
                                                                std::span<absl::StatusOr<int>> out) {
    before(info);
    return echo(info, in, out);
  };
  return f;
}

// A policy for deterministic tests: no threads, the test calls run_ready().
inline BatchPolicy manual_policy() {
  BatchPolicy p;
  p.executor_threads = 0;
  return p;
}

// A Batcher on a ManualClock. Members are declared so that the batcher dies first (its destructor may still
// call back into `out`).
struct Harness {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  BatchLog log;
  Outcomes out;
  std::unique_ptr<TestBatcher> batcher;

  explicit Harness(BatchPolicy policy = manual_policy(), TestFunctions fns = {}) {
    if (!fns.run) fns = echo_functions(&log);
    auto b = TestBatcher::create(std::move(policy), std::move(fns), clock);
    REQUIRE(b.ok());
    batcher = std::move(*b);
  }
  absl::StatusOr<RequestId> try_submit(int value, SubmitOptions options = {}, size_t cost = 1) {
    return batcher->submit(Req{value, cost}, options, out.callback());
  }
  RequestId submit(int value, SubmitOptions options = {}, size_t cost = 1) {
    absl::StatusOr<RequestId> id = try_submit(value, options, cost);
    REQUIRE(id.ok());
    return *id;
  }
  void advance(Duration d) { clock->advance(d); }
  TimePoint now() const { return clock->now(); }
  size_t run() { return batcher->run_ready(); }
  BatcherStats stats() const { return batcher->stats(); }
};

inline bool contains(const absl::Status& s, const std::string& needle) {
  return std::string(s.message()).find(needle) != std::string::npos;
}

// Polls `done` until it holds or `limit` passes. A liveness bound for threaded tests, never a timing assertion.
template <typename Pred>
bool eventually(Pred done, Duration limit = std::chrono::seconds(60)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace brisk::batch::testing
