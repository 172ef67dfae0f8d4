// The stress test: 8 producers, 200k requests with random priorities, deadlines (some short enough to expire),
// cancels from another thread and a batch function that sometimes fails, on the real clock with 2 to 4
// executors and a small queue. Checks exactly-once completion, that nothing is lost or duplicated, that no
// kReject request runs past its deadline, that every callback receives its own request's value (a swapped
// result fails), that the counters match, and that no batch inverts priority beyond the aging bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>

#include "batch/batch_test_util.h"

using namespace brisk;
using namespace brisk::batch;
using namespace brisk::batch::testing;

namespace {

constexpr int kProducers = 8;
constexpr int kPerProducer = 25000;  // 200k requests
constexpr size_t kMaxId = size_t{kProducers} * kPerProducer + 1;

// Per-id records, each written once by its owner (an atomic claim guards the plain fields).
struct State {
  std::unique_ptr<std::atomic<uint32_t>[]> callbacks { new std::atomic<uint32_t>[ kMaxId ]() };
  std::unique_ptr<std::atomic<int>[]> code { new std::atomic<int>[ kMaxId ]() };
  std::unique_ptr<std::atomic<uint32_t>[]> executed { new std::atomic<uint32_t>[ kMaxId ]() };
  std::unique_ptr<std::atomic<bool>[]> cancel_ok { new std::atomic<bool>[ kMaxId ]() };
  // Written by the batch function for the first execution of an id; read after shutdown joined the threads.
  std::vector<RequestInfo> info = std::vector<RequestInfo>(kMaxId);
  std::vector<uint64_t> batch_of = std::vector<uint64_t>(kMaxId, 0);
  std::vector<int> intended = std::vector<int>(kMaxId, 0);  // the status code the batch function gave it
  std::atomic<uint64_t> late_executed{0}, duplicate_executions{0}, batches_seen{0};
  std::atomic<uint64_t> values_checked{0}, values_wrong{0};

  // Every batch the batch function saw, with the worst effective level among its members when it formed.
  struct Batch {
    uint64_t sequence;
    TimePoint formed_at;
    int64_t worst;
  };
  std::mutex batches_mu;
  std::vector<Batch> batches;
};

// A callback that records the outcome and checks that a result is the value its own request carried.
TestBatcher::Callback checking_callback(State& st, int expected) {
  return [&st, expected](RequestId id, absl::StatusOr<int> res) {
    if (res.ok()) {
      st.values_checked.fetch_add(1);
      if (*res != expected) st.values_wrong.fetch_add(1);
    }
    st.code[id].store(static_cast<int>(res.status().code()));
    st.callbacks[id].fetch_add(1);
  };
}

// The effective level under aging: eff(r, t) = max(0, priority - floor((t - enqueued_at) / A)).
int64_t eff(const RequestInfo& r, TimePoint t, Duration aging) {
  return std::max<int64_t>(0, r.priority - (t - r.enqueued_at) / aging);
}

}  // namespace

TEST_CASE("Batcher stress: exactly-once completion, no loss, no late runs, bounded priority inversion",
          "[batch][stress]") {
  const int executors = GENERATE(2, 3, 4);
  auto state = std::make_unique<State>();
  State& st = *state;

  BatchPolicy p;
  p.executor_threads = executors;
  p.max_batch_size = 32;
  p.preferred_batch_multiple = 4;
  p.max_queue_delay = std::chrono::microseconds(200);
  p.length_bucketing = true;
  p.max_batch_tokens = 0;  // unlimited, so nothing is skipped for not fitting
  p.aging_interval = std::chrono::milliseconds(2);
  p.max_queue_size = 512;
  p.levels[2].max_queue_size = 192;
  p.levels[2].deadline_action = DeadlineAction::kDelay;  // levels 0 and 1 are kReject
  const Duration aging = p.aging_interval;

  TestFunctions f;
  f.cost = [](const Req& r) { return r.cost; };
  f.run = [&st, aging = p.aging_interval](const BatchInfo& info, std::span<Req> in,
                                          std::span<absl::StatusOr<int>> out) -> absl::Status {
    st.batches_seen.fetch_add(1, std::memory_order_relaxed);
    std::mt19937 rng(static_cast<uint32_t>(info.sequence * 2654435761u));
    const uint32_t roll = rng() % 100;
    const int whole = roll < 3   ? static_cast<int>(absl::StatusCode::kDataLoss)
                      : roll < 4 ? static_cast<int>(absl::StatusCode::kInternal)
                                 : 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const RequestInfo& r = info.requests[i];
      if (r.priority < 2 && r.deadline <= info.started_at) st.late_executed.fetch_add(1);
      if (st.executed[r.id].fetch_add(1) != 0) {
        st.duplicate_executions.fetch_add(1);
        continue;
      }
      st.info[r.id] = r;
      st.batch_of[r.id] = info.sequence;
      if (whole != 0) {
        st.intended[r.id] = whole;
      } else if (rng() % 100 < 3) {
        out[i] = absl::OutOfRangeError("injected result failure");
        st.intended[r.id] = static_cast<int>(absl::StatusCode::kOutOfRange);
      } else {
        out[i] = in[i].value;
      }
    }
    State::Batch b{info.sequence, info.formed_at, 0};
    for (const RequestInfo& r : info.requests) b.worst = std::max(b.worst, eff(r, info.formed_at, aging));
    {
      std::lock_guard lock(st.batches_mu);
      st.batches.push_back(b);
    }
    if (whole == static_cast<int>(absl::StatusCode::kDataLoss)) return absl::DataLossError("injected batch failure");
    if (whole == static_cast<int>(absl::StatusCode::kInternal)) throw std::runtime_error("injected throw");
    return absl::OkStatus();
  };
  auto made = TestBatcher::create(p, f);
  REQUIRE(made.ok());
  std::unique_ptr<TestBatcher> batcher = std::move(*made);
  TestBatcher& b = *batcher;

  // Recently admitted ids, for the canceller.
  constexpr size_t kRing = 1024;
  std::unique_ptr<std::atomic<RequestId>[]> ring(new std::atomic<RequestId>[kRing]());
  std::atomic<uint64_t> ring_pos{0};
  std::atomic<uint64_t> admitted{0}, rejected_overloaded{0}, rejected_deadline{0}, rejected_other{0};
  std::atomic<int> producers_left{kProducers};

  std::vector<std::thread> threads;
  for (int t = 0; t < kProducers; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      for (int i = 0; i < kPerProducer; ++i) {
        SubmitOptions o;
        o.priority = static_cast<int>(rng() % 3);
        const uint32_t d = rng() % 100;
        const TimePoint now = std::chrono::steady_clock::now();
        if (d < 20) {
          o.deadline = now + std::chrono::microseconds(rng() % 600);  // often expires
        } else if (d < 30) {
          o.deadline = now + std::chrono::seconds(30);
        }
        Req r{t * kPerProducer + i, 1 + static_cast<size_t>(rng() % 100)};
        auto id = b.submit(r, o, checking_callback(st, r.value));
        if (id.ok()) {
          admitted.fetch_add(1);
          ring[ring_pos.fetch_add(1) % kRing].store(*id);
        } else if (id.status().code() == absl::StatusCode::kResourceExhausted) {
          rejected_overloaded.fetch_add(1);
          std::this_thread::yield();
        } else if (id.status().code() == absl::StatusCode::kDeadlineExceeded) {
          rejected_deadline.fetch_add(1);
        } else {
          rejected_other.fetch_add(1);
        }
      }
      producers_left.fetch_sub(1);
    });
  }
  std::atomic<uint64_t> cancels_ok{0}, cancels_not_found{0}, cancels_other{0};
  threads.emplace_back([&] {
    std::mt19937_64 rng(77);
    uint64_t last = 0;
    while (producers_left.load() > 0) {
      const uint64_t pos = ring_pos.load();
      if (pos < last + 16) {
        std::this_thread::yield();
        continue;
      }
      last = pos;
      const RequestId id = ring[(pos - 1 - rng() % std::min<uint64_t>(pos, 64)) % kRing].load();
      if (id == 0) continue;
      const absl::Status s = b.cancel(id);
      if (s.ok()) {
        st.cancel_ok[id].store(true);
        cancels_ok.fetch_add(1);
      } else if (s.code() == absl::StatusCode::kNotFound) {
        cancels_not_found.fetch_add(1);
      } else {
        cancels_other.fetch_add(1);
      }
    }
  });
  for (std::thread& t : threads) t.join();
  REQUIRE(b.shutdown(ShutdownMode::kDrain).ok());
  const BatcherStats s = b.stats();

  // Exactly once, nothing lost or duplicated, nothing executed late, outcomes as the batch function decided.
  const uint64_t n = admitted.load();
  CHECK(n + rejected_overloaded + rejected_deadline + rejected_other == uint64_t{kProducers} * kPerProducer);
  CHECK(rejected_other.load() == 0);
  CHECK(cancels_other.load() == 0);
  CHECK(s.submitted == n);
  uint64_t wrong_count = 0, stray = 0, wrong_outcome = 0, ok = 0, failed = 0, expired = 0, cancelled = 0,
           unavailable = 0, executed = 0;
  for (RequestId id = 1; id < kMaxId; ++id) {
    const uint32_t calls = st.callbacks[id].load();
    if (id > n) {
      stray += calls + st.executed[id].load();
      continue;
    }
    if (calls != 1) ++wrong_count;
    const auto c = static_cast<absl::StatusCode>(st.code[id].load());
    const bool ran = st.executed[id].load() != 0;
    executed += ran;
    const bool cancel_said_ok = st.cancel_ok[id].load();
    if (cancel_said_ok != (c == absl::StatusCode::kCancelled)) ++wrong_outcome;
    switch (c) {
      case absl::StatusCode::kOk: ++ok; break;
      case absl::StatusCode::kCancelled: ++cancelled; break;
      case absl::StatusCode::kDeadlineExceeded: ++expired; break;
      case absl::StatusCode::kUnavailable: ++unavailable; break;
      default: ++failed;
    }
    if (ran) {
      if (c != absl::StatusCode::kCancelled && static_cast<int>(c) != st.intended[id]) ++wrong_outcome;
    } else if (c != absl::StatusCode::kCancelled && c != absl::StatusCode::kDeadlineExceeded) {
      ++wrong_outcome;  // only cancellation or expiry keeps a request from running under kDrain
    }
  }
  CHECK(wrong_count == 0);
  CHECK(stray == 0);
  CHECK(st.values_checked.load() == ok);
  CHECK(st.values_wrong.load() == 0);
  CHECK(wrong_outcome == 0);
  CHECK(st.duplicate_executions.load() == 0);
  CHECK(st.late_executed.load() == 0);
  CHECK(unavailable == 0);
  // Counters agree.
  CHECK(s.completed == ok);
  CHECK(s.failed == failed);
  CHECK(s.expired == expired);
  CHECK(s.cancelled == cancelled);
  CHECK(s.cancelled == cancels_ok.load());
  CHECK(s.shutdown == 0);
  CHECK(s.rejected_overloaded == rejected_overloaded.load());
  CHECK(s.rejected_deadline == rejected_deadline.load());
  CHECK(s.rejected_invalid == 0);
  CHECK(s.batches == st.batches_seen.load());
  CHECK(s.batch_size.sum() == executed);
  CHECK(s.queued == 0);
  CHECK(s.inflight_batches == 0);
  // Every path was exercised.
  CHECK(ok > 0);
  CHECK(failed > 0);
  CHECK(expired > 0);
  CHECK(cancelled > 0);
  CHECK(rejected_overloaded.load() > 0);

  // Priority inversion beyond the aging bound, checked exhaustively: for every batch b formed at t, no member
  // L may have eff(L, t) > eff(H, t) for a request H that was queued at t (enqueued before t, not late then)
  // and ran in a later batch. The batches formed while H waited are a contiguous run of sequences, because
  // formed_at grows with the sequence.
  std::vector<State::Batch> batches = st.batches;
  std::sort(batches.begin(), batches.end(), [](auto& x, auto& y) { return x.sequence < y.sequence; });
  bool monotone = true;
  for (size_t i = 1; i < batches.size(); ++i) monotone &= batches[i - 1].formed_at <= batches[i].formed_at;
  REQUIRE(monotone);
  uint64_t inversions = 0, compared = 0;
  for (RequestId h = 1; h <= n; ++h) {
    if (st.executed[h].load(std::memory_order_relaxed) == 0) continue;
    const RequestInfo& r = st.info[h];
    auto it = std::upper_bound(batches.begin(), batches.end(), r.enqueued_at,
                               [](TimePoint t, const State::Batch& x) { return t < x.formed_at; });
    for (; it != batches.end() && it->sequence < st.batch_of[h]; ++it) {
      if (r.deadline <= it->formed_at) break;  // late from here on: kDelay puts it behind everything
      ++compared;
      if (eff(r, it->formed_at, aging) < it->worst) ++inversions;
    }
  }
  INFO("batches " << batches.size() << ", comparisons " << compared);
  CHECK(batches.size() == s.batches);
  CHECK(compared > 0);
  CHECK(inversions == 0);
}

TEST_CASE("Batcher stress: the value check catches a swapped result", "[batch][stress]") {
  auto state = std::make_unique<State>();
  State& st = *state;
  BatchPolicy p;
  p.executor_threads = 2;
  p.max_batch_size = 16;
  std::atomic<bool> swapped{false};
  TestFunctions f;
  f.run = [&](const BatchInfo&, std::span<Req> in, std::span<absl::StatusOr<int>> out) -> absl::Status {
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i].value;
    if (in.size() >= 2 && !swapped.exchange(true)) std::swap(out[0], out[1]);  // once
    return absl::OkStatus();
  };
  auto made = TestBatcher::create(p, f);
  REQUIRE(made.ok());
  std::vector<Req> group;
  std::vector<TestBatcher::Callback> callbacks;
  for (int i = 0; i < 64; ++i) {
    group.push_back(Req{i, 1});
    callbacks.push_back(checking_callback(st, i));
  }
  REQUIRE((*made)->submit_all(std::move(group), {}, std::move(callbacks)).ok());
  REQUIRE((*made)->shutdown(ShutdownMode::kDrain).ok());
  CHECK(swapped.load());
  CHECK(st.values_checked.load() == 64);
  CHECK(st.values_wrong.load() == 2);
}
