// Capacity planning: the curve file, Erlang B/C, the report's approximation, the batching simulation, the planner.
#include "brisk/core/stats.h"
#include "brisk/batch/capacity.h"
#include "brisk/core/internal/bounded_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <set>

#include "nlohmann/json.hpp"

namespace brisk::batch {

namespace {

constexpr size_t kMaxCurveBatch = 4096;  // the runtime's kMaxBatchSize
constexpr size_t kMaxSimulatedRequests = 5'000'000;

bool finite_positive(double v) { return std::isfinite(v) && v > 0; }

// brisk/core/stats.h's percentile of sorted values; 0 for none (a report with no requests).
double percentile_or_zero(const std::vector<double>& sorted, double p) {
  return sorted.empty() ? 0.0 : percentile_of_sorted(sorted, p);
}

// Smallest t with tail(t) <= p, for a tail that decreases from tail(0) >= p; bisection to 1e-9 relative.
double solve_tail(const std::function<double(double)>& tail, double p, double scale) {
  double lo = 0, hi = scale;
  while (tail(hi) > p && hi < 1e12) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (tail(mid) > p ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// The curve

double ServiceCurve::replica_capacity(size_t max_batch_size) const {
  const size_t top = max_batch_size == 0 ? max_batch() : std::min(max_batch_size, max_batch());
  double best = 0;
  for (size_t b = 1; b <= top; ++b) best = std::max(best, static_cast<double>(b) / batch_seconds(b));
  return best;
}

Status ServiceCurve::validate(std::string_view source) const {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", std::string(source), what));
  };
  if (batch_ms.empty()) return bad("batch_ms is empty; expected a time for each batch size from 1 up");
  if (batch_ms.size() > kMaxCurveBatch) {
    return bad(fmt::format("batch_ms has {} batch sizes; expected at most {}", batch_ms.size(), kMaxCurveBatch));
  }
  for (size_t b = 1; b <= batch_ms.size(); ++b) {
    const double ms = batch_ms[b - 1];
    if (!finite_positive(ms)) return bad(fmt::format("batch_ms[\"{}\"] is {}; expected > 0", b, ms));
    if (b > 1 && ms < batch_ms[b - 2]) {
      return bad(fmt::format(
          "batch_ms[\"{}\"] is {} ms, below batch_ms[\"{}\"] = {} ms; expected a curve that does not decrease with "
          "the batch size (a bigger batch is never faster: take the running maximum of noisy medians)",
          b, ms, b - 1, batch_ms[b - 2]));
    }
  }
  if (!std::isfinite(jitter_cv) || jitter_cv < 0 || jitter_cv > 10) {
    return bad(fmt::format("jitter_cv is {}; expected a number from 0 to 10", jitter_cv));
  }
  if (seq < 0) return bad(fmt::format("seq is {}; expected >= 0", seq));
  if (threads < 0) return bad(fmt::format("threads is {}; expected >= 0", threads));
  return absl::OkStatus();
}

StatusOr<ServiceCurve> ServiceCurve::from_json(std::string_view text, std::string_view source) {
  const std::string src(source);
  auto bad = [&](const std::string& what) { return absl::InvalidArgumentError(fmt::format("{}: {}", src, what)); };
  BRISK_ASSIGN_OR_RETURN(const nlohmann::json j, parse_json_bounded(text, src));
  if (!j.is_object()) return bad("is not a JSON object; expected {\"batch_ms\": {\"1\": ms, \"2\": ms, ...}, ...}");
  ServiceCurve c;
  auto text_field = [&](const char* key, std::string& out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return absl::OkStatus();
    if (!it->is_string()) return bad(fmt::format("\"{}\" is {}; expected a string", key, it->type_name()));
    out = it->get<std::string>();
    return absl::OkStatus();
  };
  auto int_field = [&](const char* key, int& out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return absl::OkStatus();
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1'000'000) {
      return bad(fmt::format("\"{}\" is {}; expected a whole number from 0 to 1000000", key, shown_json(*it)));
    }
    out = static_cast<int>(it->get<int64_t>());
    return absl::OkStatus();
  };
  BRISK_RETURN_IF_ERROR(text_field("model", c.model));
  BRISK_RETURN_IF_ERROR(text_field("device", c.device));
  BRISK_RETURN_IF_ERROR(text_field("measured_at", c.measured_at));
  BRISK_RETURN_IF_ERROR(int_field("seq", c.seq));
  BRISK_RETURN_IF_ERROR(int_field("threads", c.threads));
  if (auto it = j.find("jitter_cv"); it != j.end()) {
    if (!it->is_number()) return bad(fmt::format("\"jitter_cv\" is {}; expected a number", it->type_name()));
    c.jitter_cv = it->get<double>();
  }
  auto curve = j.find("batch_ms");
  if (curve == j.end()) return bad("\"batch_ms\" is missing; expected {\"1\": ms, \"2\": ms, ...}");
  if (!curve->is_object()) {
    return bad(fmt::format("\"batch_ms\" is {}; expected an object {{\"1\": ms, \"2\": ms, ...}}", curve->type_name()));
  }
  if (curve->size() > kMaxCurveBatch) {
    return bad(fmt::format("batch_ms has {} entries; expected at most {}", curve->size(), kMaxCurveBatch));
  }
  c.batch_ms.assign(curve->size(), std::numeric_limits<double>::quiet_NaN());
  for (const auto& [key, value] : curve->items()) {
    size_t b = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), b);
    if (ec != std::errc() || end != key.data() + key.size() || key.empty() || key[0] == '0') {
      return bad(fmt::format("batch_ms key \"{}\" is not a batch size; expected \"1\", \"2\", ...", key));
    }
    if (b > c.batch_ms.size()) {
      return bad(
          fmt::format("batch_ms has a time for batch size {} but only {} entries; expected every size from 1 "
                      "to the largest, with no gaps",
                      b, c.batch_ms.size()));
    }
    if (!value.is_number()) {
      return bad(fmt::format("batch_ms[\"{}\"] is {}; expected a number of milliseconds > 0", key, shown_json(value)));
    }
    c.batch_ms[b - 1] = value.get<double>();
  }
  BRISK_RETURN_IF_ERROR(c.validate(source));
  return c;
}

std::string ServiceCurve::to_json() const {
  nlohmann::ordered_json j;
  j["model"] = model;
  j["seq"] = seq;
  j["threads"] = threads;
  j["device"] = device;
  if (!measured_at.empty()) j["measured_at"] = measured_at;
  j["jitter_cv"] = jitter_cv;
  nlohmann::ordered_json curve = nlohmann::ordered_json::object();
  for (size_t b = 1; b <= batch_ms.size(); ++b) curve[std::to_string(b)] = batch_ms[b - 1];
  j["batch_ms"] = std::move(curve);
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::vector<double> non_decreasing_fit(const std::vector<double>& values) {
  struct Block {
    double sum;
    size_t count;
  };
  std::vector<Block> blocks;
  for (double v : values) {
    blocks.push_back({v, 1});
    while (blocks.size() > 1) {
      const Block& last = blocks.back();
      const Block& before = blocks[blocks.size() - 2];
      if (before.sum / before.count <= last.sum / last.count) break;
      const Block merged{before.sum + last.sum, before.count + last.count};
      blocks.pop_back();
      blocks.back() = merged;
    }
  }
  std::vector<double> out;
  out.reserve(values.size());
  for (const Block& b : blocks) out.insert(out.end(), b.count, b.sum / static_cast<double>(b.count));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Closed forms

double erlang_b(int servers, double offered_load) {
  double b = 1;
  for (int k = 1; k <= servers; ++k) b = offered_load * b / (k + offered_load * b);
  return b;
}

StatusOr<double> erlang_c(int servers, double offered_load) {
  if (servers < 1) return absl::InvalidArgumentError(fmt::format("servers is {}; expected >= 1", servers));
  if (!std::isfinite(offered_load) || offered_load < 0 || offered_load >= servers) {
    return absl::InvalidArgumentError(fmt::format(
        "offered load is {} erlangs with {} servers; expected 0 <= load < servers (else the queue grows without "
        "bound)",
        offered_load, servers));
  }
  const double b = erlang_b(servers, offered_load);
  return servers * b / (servers - offered_load * (1 - b));
}

namespace {

Status check_rates(double arrival_rate, double service_rate, int servers) {
  if (!finite_positive(arrival_rate)) {
    return absl::InvalidArgumentError(
        fmt::format("arrival rate is {}; expected > 0 requests per second", arrival_rate));
  }
  if (!finite_positive(service_rate)) {
    return absl::InvalidArgumentError(fmt::format("service rate is {}; expected > 0 per second", service_rate));
  }
  if (servers < 1) return absl::InvalidArgumentError(fmt::format("servers is {}; expected >= 1", servers));
  if (arrival_rate >= servers * service_rate) {
    return absl::InvalidArgumentError(
        fmt::format("utilisation is {:.3f} ({} req/s on {} servers of {:.3f} req/s); expected < 1",
                    arrival_rate / (servers * service_rate), arrival_rate, servers, service_rate));
  }
  return absl::OkStatus();
}

}  // namespace

double mmc_response_tail(double arrival_rate, double service_rate, int servers, double p_wait, double t) {
  const double mu = service_rate, theta = servers * service_rate - arrival_rate, d = theta - mu;
  const double e_mu = std::exp(-mu * t);
  // (1 - e^{-d t}) / d, with its limit t at d = 0.
  const double ratio = std::abs(d * t) < 1e-12 ? t : -std::expm1(-d * t) / d;
  const double waited = e_mu + mu * e_mu * ratio;  // P(Exp(theta) + Exp(mu) > t)
  return (1 - p_wait) * e_mu + p_wait * waited;
}

StatusOr<MmcMetrics> mmc_metrics(double arrival_rate, double service_rate, int servers) {
  BRISK_RETURN_IF_ERROR(check_rates(arrival_rate, service_rate, servers));
  MmcMetrics m;
  m.servers = servers;
  const double a = arrival_rate / service_rate, theta = servers * service_rate - arrival_rate;
  m.utilisation = a / servers;
  BRISK_ASSIGN_OR_RETURN(m.p_wait, erlang_c(servers, a));
  m.mean_wait_s = m.p_wait / theta;
  m.mean_response_s = m.mean_wait_s + 1 / service_rate;
  m.p99_wait_s = m.p_wait <= 0.01 ? 0 : std::log(m.p_wait / 0.01) / theta;
  m.p99_response_s =
      solve_tail([&](double t) { return mmc_response_tail(arrival_rate, service_rate, servers, m.p_wait, t); }, 0.01,
                 1 / service_rate);
  return m;
}

StatusOr<double> report_approximate_wait(double arrival_rate, double service_rate, int servers) {
  BRISK_RETURN_IF_ERROR(check_rates(arrival_rate, service_rate, servers));
  const double c = servers, mu = service_rate, rho = arrival_rate / (c * mu);
  const double sakasegawa = std::pow(rho, std::sqrt(2 * (c + 1)) - 1) / (c * mu * (1 - rho));
  return sakasegawa * (1 + (1 - rho) * (c - 1) * std::sqrt(c / (c + 1)));
}

// ---------------------------------------------------------------------------------------------------------------
// The simulation

StatusOr<SimulationResult> simulate_batching(const ServiceCurve& curve, double arrival_rate,
                                             const SimulationOptions& o) {
  BRISK_RETURN_IF_ERROR(curve.validate("the service-time curve"));
  if (!finite_positive(arrival_rate)) {
    return absl::InvalidArgumentError(
        fmt::format("arrival rate is {}; expected > 0 requests per second", arrival_rate));
  }
  if (o.replicas < 1) return absl::InvalidArgumentError(fmt::format("replicas is {}; expected >= 1", o.replicas));
  if (o.requests < 1 || o.requests > kMaxSimulatedRequests || o.warmup_requests > kMaxSimulatedRequests) {
    return absl::InvalidArgumentError(fmt::format("requests is {} (warm-up {}); expected 1 to {} each", o.requests,
                                                  o.warmup_requests, kMaxSimulatedRequests));
  }
  const double cv = o.jitter_cv < 0 ? curve.jitter_cv : o.jitter_cv;
  if (!std::isfinite(cv) || cv > 10)
    return absl::InvalidArgumentError(fmt::format("jitter_cv is {}; expected 0 to 10", cv));
  const size_t max_batch = o.max_batch == 0 ? curve.max_batch() : std::min(o.max_batch, curve.max_batch());

  // Separate streams for arrivals and service draws: runs that differ only in replicas see the same arrivals.
  std::mt19937_64 arrival_rng(o.seed * 0x9E3779B97F4A7C15ULL + 1);
  std::mt19937_64 service_rng(o.seed * 0xC2B2AE3D27D4EB4FULL + 2);
  std::exponential_distribution<double> gap(arrival_rate);
  const double shape = cv > 0 ? 1 / (cv * cv) : 0;
  std::gamma_distribution<double> jitter(cv > 0 ? shape : 1, cv > 0 ? 1 / shape : 1);  // mean 1, cv
  auto service = [&](size_t b) { return curve.batch_seconds(b) * (cv > 0 ? jitter(service_rng) : 1.0); };

  struct Queued {
    double arrival;
    size_t index;
  };
  std::deque<Queued> queue;
  std::priority_queue<double, std::vector<double>, std::greater<>> finishing;  // busy replicas' finish times
  int idle = o.replicas;
  const size_t total = o.warmup_requests + o.requests;
  std::vector<double> latency, wait;
  latency.reserve(o.requests);
  wait.reserve(o.requests);
  size_t waited = 0, measured_batches = 0, measured_in_batches = 0;
  double busy = 0, window_start = -1, window_end = 0;

  SimulationResult r;
  auto start_batch = [&](double t) {
    const size_t b = std::min(queue.size(), max_batch);
    const double s = service(b);
    const double finish = t + s;
    const bool measured = queue.front().index >= o.warmup_requests;
    for (size_t i = 0; i < b; ++i) {
      const Queued q = queue.front();
      queue.pop_front();
      if (q.index < o.warmup_requests) continue;
      latency.push_back(finish - q.arrival);
      wait.push_back(t - q.arrival);
      if (t > q.arrival) ++waited;
    }
    if (measured) {
      ++measured_batches;
      measured_in_batches += b;
      busy += s;
    }
    finishing.push(finish);
    --idle;
  };

  double next_arrival = gap(arrival_rng);
  size_t generated = 0;
  while (generated < total || !finishing.empty()) {
    const double next_finish = finishing.empty() ? std::numeric_limits<double>::infinity() : finishing.top();
    if (generated < total && next_arrival <= next_finish) {
      const double t = next_arrival;
      if (generated == o.warmup_requests) window_start = t;
      window_end = t;
      queue.push_back({t, generated++});
      next_arrival += gap(arrival_rng);
      if (idle > 0) start_batch(t);
      if (queue.size() > o.max_queue) {
        r.stable = false;
        break;
      }
    } else {
      finishing.pop();
      ++idle;
      if (!queue.empty()) start_batch(next_finish);
    }
  }
  if (arrival_rate >= o.replicas * curve.replica_capacity(max_batch)) r.stable = false;
  // Still growing at the end? Compare the last tenth of the measured requests' waits with the first tenth (wait
  // is in the order the requests started, which under FIFO is their arrival order; the warm-up came before both).
  if (wait.size() >= 100) {
    const size_t tenth = wait.size() / 10;
    double first = 0, last = 0;
    for (size_t i = 0; i < tenth; ++i) {
      first += wait[i];
      last += wait[wait.size() - tenth + i];
    }
    if (last / tenth > 2 * (first / tenth) + curve.batch_seconds(max_batch)) r.stable = false;
  }

  std::sort(latency.begin(), latency.end());
  std::sort(wait.begin(), wait.end());
  r.requests = latency.size();
  r.p50_s = percentile_or_zero(latency, 50);
  r.p99_s = percentile_or_zero(latency, 99);
  double sum = 0, wait_sum = 0;
  for (double v : latency) sum += v;
  for (double v : wait) wait_sum += v;
  if (!latency.empty()) {
    r.mean_s = sum / static_cast<double>(latency.size());
    r.mean_wait_s = wait_sum / static_cast<double>(wait.size());
    r.p_wait = static_cast<double>(waited) / static_cast<double>(latency.size());
  }
  r.p99_wait_s = percentile_or_zero(wait, 99);
  // Busy time of the measured batches over the measured arrivals' span (the drain at the end is not load).
  const double span = window_end - std::max(window_start, 0.0);
  r.utilisation = span > 0 ? std::min(1.0, busy / (o.replicas * span)) : 0;
  r.mean_batch = measured_batches ? static_cast<double>(measured_in_batches) / measured_batches : 0;
  return r;
}

// ---------------------------------------------------------------------------------------------------------------
// The planner

namespace {

// The smallest c in [lo, hi] with meets(c), assuming meets is monotone; 0 if none. Gallops up from lo, then
// bisects, so a fleet of thousands costs about 2 log2(hi) evaluations.
StatusOr<int> smallest_meeting(int lo, int hi, const std::function<StatusOr<bool>(int)>& meets) {
  if (lo > hi) return 0;
  int failed = lo - 1, step = 1, c = lo;
  for (;;) {
    BRISK_ASSIGN_OR_RETURN(bool ok, meets(c));
    if (ok) break;
    failed = c;
    if (c == hi) return 0;
    c = std::min(hi, c + step);
    step *= 2;
  }
  int good = c;
  while (good - failed > 1) {
    const int mid = failed + (good - failed) / 2;
    BRISK_ASSIGN_OR_RETURN(bool ok, meets(mid));
    (ok ? good : failed) = mid;
  }
  return good;
}

// Smallest fleet whose capacity exceeds the rate.
int first_stable(double arrival_rate, double per_replica) {
  return static_cast<int>(std::floor(arrival_rate / per_replica)) + 1;
}

}  // namespace

StatusOr<CapacityPlan> plan_capacity(const ServiceCurve& curve, const PlanOptions& options) {
  if (!finite_positive(options.arrival_rate)) {
    return absl::InvalidArgumentError(
        fmt::format("rate is {}; expected > 0 requests per second", options.arrival_rate));
  }
  if (!finite_positive(options.slo_p99_s)) {
    return absl::InvalidArgumentError(fmt::format("P99 SLO is {} ms; expected > 0 ms", options.slo_p99_s * 1e3));
  }
  if (options.max_replicas < 1) {
    return absl::InvalidArgumentError(fmt::format("max_replicas is {}; expected >= 1", options.max_replicas));
  }
  BRISK_RETURN_IF_ERROR(curve.validate("the service-time curve"));
  CapacityPlan plan;
  plan.arrival_rate = options.arrival_rate;
  plan.slo_p99_s = options.slo_p99_s;
  plan.service_rate = 1 / curve.batch_seconds(1);
  plan.max_batch =
      options.simulation.max_batch == 0 ? curve.max_batch() : std::min(options.simulation.max_batch, curve.max_batch());
  plan.replica_capacity = curve.replica_capacity(plan.max_batch);
  if (options.slo_p99_s < curve.batch_seconds(1)) {
    return absl::OutOfRangeError(fmt::format(
        "the P99 SLO ({:.3f} ms) is below the batch-1 service time ({:.3f} ms): no number of replicas can meet it; "
        "expected an SLO above the time of one request alone",
        options.slo_p99_s * 1e3, curve.batch_ms[0]));
  }
  const double rate = options.arrival_rate, mu = plan.service_rate, slo = options.slo_p99_s;
  const int hi = options.max_replicas;

  // 1. Exact M/M/c, and 2. the report's approximation: closed forms, so a plain scan.
  const double mmc_floor = std::log(100.0) / mu;  // P99 of one exponential service time: the bound as c grows
  if (slo <= mmc_floor) {
    plan.notes.push_back(fmt::format(
        "M/M/c cannot meet a P99 of {:.3f} ms at any fleet size: with exponential service at mu = {:.1f}/s its "
        "P99 is at least ln(100)/mu = {:.3f} ms",
        slo * 1e3, mu, mmc_floor * 1e3));
  }
  auto approx_p99 = [&](int c, double* wq) -> StatusOr<double> {
    BRISK_ASSIGN_OR_RETURN(*wq, report_approximate_wait(rate, mu, c));
    const double implied_c = std::min(1.0, *wq * (c * mu - rate));
    return solve_tail([&](double t) { return mmc_response_tail(rate, mu, c, implied_c, t); }, 0.01, 1 / mu);
  };
  const int mmc_lo = first_stable(rate, mu);
  for (int c = mmc_lo; c <= hi && slo > mmc_floor; ++c) {
    BRISK_ASSIGN_OR_RETURN(MmcMetrics m, mmc_metrics(rate, mu, c));
    if (plan.mmc_replicas == 0 && m.p99_response_s <= slo) plan.mmc_replicas = c;
    double wq = 0;
    BRISK_ASSIGN_OR_RETURN(double p99, approx_p99(c, &wq));
    if (plan.approx_replicas == 0 && p99 <= slo) plan.approx_replicas = c;
    if (plan.mmc_replicas && plan.approx_replicas) break;
  }

  // 3. The simulation, batched (the curve's max batch) and unbatched.
  auto simulate = [&](int c, size_t max_batch) {
    SimulationOptions so = options.simulation;
    so.replicas = c;
    so.max_batch = max_batch;
    return simulate_batching(curve, rate, so);
  };
  auto sim_meets = [&](size_t max_batch) {
    return [&, max_batch](int c) -> StatusOr<bool> {
      BRISK_ASSIGN_OR_RETURN(SimulationResult r, simulate(c, max_batch));
      return r.stable && r.p99_s <= slo;
    };
  };
  const int batched_lo = first_stable(rate, plan.replica_capacity);
  if (batched_lo > hi) {
    plan.notes.push_back(fmt::format(
        "{:g} req/s is more than {} replicas carry even fully busy ({:.1f} req/s each with batching); raise the "
        "replica limit or plan for a lower rate",
        rate, hi, plan.replica_capacity));
  }
  BRISK_ASSIGN_OR_RETURN(plan.simulated_replicas, smallest_meeting(batched_lo, hi, sim_meets(plan.max_batch)));
  BRISK_ASSIGN_OR_RETURN(plan.unbatched_replicas, smallest_meeting(mmc_lo, hi, sim_meets(1)));
  if (plan.simulated_replicas == 0) {
    plan.notes.push_back(fmt::format(
        "the simulation does not meet a P99 of {:.3f} ms with up to {} replicas (batch-1 time {:.3f} ms, jitter cv "
        "{:.2f})",
        slo * 1e3, hi, curve.batch_ms[0],
        options.simulation.jitter_cv < 0 ? curve.jitter_cv : options.simulation.jitter_cv));
  }

  // The simulator run as M/M/c, to check the closed forms against it.
  plan.check_replicas = plan.mmc_replicas ? plan.mmc_replicas : std::min(hi, mmc_lo);
  {
    SimulationOptions so = options.simulation;
    so.replicas = plan.check_replicas;
    so.max_batch = 1;
    so.jitter_cv = 1;  // gamma with cv 1: exponential
    BRISK_ASSIGN_OR_RETURN(plan.check_simulated, simulate_batching(curve, rate, so));
  }

  // The rows: around each answer, and the first fleet that batching keeps stable.
  std::set<int> sizes = {std::min(hi, batched_lo)};
  for (int answer : {plan.mmc_replicas, plan.approx_replicas, plan.simulated_replicas, plan.unbatched_replicas}) {
    for (int c = answer - 1; answer > 0 && c <= answer + 1; ++c) {
      if (c >= 1 && c <= hi) sizes.insert(c);
    }
  }
  for (int c : sizes) {
    PlanRow row;
    row.replicas = c;
    if (c >= mmc_lo) {
      BRISK_ASSIGN_OR_RETURN(row.mmc, mmc_metrics(rate, mu, c));
      row.mmc_ok = true;
      BRISK_ASSIGN_OR_RETURN(row.approx_p99_response_s, approx_p99(c, &row.approx_wait_s));
      row.approx_ok = true;
    }
    BRISK_ASSIGN_OR_RETURN(row.simulated, simulate(c, plan.max_batch));
    BRISK_ASSIGN_OR_RETURN(row.unbatched, simulate(c, 1));
    plan.rows.push_back(row);
  }
  return plan;
}

}  // namespace brisk::batch
