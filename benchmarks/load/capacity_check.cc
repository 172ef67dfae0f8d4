// Experiment e: `brisk plan`'s batching simulation (brisk/batch/capacity.h) against a measured open-loop load test
// at 80% of one replica's batched capacity, on the same requests (FAQ questions) with the curve measured in the same
// run. Each repeat measures the curve, runs the load test and simulates it; the table shows both P50/P99.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <atomic>
#include <fstream>
#include <mutex>
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
    curve.batch_ms.push_back(median);
  }
  curve.batch_ms = batch::non_decreasing_fit(curve.batch_ms);
  std::sort(deviations.begin(), deviations.end());
  curve.jitter_cv = 1.4826 * deviations[deviations.size() / 2];  // robust: MAD-based, as brisk plan measures it
  return curve;
}

// An open loop like run_open_loop (Poisson arrivals submitted on schedule, FAQ questions tokenized at submit) that
// also times every batch the batch function runs, so the service times of the load test itself are known.
struct TimedRun {
  double p50_ms = 0, p99_ms = 0, mean_batch = 0;
  size_t completed = 0;
  std::vector<std::vector<double>> batch_ms = std::vector<std::vector<double>>(kMaxBatch);  // by size - 1
};
TimedRun run_timed_open_loop(batch::BatchFunctions<Request, Result> fns, const batch::BatchPolicy& policy,
                             const Source* source, double rate, double duration_s, uint64_t seed) {
  TimedRun r;
  std::mutex mu;
  auto inner = std::move(fns.run);
  fns.run = [&](const batch::BatchInfo& info, std::span<Request> in, std::span<StatusOr<Result>> out) -> Status {
    const auto t0 = SteadyTime::now();
    Status s = inner(info, in, out);
    const double ms = to_ms(SteadyTime::now() - t0);
    std::lock_guard<std::mutex> lock(mu);
    if (in.size() <= kMaxBatch) r.batch_ms[in.size() - 1].push_back(ms);
    return s;
  };
  auto batcher = *LoadBatcher::create(policy, std::move(fns));
  const size_t items = source ? source->items() : 1;
  const std::vector<Arrival> schedule = poisson_schedule({Stream{.rate = rate}}, duration_s, items, seed);
  std::vector<int64_t> latency_ns(schedule.size(), -1);
  std::atomic<size_t> done{0};
  const TimePoint start = SteadyTime::now() + std::chrono::milliseconds(20);
  for (size_t k = 0; k < schedule.size(); ++k) {
    const TimePoint scheduled = start + schedule[k].at;
    std::this_thread::sleep_until(scheduled);
    Request request{source ? source->ids(schedule[k].item) : std::vector<int32_t>{}, scheduled};
    auto id = batcher->submit(std::move(request), {}, [&, k, scheduled](batch::RequestId, StatusOr<Result>) {
      latency_ns[k] = (SteadyTime::now() - scheduled).count();
      done.fetch_add(1, std::memory_order_release);
    });
    if (!id.ok()) done.fetch_add(1, std::memory_order_release);
  }
  while (done.load(std::memory_order_acquire) < schedule.size()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const batch::BatcherStats stats = batcher->stats();
  (void)batcher->shutdown(batch::ShutdownMode::kDrain);
  r.mean_batch = stats.batches ? double(stats.completed) / double(stats.batches) : 0;
  std::vector<int64_t> v;
  for (int64_t ns : latency_ns) {
    if (ns >= 0) v.push_back(ns);
  }
  std::sort(v.begin(), v.end());
  r.completed = v.size();
  if (!v.empty()) {
    r.p50_ms = v[(v.size() - 1) / 2] / 1e6;
    r.p99_ms = v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(0.99 * v.size())) - 1)] / 1e6;
  }
  return r;
}

// The curve the load test itself ran at: for each size with >= 3 batches in the run, their median; other sizes
// take the swept curve times the median ratio of the run's batches to it (the machine's speed during the run);
// then non_decreasing_fit. jitter_cv: 1.4826 x the median |ratio / median ratio - 1|.
batch::ServiceCurve in_run_curve(const batch::ServiceCurve& swept, const TimedRun& run) {
  std::vector<double> ratios;
  for (size_t b = 1; b <= kMaxBatch; ++b) {
    for (double ms : run.batch_ms[b - 1]) ratios.push_back(ms / swept.batch_ms[b - 1]);
  }
  batch::ServiceCurve c = swept;
  if (ratios.empty()) return c;
  std::sort(ratios.begin(), ratios.end());
  const double scale = ratios[ratios.size() / 2];
  std::vector<double> deviations;
  for (double x : ratios) deviations.push_back(std::abs(x / scale - 1));
  std::sort(deviations.begin(), deviations.end());
  c.jitter_cv = 1.4826 * deviations[deviations.size() / 2];
  for (size_t b = 1; b <= kMaxBatch; ++b) {
    std::vector<double> v = run.batch_ms[b - 1];
    std::sort(v.begin(), v.end());
    c.batch_ms[b - 1] = v.size() >= 3 ? v[v.size() / 2] : swept.batch_ms[b - 1] * scale;
  }
  c.batch_ms = batch::non_decreasing_fit(c.batch_ms);
  return c;
}

batch::BatchFunctions<Request, Result> sleep_functions(const batch::ServiceCurve& curve) {
  batch::BatchFunctions<Request, Result> fns;
  fns.cost = [](const Request&) { return size_t{1}; };
  fns.run = [&curve](const batch::BatchInfo&, std::span<Request> in, std::span<StatusOr<Result>> out) -> Status {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(curve.batch_ms[in.size() - 1]));
    for (auto& o : out) o = 0.0f;
    return absl::OkStatus();
  };
  return fns;
}

batch::SimulationResult simulate(const batch::ServiceCurve& c, double rate, uint64_t seed, double cv = -1) {
  batch::SimulationOptions so;
  so.max_batch = kMaxBatch;
  so.seed = seed;
  so.jitter_cv = cv;
  return *batch::simulate_batching(c, rate, so);
}

std::string cell(const batch::SimulationResult& r) {
  return r.stable ? fmt::format("{:.2f} / {:.2f}", r.p50_s * 1e3, r.p99_s * 1e3) : std::string("unstable");
}

}  // namespace

void run_capacity_check(const Options& opt, const Source& questions, Report& report) {
  batch::BatchPolicy policy = default_runtime_batching();  // max batch 32, no queue delay, one executor
  policy.levels = {batch::PriorityLevel{.name = "default"}};
  policy.reject_predicted_late = false;  // no deadlines here; nothing to predict
  std::string rows, curves;
  batch::ServiceCurve quietest;  // the swept curve with the fastest batch of 1, for the sleep-backend check
  for (int repeat = 0; repeat < 3; ++repeat) {
    const std::string load_before = loadavg();
    const batch::ServiceCurve swept = measure_curve(questions, mix_seed(opt.seed, 5, repeat));
    const double rate = 0.8 * swept.replica_capacity(kMaxBatch);
    const TimedRun run = run_timed_open_loop(make_functions(*questions.model, Backend::kPacked), policy, &questions,
                                             rate, opt.duration_s, mix_seed(opt.seed, 6, repeat));
    const batch::ServiceCurve in_run = in_run_curve(swept, run);
    const uint64_t seed = opt.seed + static_cast<uint64_t>(repeat);
    const batch::SimulationResult sim_swept = simulate(swept, rate, seed), sim_run = simulate(in_run, rate, seed);
    rows += fmt::format(
        "| {} | {:.0f} | {:.0f} | {} | {:.2f} / {:.2f} | {} | {} | {:.2f} | {:.1f} / {:.1f} | {:.2f} | {} -> {} |\n",
        repeat + 1, swept.replica_capacity(kMaxBatch), rate, run.completed, run.p50_ms, run.p99_ms, cell(sim_swept),
        cell(sim_run), sim_run.p99_s * 1e3 / run.p99_ms, run.mean_batch, sim_run.mean_batch,
        rate / in_run.replica_capacity(kMaxBatch), load_before, loadavg());
    for (const auto& [name, c] : {std::pair{"swept", &swept}, std::pair{"in the run", &in_run}}) {
      curves += fmt::format(
          "- repeat {} {}: batch_ms 1, 2, 4, 8, 16, 32 = {:.2f}, {:.2f}, {:.2f}, {:.2f}, {:.2f}, {:.2f}; jitter cv "
          "{:.2f}; capacity {:.0f} req/s\n",
          repeat + 1, name, c->batch_ms[0], c->batch_ms[1], c->batch_ms[3], c->batch_ms[7], c->batch_ms[15],
          c->batch_ms[31], c->jitter_cv, c->replica_capacity(kMaxBatch));
    }
    if (quietest.batch_ms.empty() || swept.batch_ms[0] < quietest.batch_ms[0]) quietest = swept;
  }
  report.write(fmt::format(
      "### e. Capacity planning: the batching simulation against the load test at 80% load\n\n"
      "One replica (default_runtime_batching: max batch 32, no queue delay, one executor), FAQ questions tokenized "
      "at submit, Poisson arrivals at 0.8 x the swept curve's capacity for {:.0f} s per repeat. Swept curve: measured "
      "just before the load test (9 rounds over batch sizes 1..32, questions drawn at random, median per size; "
      "jitter cv from the median absolute deviation). In-run curve: the load test's own batches timed (sizes seen "
      "< 3 times: the swept curve x the run's median ratio to it). The simulation runs 200,000 requests on each "
      "curve at the same rate; load = rate / the in-run curve's capacity.\n\n"
      "| repeat | capacity req/s | rate req/s | completed | measured P50 / P99 ms | sim. (swept curve) P50 / P99 ms | "
      "sim. (in-run curve) P50 / P99 ms | sim. in-run / measured P99 | mean batch measured / sim. | load in the run "
      "| load average before -> after |\n|---|---|---|---|---|---|---|---|---|---|---|\n{}\nCurves:\n{}\n",
      opt.duration_s, rows, curves));

  std::string sleep_rows;
  for (double load : {0.5, 0.8}) {
    const double rate = load * quietest.replica_capacity(kMaxBatch);
    const TimedRun real =
        run_timed_open_loop(sleep_functions(quietest), policy, nullptr, rate, opt.duration_s, mix_seed(opt.seed, 8));
    const batch::ServiceCurve in_run = in_run_curve(quietest, real);
    const batch::SimulationResult nominal = simulate(quietest, rate, opt.seed, 0),
                                  sim = simulate(in_run, rate, opt.seed);
    sleep_rows += fmt::format("| {:.0f}% | {:.0f} | {} | {:.2f} / {:.2f} | {} | {} | {:.2f} | {:.2f} / {:.2f} |\n",
                              load * 100, rate, real.completed, real.p50_ms, real.p99_ms, cell(nominal), cell(sim),
                              sim.p99_s * 1e3 / real.p99_ms, real.mean_batch, sim.mean_batch);
  }
  report.write(fmt::format(
      "The same check without the encoder: brisk's Batcher (the same policy) on a batch function that sleeps "
      "batch_ms[b] of the quietest swept curve ({:.2f} ms alone, {:.2f} ms for 32), {:.0f} s per load; simulated on "
      "the nominal curve (cv 0) and on the sleeps as timed in the run (a loaded machine wakes a sleeper late). "
      "Load average now: {}.\n\n"
      "| load | rate req/s | completed | real Batcher P50 / P99 ms | sim. nominal P50 / P99 ms | sim. as timed "
      "P50 / P99 ms | sim. as timed / real P99 | mean batch real / sim. |\n|---|---|---|---|---|---|---|---|\n{}\n",
      quietest.batch_ms[0], quietest.batch_ms[31], opt.duration_s, loadavg(), sleep_rows));
}

}  // namespace brisk::load
