// The open-loop load generator over a Runtime: Poisson schedules and the driver.
#include "brisk/runtime/load_test.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

namespace brisk::load_test {

namespace {

using SteadyTime = std::chrono::steady_clock;

enum class Outcome : uint8_t { kPending, kCompleted, kRefused, kExpired, kFailed };

struct Record {
  std::atomic<Outcome> outcome{Outcome::kPending};
  int64_t latency_ns = 0;  // completion - scheduled arrival; written before outcome (release)
};

}  // namespace

uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = seed;
  for (uint64_t v : {a, b, c}) {  // splitmix64 steps
    x += 0x9e3779b97f4a7c15ULL + v;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
  }
  return x;
}

std::vector<Arrival> poisson_schedule(const std::vector<Stream>& streams, double duration_s, size_t items,
                                      uint64_t seed) {
  std::vector<Arrival> all;
  if (items == 0) return all;
  for (size_t s = 0; s < streams.size(); ++s) {
    if (!(streams[s].rate > 0)) continue;
    std::mt19937_64 rng(mix_seed(seed, s));
    std::exponential_distribution<double> gap(streams[s].rate);
    std::uniform_int_distribution<uint32_t> pick(0, static_cast<uint32_t>(items - 1));
    for (double t = gap(rng); t < duration_s; t += gap(rng)) {
      all.push_back(
          {std::chrono::duration_cast<Duration>(std::chrono::duration<double>(t)), pick(rng), static_cast<uint8_t>(s)});
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
  return all;
}

int64_t percentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

StatusOr<OpenLoopResult> run_open_loop(const Runtime& runtime, std::span<const std::string> texts,
                                       const OpenLoopOptions& options) {
  if (texts.empty()) return absl::InvalidArgumentError("run_open_loop: texts is empty; expected at least one text");
  if (!(options.rate > 0) || !std::isfinite(options.rate)) {
    return absl::InvalidArgumentError(fmt::format("run_open_loop: rate is {}; expected > 0 per second", options.rate));
  }
  if (!(options.duration_s > 0) || !std::isfinite(options.duration_s)) {
    return absl::InvalidArgumentError(
        fmt::format("run_open_loop: duration_s is {}; expected > 0 seconds", options.duration_s));
  }
  const std::vector<Arrival> schedule =
      poisson_schedule({Stream{.rate = options.rate, .priority = options.priority, .deadline = options.timeout}},
                       options.duration_s, texts.size(), options.seed);
  std::vector<Record> records(schedule.size());
  // Completions are counted under a mutex so that the last one can wake the waiting caller.
  std::mutex mu;
  std::condition_variable all_done;
  size_t outstanding = 0;
  std::atomic<size_t> finished{0}, late{0};
  const int64_t slo_ns = options.slo.count();
  auto finish = [&](Record& rec, Outcome outcome, int64_t latency_ns) {
    rec.latency_ns = latency_ns;
    rec.outcome.store(outcome, std::memory_order_release);
    if (outcome != Outcome::kCompleted || latency_ns > slo_ns) late.fetch_add(1, std::memory_order_relaxed);
    finished.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(mu);
    if (--outstanding == 0) all_done.notify_all();
  };

  const batch::BatcherStats before = runtime.batch_stats();
  const TimePoint start = SteadyTime::now() + std::chrono::milliseconds(20);
  size_t submitted = 0, refused = 0;
  Status error = absl::OkStatus();
  bool stopped = false;
  TimePoint next_check = start + std::chrono::milliseconds(100);
  // The deadline left of a request scheduled at `t`; at least 1 ns (0 would mean none).
  auto remaining = [&](TimePoint t) {
    return std::max<Duration>(Duration(1), t + options.timeout - SteadyTime::now());
  };
  std::string text;
  for (size_t k = 0; k < schedule.size(); ++k) {
    const TimePoint scheduled = start + schedule[k].at;
    std::this_thread::sleep_until(scheduled);  // open loop: returns at once when behind, never waits for work
    if (options.keep_going && SteadyTime::now() >= next_check) {
      next_check = SteadyTime::now() + std::chrono::milliseconds(100);
      const Progress p{std::chrono::duration<double>(SteadyTime::now() - start).count(), submitted, refused,
                       finished.load(std::memory_order_relaxed), late.load(std::memory_order_relaxed)};
      if (!options.keep_going(p)) {
        stopped = true;
        break;
      }
    }
    text = texts[schedule[k].item];
    if (options.unique_texts) text += fmt::format(" #{}", k);
    Record& rec = records[k];
    {
      std::lock_guard lock(mu);
      ++outstanding;
    }
    StatusOr<uint64_t> id = absl::InternalError("not submitted");
    if (options.classify) {
      ClassifyRequestOptions o;
      o.priority = options.priority;
      if (options.timeout > Duration::zero()) o.timeout = remaining(scheduled);
      id = runtime.submit_classify(text, o, [&, scheduled](uint64_t, StatusOr<std::vector<LabelScore>> r) {
        finish(rec,
               r.ok()                                 ? Outcome::kCompleted
               : absl::IsDeadlineExceeded(r.status()) ? Outcome::kExpired
                                                      : Outcome::kFailed,
               (SteadyTime::now() - scheduled).count());
      });
    } else {
      EmbedRequestOptions o;
      o.priority = options.priority;
      if (options.timeout > Duration::zero()) o.timeout = remaining(scheduled);
      id = runtime.submit(text, o, [&, scheduled](uint64_t, StatusOr<std::vector<float>> r) {
        finish(rec,
               r.ok()                                 ? Outcome::kCompleted
               : absl::IsDeadlineExceeded(r.status()) ? Outcome::kExpired
                                                      : Outcome::kFailed,
               (SteadyTime::now() - scheduled).count());
      });
    }
    ++submitted;
    if (!id.ok()) {
      // A deadline already past at submit is a refusal too (the generator fell behind, or the queue predicted it).
      const bool overload = absl::IsResourceExhausted(id.status()) || absl::IsDeadlineExceeded(id.status());
      if (overload) {
        ++refused;
        rec.outcome.store(Outcome::kRefused, std::memory_order_relaxed);
      } else {
        error = id.status();
      }
      std::lock_guard lock(mu);
      --outstanding;
      if (!overload) break;
    }
  }
  const double submitted_s =
      stopped || !error.ok() ? std::chrono::duration<double>(SteadyTime::now() - start).count() : options.duration_s;
  {
    std::unique_lock lock(mu);
    all_done.wait(lock, [&] { return outstanding == 0; });
  }
  if (!error.ok()) return error;

  OpenLoopResult r;
  r.duration_s = std::max(submitted_s, 1e-3);
  r.stopped_early = stopped;
  std::vector<int64_t> latencies;
  for (size_t k = 0; k < submitted; ++k) {
    ++r.offered;
    switch (records[k].outcome.load(std::memory_order_acquire)) {
      case Outcome::kCompleted:
        ++r.completed;
        latencies.push_back(records[k].latency_ns);
        if (records[k].latency_ns <= slo_ns) ++r.good;
        break;
      case Outcome::kRefused: ++r.refused; break;
      case Outcome::kExpired: ++r.expired; break;
      case Outcome::kFailed:
      case Outcome::kPending: ++r.failed; break;
    }
  }
  std::sort(latencies.begin(), latencies.end());
  r.p50_ms = static_cast<double>(percentile(latencies, 50)) / 1e6;
  r.p95_ms = static_cast<double>(percentile(latencies, 95)) / 1e6;
  r.p99_ms = static_cast<double>(percentile(latencies, 99)) / 1e6;
  r.max_ms = latencies.empty() ? 0 : static_cast<double>(latencies.back()) / 1e6;
  const batch::BatcherStats after = runtime.batch_stats();
  const uint64_t batches = after.batches - before.batches, batched = after.completed - before.completed;
  r.mean_batch = batches ? static_cast<double>(batched) / static_cast<double>(batches) : 0;
  r.mean_tokens = batched ? static_cast<double>(after.tokens - before.tokens) / static_cast<double>(batched) : 0;
  return r;
}

}  // namespace brisk::load_test
