// Experiment e: `brisk plan`'s batching simulation (brisk/batch/capacity.h) against a measured open-loop load test
// at 80% of one replica's batched capacity, on the same requests (FAQ questions) with the curve measured in the same
// run. Each repeat measures the curve, runs the load test and simulates it; the table shows both P50/P99.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <atomic>
#include <fstream>
#include <span>
#include <random>
#include <thread>

#include "brisk/batch/capacity.h"
#include "brisk/core/parallel.h"
#include "brisk/runtime/runtime.h"
#include "load/load.h"

namespace brisk::load {

namespace {

constexpr size_t kMaxBatch = 32;  // the runtime's default max_batch_size
constexpr int kRounds = 9;        // timed rounds over every batch size (after 2 warm-up rounds)

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  in >> a >> b >> c;
  return fmt::format("{:.2f} {:.2f} {:.2f}", a, b, c);
}

// The curve on the load test's own requests: for each round and each b, one encoder call on b questions drawn at
// random (tokenized before the clock starts), as the batcher's batch function runs them. Run on a thread of its
// own, as a batcher executor is (see run_experiments on OpenMP pools).
batch::ServiceCurve measure_curve(const Source& source, uint64_t seed) {
  const Model& model = *source.model;
  std::vector<std::vector<double>> samples(kMaxBatch);
  std::thread([&] {
    ScopedNumThreads scoped(model.threads);
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<size_t> pick(0, source.items() - 1);
    const size_t hidden = static_cast<size_t>(model.encoder->hidden_size());
    std::vector<float> out(kMaxBatch * hidden);
    for (int round = 0; round < kRounds + 2; ++round) {
      for (size_t b = 1; b <= kMaxBatch; ++b) {
        PackedSequences packed;
        for (size_t i = 0; i < b; ++i) packed.add(source.ids(pick(rng)));
        const auto t0 = SteadyTime::now();
        const Status s = model.encoder->embed(packed, model.pooling, /*normalize=*/true, out.data());
        const double ms = to_ms(SteadyTime::now() - t0);
        if (!s.ok()) std::fprintf(stderr, "capacity check: embed failed: %s\n", std::string(s.message()).c_str());
        if (round >= 2) samples[b - 1].push_back(ms);
      }
    }
  }).join();
  batch::ServiceCurve curve;
  curve.model = "all-MiniLM-L6-v2 (FAQ questions)";
  curve.threads = model.threads;
  std::vector<double> deviations;  // |time / median - 1| over every sample
  for (size_t b = 1; b <= kMaxBatch; ++b) {
    std::vector<double> v = samples[b - 1];
    std::sort(v.begin(), v.end());
    const double median = v[v.size() / 2];
    for (double s : v) deviations.push_back(std::abs(s / median - 1));
    curve.batch_ms.push_back(std::max(median, curve.batch_ms.empty() ? 0.0 : curve.batch_ms.back()));
  }
  std::sort(deviations.begin(), deviations.end());
  curve.jitter_cv = 1.4826 * deviations[deviations.size() / 2];  // robust: MAD-based, as brisk plan measures it
  return curve;
}

// The real Batcher (the same policy) on a batch function that sleeps the curve's time for its batch size: the
// simulation's model of the batcher checked without the encoder, so without the machine's CPU noise.
struct SleepRun {
  double p50_ms = 0, p99_ms = 0, mean_batch = 0;
  size_t completed = 0;
};
SleepRun run_sleep_backend(const batch::ServiceCurve& curve, const batch::BatchPolicy& policy, double rate,
                           double duration_s, uint64_t seed) {
  batch::BatchFunctions<Request, Result> fns;
  fns.cost = [](const Request&) { return size_t{1}; };
  fns.run = [&curve](const batch::BatchInfo&, std::span<Request> in, std::span<StatusOr<Result>> out) -> Status {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(curve.batch_ms[in.size() - 1]));
    for (auto& o : out) o = 0.0f;
    return absl::OkStatus();
  };
  auto batcher = *LoadBatcher::create(policy, std::move(fns));
  const std::vector<Arrival> schedule = poisson_schedule({Stream{.rate = rate}}, duration_s, 1, seed);
  std::vector<int64_t> latency_ns(schedule.size(), -1);
  std::atomic<size_t> done{0};
  const TimePoint start = SteadyTime::now() + std::chrono::milliseconds(20);
  for (size_t k = 0; k < schedule.size(); ++k) {
    const TimePoint scheduled = start + schedule[k].at;
    std::this_thread::sleep_until(scheduled);
    auto id = batcher->submit(Request{{}, scheduled}, {}, [&, k, scheduled](batch::RequestId, StatusOr<Result>) {
      latency_ns[k] = (SteadyTime::now() - scheduled).count();
      done.fetch_add(1, std::memory_order_release);
    });
    if (!id.ok()) done.fetch_add(1, std::memory_order_release);
  }
  while (done.load(std::memory_order_acquire) < schedule.size())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  SleepRun r;
  r.mean_batch = batcher->stats().batches ? double(batcher->stats().completed) / batcher->stats().batches : 0;
  (void)batcher->shutdown(batch::ShutdownMode::kDrain);
  std::vector<int64_t> v;
  for (int64_t ns : latency_ns)
    if (ns >= 0) v.push_back(ns);
  std::sort(v.begin(), v.end());
  r.completed = v.size();
  if (!v.empty()) {
    r.p50_ms = v[v.size() / 2] / 1e6;
    r.p99_ms = v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(0.99 * v.size())) - 1)] / 1e6;
  }
  return r;
}

}  // namespace

void run_capacity_check(const Options& opt, const Source& questions, Report& report) {
  batch::BatchPolicy policy = default_runtime_batching();  // max batch 32, no queue delay, one executor
  policy.levels = {batch::PriorityLevel{.name = "default"}};
  policy.reject_predicted_late = false;  // no deadlines here; nothing to predict
  std::string rows;
  std::string curves;
  batch::ServiceCurve quietest;  // the curve with the fastest batch of 1, for the sleep-backend check
  for (int repeat = 0; repeat < 3; ++repeat) {
    const std::string load_before = loadavg();
    const batch::ServiceCurve curve = measure_curve(questions, mix_seed(opt.seed, 5, repeat));
    const double capacity = curve.replica_capacity(kMaxBatch);
    const double rate = 0.8 * capacity;
    const CellResult measured = run_open_loop(questions, policy, Backend::kPacked, {Stream{.rate = rate}},
                                              opt.duration_s, mix_seed(opt.seed, 6, repeat), {opt.slo});
    const std::string load_after = loadavg();
    // Measured again after the load test: where the two curves differ the machine changed under the test.
    const batch::ServiceCurve after = measure_curve(questions, mix_seed(opt.seed, 7, repeat));
    auto simulate = [&](const batch::ServiceCurve& c) {
      batch::SimulationOptions so;
      so.replicas = 1;
      so.max_batch = kMaxBatch;
      so.seed = opt.seed + static_cast<uint64_t>(repeat);
      return *batch::simulate_batching(c, rate, so);
    };
    const batch::SimulationResult sim = simulate(curve), sim_after = simulate(after);
    const Summary& m = measured.all;
    auto cell = [](const batch::SimulationResult& r) {
      return r.stable ? fmt::format("{:.2f} / {:.2f}", r.p50_s * 1e3, r.p99_s * 1e3) : std::string("unstable");
    };
    rows +=
        fmt::format("| {} | {:.0f} | {:.0f} | {} | {:.2f} / {:.2f} | {} | {} | {:.2f} | {:.1f} / {:.1f} | {} -> {} |\n",
                    repeat + 1, capacity, rate, m.completed, m.p50_ms, m.p99_ms, cell(sim), cell(sim_after),
                    sim.p99_s * 1e3 / m.p99_ms, measured.mean_batch(), sim.mean_batch, load_before, load_after);
    for (const batch::ServiceCurve* c : {&curve, &after}) {
      if (quietest.batch_ms.empty() || c->batch_ms[0] < quietest.batch_ms[0]) quietest = *c;
    }
    for (const auto& [name, c] : {std::pair{"before", &curve}, std::pair{"after", &after}}) {
      curves += fmt::format(
          "- repeat {} {}: batch_ms 1, 2, 4, 8, 16, 32 = {:.2f}, {:.2f}, {:.2f}, {:.2f}, {:.2f}, {:.2f}; jitter cv "
          "{:.2f}; capacity {:.0f} req/s\n",
          repeat + 1, name, c->batch_ms[0], c->batch_ms[1], c->batch_ms[3], c->batch_ms[7], c->batch_ms[15],
          c->batch_ms[31], c->jitter_cv, c->replica_capacity(kMaxBatch));
    }
  }
  report.write(fmt::format(
      "### e. Capacity planning: the batching simulation against the load test at 80% load\n\n"
      "One replica (default_runtime_batching: max batch 32, no queue delay, one executor), FAQ questions, Poisson "
      "arrivals at 0.8 x the curve's capacity for {:.0f} s per repeat. The curve is measured first in each repeat "
      "(9 rounds over batch sizes 1..32, questions drawn at random, median per size; jitter cv from the median "
      "absolute deviation) and again after the load test; the simulation runs 200,000 requests on each curve at the "
      "rate set from the first.\n\n"
      "| repeat | capacity req/s | rate req/s | completed | measured P50 / P99 ms | simulated P50 / P99 ms | "
      "sim. on the after curve | sim/measured P99 | mean batch measured / sim. | load average before -> after |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n{}\nCurves:\n{}\n",
      opt.duration_s, rows, curves));

  std::string sleep_rows;
  for (double load : {0.5, 0.8, 0.95}) {
    const double rate = load * quietest.replica_capacity(kMaxBatch);
    const SleepRun real = run_sleep_backend(quietest, policy, rate, opt.duration_s, mix_seed(opt.seed, 8));
    for (double cv : {0.0, quietest.jitter_cv}) {
      batch::SimulationOptions so;
      so.max_batch = kMaxBatch;
      so.jitter_cv = cv;
      so.seed = opt.seed;
      const batch::SimulationResult sim = *batch::simulate_batching(quietest, rate, so);
      sleep_rows +=
          fmt::format("| {:.0f}% | {:.0f} | {} | {:.2f} / {:.2f} | {:.2f} | {:.2f} / {:.2f} | {:.2f} | {:.2f} |\n",
                      load * 100, rate, real.completed, real.p50_ms, real.p99_ms, cv, sim.p50_s * 1e3, sim.p99_s * 1e3,
                      sim.p99_s * 1e3 / real.p99_ms, real.mean_batch / sim.mean_batch);
    }
  }
  report.write(fmt::format(
      "The same check without the encoder: brisk's Batcher (the same policy) on a batch function that sleeps "
      "batch_ms[b] of the quietest curve above ({:.2f} ms alone, {:.2f} ms for 32), {:.0f} s of Poisson arrivals "
      "per load; simulated with jitter cv 0 (the sleep is deterministic) and with the curve's cv. Load average now: "
      "{}.\n\n"
      "| load | rate req/s | completed | real Batcher P50 / P99 ms | sim. cv | simulated P50 / P99 ms | sim/real P99 "
      "| mean batch real/sim |\n|---|---|---|---|---|---|---|---|\n{}\n",
      quietest.batch_ms[0], quietest.batch_ms[31], opt.duration_s, loadavg(), sleep_rows));
}

}  // namespace brisk::load
