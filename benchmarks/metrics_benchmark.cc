// Cost of measuring: Histogram::record() on the request path (one thread, and two threads sharing one histogram),
// snapshot() and percentile() for the controller and the /metrics endpoint, and a Prometheus scrape.
//   build/benchmarks/brisk_metrics_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "brisk/metrics/counter.h"
#include "brisk/metrics/histogram.h"
#include "brisk/metrics/prometheus.h"

namespace {

using brisk::metrics::Histogram;
using brisk::metrics::HistogramSnapshot;

// Latency-like values (log-normal around 2 ms in ns), pregenerated so the benchmark times record() alone.
const std::vector<uint64_t>& values() {
  static const std::vector<uint64_t> v = [] {
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> d(14.5, 1.0);
    std::vector<uint64_t> out(4096);
    for (auto& x : out) x = static_cast<uint64_t>(d(rng));
    return out;
  }();
  return v;
}

Histogram& shared_histogram() {
  static Histogram h;
  return h;
}

void BM_HistogramRecord(benchmark::State& state) {
  Histogram& h = shared_histogram();
  const auto& v = values();
  size_t i = static_cast<size_t>(state.thread_index()) * 97;
  for (auto _ : state) {
    h.record(v[i & 4095]);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HistogramRecord)->Threads(1)->Threads(2)->UseRealTime();

void BM_CounterAdd(benchmark::State& state) {
  static brisk::metrics::Counter c;
  for (auto _ : state) c.add();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CounterAdd)->Threads(1)->Threads(2)->UseRealTime();

void fill(Histogram& h) {
  for (int r = 0; r < 25; ++r) {
    for (uint64_t x : values()) h.record(x);
  }
}

void BM_HistogramSnapshot(benchmark::State& state) {
  Histogram h;
  fill(h);
  for (auto _ : state) {
    HistogramSnapshot s = h.snapshot();
    benchmark::DoNotOptimize(s.count());
  }
}
BENCHMARK(BM_HistogramSnapshot);

void BM_HistogramSnapshotPercentile(benchmark::State& state) {
  Histogram h;
  fill(h);
  for (auto _ : state) {
    HistogramSnapshot s = h.snapshot();
    benchmark::DoNotOptimize(s.percentile(99));
  }
}
BENCHMARK(BM_HistogramSnapshotPercentile);

// The adaptive controller's step: P99 of the last window.
void BM_WindowedP99(benchmark::State& state) {
  Histogram h;
  fill(h);
  HistogramSnapshot prev = h.snapshot();
  for (int i = 0; i < 1000; ++i) h.record(values()[static_cast<size_t>(i)]);
  const HistogramSnapshot now = h.snapshot();
  for (auto _ : state) benchmark::DoNotOptimize(now.minus(prev).percentile(99));
}
BENCHMARK(BM_WindowedP99);

// One scrape: a summary and a 10-bucket histogram of the same snapshot plus a few counters.
void BM_PrometheusScrape(benchmark::State& state) {
  Histogram h;
  fill(h);
  const double bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0};
  for (auto _ : state) {
    const HistogramSnapshot s = h.snapshot();
    brisk::metrics::PrometheusWriter w;
    w.summary("brisk_queue_seconds", "Time in queue.", {{"model", "minilm"}}, s, 1e-9);
    w.histogram("brisk_compute_seconds", "Backend time.", {{"model", "minilm"}}, s, bounds, 1e-9);
    w.counter("brisk_requests_total", "Requests.", {{"code", "ok"}}, 1000);
    w.counter("brisk_requests_total", "Requests.", {{"code", "error"}}, 3);
    w.gauge("brisk_queue_depth", "Waiting requests.", {}, 12);
    benchmark::DoNotOptimize(w.str());
  }
}
BENCHMARK(BM_PrometheusScrape);

}  // namespace
