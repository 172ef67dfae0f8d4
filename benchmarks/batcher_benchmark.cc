// The dynamic batcher's own overhead: submit → batch → callback per request, with a no-op batch function, at
// saturation (producers submit as fast as they can; the queue never empties until the round ends).
//   build/release/benchmarks/brisk_batcher_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only
// Counters: ns_per_req = wall time of a round / requests in it (the round ends at the last completion), and
// mean_batch = requests / batches. The target of the batcher issue is ns_per_req <= 2000 (median).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <latch>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "brisk/batch/batcher.h"

namespace {

namespace bb = brisk::batch;
using IntBatcher = bb::Batcher<int64_t, int64_t>;

// A round of this many requests, split evenly between the producers (a multiple of both batch sizes). The last
// partial batch of a round may wait out max_queue_delay; at ~1 µs per request that is < 1% of a round.
constexpr int64_t kRoundRequests = 1 << 16;

bb::BatchFunctions<int64_t, int64_t> noop_functions() {
  bb::BatchFunctions<int64_t, int64_t> fns;
  fns.run = [](const bb::BatchInfo&, std::span<int64_t> in, std::span<absl::StatusOr<int64_t>> out) {
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i];
    return absl::OkStatus();
  };
  return fns;
}

bb::BatchPolicy saturation_policy(int executors, size_t max_batch) {
  bb::BatchPolicy policy;
  policy.max_batch_size = max_batch;
  policy.executor_threads = executors;
  policy.max_queue_size = kRoundRequests + 1;  // a whole round fits: nothing is rejected
  return policy;                               // max_queue_delay: the default 1 ms
}

void set_counters(benchmark::State& state, double seconds, int64_t requests, const bb::BatcherStats& stats,
                  int64_t failures) {
  state.counters["ns_per_req"] = seconds * 1e9 / static_cast<double>(requests);
  state.counters["req/s"] = static_cast<double>(requests) / seconds;
  state.counters["mean_batch"] = stats.batches ? static_cast<double>(stats.completed) / stats.batches : 0.0;
  if (failures != 0) state.SkipWithError("some requests were rejected or failed");
}

// The batcher for args (producers, executor_threads, max_batch_size); nullptr after SkipWithError.
std::unique_ptr<IntBatcher> saturated_batcher(benchmark::State& state) {
  auto batcher =
      IntBatcher::create(saturation_policy(static_cast<int>(state.range(1)), state.range(2)), noop_functions());
  if (!batcher.ok()) {
    state.SkipWithError(std::string(batcher.status().message()).c_str());
    return nullptr;
  }
  return std::move(*batcher);
}

// args: producers, executor_threads, max_batch_size. One iteration = one round of kRoundRequests requests.
void BM_SubmitComplete(benchmark::State& state) {
  const int producers = static_cast<int>(state.range(0));
  std::unique_ptr<IntBatcher> batcher = saturated_batcher(state);
  if (!batcher) return;
  IntBatcher& b = *batcher;
  std::atomic<int64_t> failures{0};
  double seconds = 0;
  int64_t requests = 0;
  for (auto _ : state) {
    std::latch done(kRoundRequests);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        for (int64_t i = p; i < kRoundRequests; i += producers) {
          auto id = b.submit(i, {}, [&](bb::RequestId, absl::StatusOr<int64_t> r) {
            if (!r.ok()) failures.fetch_add(1, std::memory_order_relaxed);
            done.count_down();
          });
          if (!id.ok()) {
            failures.fetch_add(1, std::memory_order_relaxed);
            done.count_down();
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    done.wait();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(elapsed);
    seconds += elapsed;
    requests += kRoundRequests;
  }
  state.SetItemsProcessed(requests);
  set_counters(state, seconds, requests, b.stats(), failures.load());
}
BENCHMARK(BM_SubmitComplete)
    ->ArgNames({"producers", "executors", "max_batch"})
    ->ArgsProduct({{1, 2}, {1, 2}, {32, 64}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The same with the future-returning submit(): each producer keeps its futures and waits on them at the end
// of the round (a shared state and a promise per request).
void BM_SubmitCompleteFuture(benchmark::State& state) {
  const int producers = static_cast<int>(state.range(0));
  std::unique_ptr<IntBatcher> batcher = saturated_batcher(state);
  if (!batcher) return;
  IntBatcher& b = *batcher;
  std::atomic<int64_t> failures{0};
  double seconds = 0;
  int64_t requests = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        std::vector<std::future<absl::StatusOr<int64_t>>> futures;
        futures.reserve(kRoundRequests / producers + 1);
        for (int64_t i = p; i < kRoundRequests; i += producers) {
          auto submitted = b.submit(i);
          if (!submitted.ok()) {
            failures.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
          futures.push_back(std::move(submitted->second));
        }
        for (auto& f : futures) {
          if (!f.get().ok()) failures.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(elapsed);
    seconds += elapsed;
    requests += kRoundRequests;
  }
  state.SetItemsProcessed(requests);
  set_counters(state, seconds, requests, b.stats(), failures.load());
}
BENCHMARK(BM_SubmitCompleteFuture)
    ->ArgNames({"producers", "executors", "max_batch"})
    ->Args({1, 1, 32})
    ->Args({2, 1, 64})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// How fast an overloaded batcher says no: submit() against a full queue (RESOURCE_EXHAUSTED). No executor
// runs, so the queue stays full; ns per rejected submit.
void BM_SubmitRejected(benchmark::State& state) {
  bb::BatchPolicy policy;
  policy.executor_threads = 0;  // nothing drains the queue
  policy.max_queue_size = 64;
  auto batcher = IntBatcher::create(policy, noop_functions());
  if (!batcher.ok()) {
    state.SkipWithError(std::string(batcher.status().message()).c_str());
    return;
  }
  IntBatcher& b = **batcher;
  for (size_t i = 0; i < policy.max_queue_size; ++i) {
    (void)b.submit(static_cast<int64_t>(i), {}, [](bb::RequestId, absl::StatusOr<int64_t>) {});
  }
  int64_t accepted = 0;
  for (auto _ : state) {
    auto id = b.submit(1, {}, [](bb::RequestId, absl::StatusOr<int64_t>) {});
    accepted += id.ok();
    benchmark::DoNotOptimize(id);
  }
  if (accepted != 0) state.SkipWithError("a submit to a full queue was accepted");
  (void)b.shutdown(bb::ShutdownMode::kCancel);
}
BENCHMARK(BM_SubmitRejected)->Unit(benchmark::kNanosecond);

}  // namespace
