// Experiment e: `brisk plan`'s batching simulation (brisk/batch/capacity.h) against a measured open-loop load test
// at 80% of one replica's batched capacity, on the same requests (FAQ questions) with the curve measured in the same
// run. Each repeat measures the curve, runs the load test and simulates it; the table shows both P50/P99.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
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

}  // namespace

void run_capacity_check(const Options& opt, const Source& questions, Report& report) {
  batch::BatchPolicy policy = default_runtime_batching();  // max batch 32, no queue delay, one executor
  policy.levels = {batch::PriorityLevel{.name = "default"}};
  policy.reject_predicted_late = false;  // no deadlines here; nothing to predict
  std::string rows;
  std::string curves;
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
    rows += fmt::format(
        "| {} | {:.0f} | {:.0f} | {} | {:.2f} / {:.2f} | {} | {} | {:.2f} | {:.1f} / {:.1f} | {} -> {} |\n",
        repeat + 1, capacity, rate, m.completed, m.p50_ms, m.p99_ms, cell(sim), cell(sim_after),
        sim.p99_s * 1e3 / m.p99_ms, measured.mean_batch(), sim.mean_batch, load_before, load_after);
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
}

}  // namespace brisk::load
