// Counters and gauges: single atomic values for request counts, cache hits, queue depth, memory in use.
//
//   brisk::metrics::Counter cache_hits;      // monotonic
//   cache_hits.add();                        // any thread
//   brisk::metrics::Gauge queue_depth;       // goes up and down
//   queue_depth.add(+1); ... queue_depth.add(-1);
//   writer.counter("brisk_cache_hits_total", "Exact-cache hits.", {}, cache_hits.value());
//
// Thread safety: every member may be called from any number of threads at once. Updates are relaxed atomics:
// each value is exact, but reading two metrics gives no consistent cut across them. Not copyable (atomics);
// to avoid false sharing between hot counters written by different threads, give each its own cache line.
#pragma once

#include <atomic>
#include <cstdint>

namespace brisk::metrics {

// A monotonic count. Wraps modulo 2^64 (never in practice).
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void add(uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A signed integer level that is set or moved.
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void set(int64_t v) noexcept { value_.store(v, std::memory_order_relaxed); }
  void add(int64_t delta) noexcept { value_.fetch_add(delta, std::memory_order_relaxed); }
  int64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// A floating-point level (a ratio, a rate, a temperature of the batch controller).
class DoubleGauge {
 public:
  DoubleGauge() = default;
  DoubleGauge(const DoubleGauge&) = delete;
  DoubleGauge& operator=(const DoubleGauge&) = delete;

  void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }
  // A CAS loop: std::atomic<double>::fetch_add is C++20 but compiles to the same loop.
  void add(double delta) noexcept {
    double cur = value_.load(std::memory_order_relaxed);
    while (!value_.compare_exchange_weak(cur, cur + delta, std::memory_order_relaxed)) {
    }
  }
  double value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace brisk::metrics
