// `brisk plan`: capacity planning from a measured batch service-time curve (see plan.h).
#include "plan.h"
#include "brisk/core/internal/bounded_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <vector>

#include "brisk.h"
#include "brisk/batch/capacity.h"
#include "brisk/core/stats.h"
#include "brisk/model/tokenizer.h"
#include "brisk/model/loader.h"
#include "brisk/runtime/runtime.h"
#include "output.h"

namespace brisk::cli {

namespace {

using batch::CapacityPlan;
using batch::PlanRow;
using batch::ServiceCurve;
using json = nlohmann::json;

// A curve file holds a few dozen batch sizes; 4 MiB is far past any real one.
constexpr int64_t kMaxCurveFileBytes = int64_t{4} << 20;

std::string now_string() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::localtime(&t));
  return buf;
}

// "[CLS] w w ... w [SEP]" of exactly `seq` tokens, checked with the model's tokenizer.
StatusOr<std::string> synthetic_text(const std::string& model, int seq) {
  BRISK_ASSIGN_OR_RETURN(const TextTokenizer tok, load_model_tokenizer(model));
  std::string text;
  for (int i = 0; i < seq - 2; ++i) text += i ? " hello" : "hello";
  BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.encode(text, seq + 8));
  if (static_cast<int>(ids.size()) != seq) {
    return absl::FailedPreconditionError(
        fmt::format("'hello' x {} tokenizes to {} tokens with the tokenizer of {}; expected exactly {} (--seq)",
                    seq - 2, ids.size(), model, seq));
  }
  return text;
}

StatusOr<ServiceCurve> measure_curve(const PlanFlags& f) {
  RuntimeOptions opts = f.model.runtime_options();
  opts.max_seq_len = f.seq;
  opts.batching.max_batch_size = std::max(opts.batching.max_batch_size, static_cast<size_t>(f.max_batch));
  opts.batching.max_batch_tokens =
      std::max(opts.batching.max_batch_tokens, static_cast<size_t>(f.max_batch) * static_cast<size_t>(f.seq));
  opts.cache.result_cache_bytes = 0;  // the same text every call: measure the model, not the caches
  opts.cache.token_cache_entries = 0;
  BRISK_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt, Runtime::create(opts));
  if (rt->info().max_seq_len < f.seq) {
    return absl::InvalidArgumentError(fmt::format(
        "--seq is {}; expected at most the model's maximum sequence length {}", f.seq, rt->info().max_seq_len));
  }
  BRISK_ASSIGN_OR_RETURN(std::string text, synthetic_text(f.model.model_dir, f.seq));
  const size_t max_batch = static_cast<size_t>(f.max_batch);
  const std::vector<std::string_view> texts(max_batch, text);
  std::vector<float> out(max_batch * static_cast<size_t>(rt->embedding_dim()));
  std::vector<std::vector<double>> samples(max_batch);
  for (int round = 0; round < f.warmup + f.iters; ++round) {
    for (size_t b = 1; b <= max_batch; ++b) {
      const auto t0 = std::chrono::steady_clock::now();
      BRISK_RETURN_IF_ERROR(rt->embed(std::span(texts).first(b), std::span(out).first(b * rt->embedding_dim())));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (round >= f.warmup) samples[b - 1].push_back(ms);
    }
  }
  ServiceCurve curve;
  curve.model = f.model.model_dir;
  curve.seq = f.seq;
  curve.threads = opts.num_threads;
  curve.device = device_string(f.model.device.spec);
  curve.measured_at = now_string();
  std::vector<double> deviations;  // |time / median - 1| over every sample
  std::vector<double> medians;
  for (size_t b = 1; b <= max_batch; ++b) {
    const double m = percentile(samples[b - 1], 50);
    for (double s : samples[b - 1]) deviations.push_back(std::abs(s / m - 1));
    medians.push_back(m);
  }
  curve.batch_ms = batch::non_decreasing_fit(medians);
  size_t refit = 0;
  for (size_t i = 0; i < medians.size(); ++i) refit += curve.batch_ms[i] != medians[i];
  // 1.4826 x the median absolute deviation: the standard deviation for normal noise, but not blown up by the few
  // samples another process preempted (one such sample in a hundred made the plain standard deviation 2-4).
  curve.jitter_cv = 1.4826 * percentile(deviations, 50);
  fmt::print(stderr,
             "brisk plan: measured {} batch sizes x {} rounds on {} (seq {}); {} median(s) pooled with a "
             "neighbour to make the curve non-decreasing (noise)\n",
             max_batch, f.iters, f.model.model_dir, f.seq, refit);
  return curve;
}

std::string ms(double seconds) { return fmt::format("{:.2f}", seconds * 1e3); }
std::string answer(int replicas) { return replicas > 0 ? std::to_string(replicas) : std::string("none"); }

json simulation_json(const batch::SimulationResult& r) {
  return {{"stable", r.stable},      {"requests", r.requests},       {"p50_ms", r.p50_s * 1e3},
          {"p99_ms", r.p99_s * 1e3}, {"mean_ms", r.mean_s * 1e3},    {"mean_wait_ms", r.mean_wait_s * 1e3},
          {"p_wait", r.p_wait},      {"utilisation", r.utilisation}, {"mean_batch", r.mean_batch}};
}

void print_json(const ServiceCurve& curve, const CapacityPlan& p) {
  json rows = json::array();
  for (const PlanRow& r : p.rows) {
    json row = {{"replicas", r.replicas},
                {"simulated", simulation_json(r.simulated)},
                {"unbatched", simulation_json(r.unbatched)}};
    if (r.mmc_ok) {
      row["mmc"] = {{"utilisation", r.mmc.utilisation},
                    {"p_wait", r.mmc.p_wait},
                    {"mean_wait_ms", r.mmc.mean_wait_s * 1e3},
                    {"p99_wait_ms", r.mmc.p99_wait_s * 1e3},
                    {"p99_ms", r.mmc.p99_response_s * 1e3}};
      row["report_approximation"] = {{"mean_wait_ms", r.approx_wait_s * 1e3},
                                     {"p99_ms", r.approx_p99_response_s * 1e3}};
    }
    rows.push_back(std::move(row));
  }
  json j = {{"rate", p.arrival_rate},
            {"slo_p99_ms", p.slo_p99_s * 1e3},
            {"curve", json::parse(curve.to_json())},
            {"service_rate", p.service_rate},
            {"replica_capacity", p.replica_capacity},
            {"max_batch", p.max_batch},
            {"replicas",
             {{"mmc", p.mmc_replicas},
              {"report_approximation", p.approx_replicas},
              {"simulated", p.simulated_replicas},
              {"unbatched", p.unbatched_replicas}}},
            {"check", {{"replicas", p.check_replicas}, {"simulated_mmc", simulation_json(p.check_simulated)}}},
            {"rows", std::move(rows)},
            {"notes", p.notes},
            {"brisk_version", brisk_version_string()}};
  fmt::print("{}\n", j.dump(2, ' ', false, json::error_handler_t::replace));
}

void print_table(const ServiceCurve& curve, const CapacityPlan& p) {
  fmt::print("brisk plan: {:g} req/s, P99 SLO {:g} ms\n", p.arrival_rate, p.slo_p99_s * 1e3);
  fmt::print("  curve     {} (seq {}, threads {}, {}): batch 1 {:.3f} ms ... batch {} {:.3f} ms; jitter cv {:.3f}\n",
             curve.model.empty() ? "?" : curve.model, curve.seq, curve.threads, curve.device, curve.batch_ms.front(),
             curve.max_batch(), curve.batch_ms.back(), curve.jitter_cv);
  fmt::print("  replica   {:.1f} req/s alone (mu = 1 / batch-1 time); {:.1f} req/s with batches of up to {}\n\n",
             p.service_rate, p.replica_capacity, p.max_batch);
  fmt::print("  replicas needed for P99 <= {:g} ms\n", p.slo_p99_s * 1e3);
  fmt::print("    exact M/M/c (Erlang C, exponential service at mu)      {}\n", answer(p.mmc_replicas));
  fmt::print("    the report's approximation (its Wq, the M/M/c tail)    {}\n", answer(p.approx_replicas));
  fmt::print("    {:<55}{}\n", fmt::format("simulation of brisk's batcher (max batch {})", p.max_batch),
             answer(p.simulated_replicas));
  fmt::print("    simulation without batching (max batch 1)              {}\n\n", answer(p.unbatched_replicas));
  fmt::print("  {:>8} | {:>30} | {:>17} | {:>34} | {:>13}\n", "", "exact M/M/c", "report approx.",
             fmt::format("simulated, batches <= {}", p.max_batch), "sim. batch 1");
  fmt::print("  {:>8} | {:>5} {:>7} {:>7} {:>8} | {:>8} {:>8} | {:>5} {:>6} {:>6} {:>7} {:>7} | {:>13}\n", "replicas",
             "util", "P(wait)", "Wq ms", "P99 ms", "Wq ms", "P99 ms", "util", "batch", "Wq ms", "P50 ms", "P99 ms",
             "P99 ms");
  for (const PlanRow& r : p.rows) {
    const std::string mmc = r.mmc_ok ? fmt::format("{:>5.2f} {:>7.3f} {:>7} {:>8}", r.mmc.utilisation, r.mmc.p_wait,
                                                   ms(r.mmc.mean_wait_s), ms(r.mmc.p99_response_s))
                                     : fmt::format("{:>30}", "unstable");
    const std::string approx = r.approx_ok
                                   ? fmt::format("{:>8} {:>8}", ms(r.approx_wait_s), ms(r.approx_p99_response_s))
                                   : fmt::format("{:>17}", "unstable");
    const batch::SimulationResult& s = r.simulated;
    const std::string sim = s.stable ? fmt::format("{:>5.2f} {:>6.2f} {:>6} {:>7} {:>7}", s.utilisation, s.mean_batch,
                                                   ms(s.mean_wait_s), ms(s.p50_s), ms(s.p99_s))
                                     : fmt::format("{:>34}", "unstable");
    const std::string unbatched = r.unbatched.stable ? ms(r.unbatched.p99_s) : std::string("unstable");
    fmt::print("  {:>8} | {} | {} | {} | {:>13}\n", r.replicas, mmc, approx, sim, unbatched);
  }
  const auto exact = batch::mmc_metrics(p.arrival_rate, p.service_rate, p.check_replicas);
  const auto approx = batch::report_approximate_wait(p.arrival_rate, p.service_rate, p.check_replicas);
  if (exact.ok() && approx.ok()) {
    fmt::print(
        "\n  check: the simulator run as M/M/c ({} replicas, max batch 1, exponential service at mu, {} requests):\n"
        "    Wq {} ms, P99 {} ms; Erlang C: Wq {} ms, P99 {} ms; the report's Wq {} ms\n",
        p.check_replicas, p.check_simulated.requests, ms(p.check_simulated.mean_wait_s), ms(p.check_simulated.p99_s),
        ms(exact->mean_wait_s), ms(exact->p99_response_s), ms(*approx));
  }
  fmt::print(
      "\n  M/M/c takes one replica as one server at the batch-1 rate (what a planner without a batching model sizes);\n"
      "  the simulation runs brisk's batcher (a free replica takes up to max batch queued requests, no queue delay)\n"
      "  with the curve's batch times, one shared queue, Poisson arrivals.\n");
  for (const std::string& note : p.notes) fmt::print("  note: {}\n", note);
}

}  // namespace

void PlanFlags::add_to(CLI::App& cmd) {
  rate_option = cmd.add_option("--rate", rate, "arrival rate to plan for, requests per second (> 0)");
  slo_option = cmd.add_option("--slo-p99-ms", slo_p99_ms, "the P99 response-time SLO in milliseconds (> 0)");
  bench_option = cmd.add_option("--bench", bench,
                                "the batch service-time curve (JSON, see brisk/batch/capacity.h); without it the "
                                "curve is measured on --model first");
  cmd.add_option("--measure-out", measure_out, "measure the curve on --model and write it to this file");
  cmd.add_option("--seq", seq, "tokens per request when measuring")->check(CLI::Range(2, 8192))->capture_default_str();
  max_batch_option =
      cmd.add_option("--max-batch", max_batch, "largest batch: measured up to it, and the simulated batcher's limit")
          ->check(CLI::Range(1, 4096))
          ->capture_default_str();
  cmd.add_option("--iters", iters, "timed rounds over every batch size when measuring")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd.add_option("--warmup", warmup, "untimed rounds first")->check(CLI::Range(0, 10000))->capture_default_str();
  cmd.add_option("--requests", requests, "simulated requests per fleet size (bounds the P99's noise)")
      ->check(CLI::Range(size_t{1000}, size_t{5'000'000}))
      ->capture_default_str();
  cmd.add_option("--seed", seed, "the simulation's seed")->capture_default_str();
  cmd.add_option("--max-replicas", max_replicas, "search fleets up to this size")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd.add_flag("--json", json_output, "print one JSON object instead of the tables");
  model.add_to(cmd, 0);
  bench_option->excludes(cmd.get_option("--measure-out"));
}

int run_plan(PlanFlags& f) {
  auto usage = [](const std::string& message) {
    report_error(absl::InvalidArgumentError(message));
    return kExitUsage;
  };
  if (Status s = f.model.validate(); !s.ok()) return usage(std::string(s.message()));
  const bool planning = f.rate_option->count() > 0 || f.slo_option->count() > 0;
  if (planning || f.measure_out.empty()) {
    if (f.rate_option->count() == 0) return usage("--rate is missing; expected requests per second > 0");
    if (f.slo_option->count() == 0) return usage("--slo-p99-ms is missing; expected milliseconds > 0");
    if (!(f.rate > 0) || !std::isfinite(f.rate)) {
      return usage(fmt::format("--rate is {}; expected > 0 requests per second", f.rate));
    }
    if (!(f.slo_p99_ms > 0) || !std::isfinite(f.slo_p99_ms)) {
      return usage(fmt::format("--slo-p99-ms is {}; expected > 0 milliseconds", f.slo_p99_ms));
    }
  }

  StatusOr<ServiceCurve> curve = absl::UnknownError("no curve");
  if (!f.bench.empty()) {
    StatusOr<std::string> text = read_text_file_bounded(f.bench, kMaxCurveFileBytes, "service-time curve (--bench)");
    if (!text.ok()) return report_error(text.status());
    curve = ServiceCurve::from_json(*text, "--bench " + f.bench);
  } else {
    curve = measure_curve(f);
  }
  if (!curve.ok()) return report_error(curve.status());
  if (!f.measure_out.empty()) {
    std::ofstream out(f.measure_out, std::ios::binary | std::ios::trunc);
    out << curve->to_json();
    out.close();
    if (!out)
      return report_error(absl::PermissionDeniedError(fmt::format("--measure-out {}: write failed", f.measure_out)));
    fmt::print(stderr, "brisk plan: wrote {}\n", f.measure_out);
    if (!planning) {
      if (!f.json_output) fmt::print("{}", curve->to_json());
      return kExitOk;
    }
  }

  batch::PlanOptions options;
  options.arrival_rate = f.rate;
  options.slo_p99_s = f.slo_p99_ms * 1e-3;
  options.max_replicas = f.max_replicas;
  options.simulation.requests = f.requests;
  options.simulation.warmup_requests = std::max<size_t>(1000, f.requests / 10);
  options.simulation.seed = f.seed;
  // The batcher's limit: --max-batch when given (a curve file may go further), else the curve's largest size.
  options.simulation.max_batch = f.max_batch_option->count() > 0 ? static_cast<size_t>(f.max_batch) : 0;
  StatusOr<CapacityPlan> plan = batch::plan_capacity(*curve, options);
  if (!plan.ok()) {
    // The library names the SLO and the rate in words; say which flags they came from.
    return report_error(absl::Status(
        plan.status().code(),
        fmt::format("--rate {:g} --slo-p99-ms {:g}: {}", f.rate, f.slo_p99_ms, std::string(plan.status().message()))));
  }
  if (f.json_output) {
    print_json(*curve, *plan);
  } else {
    print_table(*curve, *plan);
  }
  return kExitOk;
}

}  // namespace brisk::cli
