// Capacity planning: how many replicas of a brisk service meet a P99 latency SLO at a request rate, given the
// measured batch service-time curve. Three answers side by side (what `brisk plan` prints):
//   1. exact M/M/c (Erlang C, through the Erlang B recursion, stable for thousands of servers): P(wait), the mean
//      wait Wq and the P99 of the response time (wait + service) from its closed-form tail;
//   2. the field report's closed-form approximation of Wq (seeds/000, section 2.2.1), printed beside the exact
//      value so that its error shows;
//   3. a discrete-event simulation of brisk's batcher (M/G/c with batching), which checks both.
//
//   BRISK_ASSIGN_OR_RETURN(ServiceCurve curve, ServiceCurve::from_json(text, "curve.json"));
//   PlanOptions opts;
//   opts.arrival_rate = 400;   // requests per second
//   opts.slo_p99_s = 0.050;
//   BRISK_ASSIGN_OR_RETURN(CapacityPlan plan, plan_capacity(curve, opts));
//   // plan.simulated_replicas, plan.mmc_replicas, plan.rows[i].mmc.p99_response_s, ...
//
// The curve file (ServiceCurve::to_json writes it; `brisk plan --measure-out FILE` measures it):
//   {"model": "all-MiniLM-L6-v2", "seq": 16, "threads": 2, "jitter_cv": 0.04,
//    "batch_ms": {"1": 2.1, "2": 2.6, "3": 3.0, ..., "32": 14.8}}
// batch_ms["b"] is the median time in milliseconds to run one batch of b requests of `seq` tokens, for every b from
// 1 to the largest key (no gaps), each > 0 and not smaller than the one before (a bigger batch is never faster).
// jitter_cv (optional, default 0) is the coefficient of variation of a batch's time around its median; the
// simulation draws batch times from a gamma distribution with that mean and cv (0: deterministic). Other keys
// (model, seq, threads, device, measured_at, ...) are descriptive; unknown keys are ignored.
//
// The models and what they assume:
//   - M/M/c treats one replica as one server with exponential service at mu = 1 / batch_ms["1"]: the rate of a
//     replica that does not batch. That is the only per-request service rate the curve defines without a queue
//     model, so it is the fleet an M/M/c planner would size; batching makes a replica faster under load, which
//     the simulation shows. Its P99 cannot drop below ln(100) / mu (exponential service), so an SLO under that is
//     infeasible for it even where the simulation meets it.
//   - The simulation: Poisson arrivals at the rate; one shared FIFO queue (a balancer that sends each request to
//     the first free replica, which is what M/M/c assumes too); each replica runs brisk's batcher in the runtime's
//     default form, one executor and max_queue_delay 0: a replica that becomes free takes min(queued, max_batch)
//     requests at once, and a request that arrives at an idle replica starts alone. A batch of b takes
//     batch_ms[b] (times the jitter draw). Latency = completion - arrival. The first warmup_requests are dropped.
//     The run stops early, as unstable, when the queue passes max_queue (the load exceeds the fleet's capacity).
//     It is also unstable when the rate is at or above replicas x replica_capacity, or when the queue still grows
//     at the end: the measured requests' mean wait in their last tenth (in arrival order) exceeds twice that of
//     their first tenth plus the largest batch's time. (Greedy batching can be unstable below that capacity: on
//     a curve where b requests together cost more than b alone, taking every queued request makes it slower.)
//
// Thread safety: plain values and pure functions; any call may run on any thread at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk::batch {

struct BRISK_API ServiceCurve {
  std::string model;             // descriptive
  int seq = 0;                   // tokens per request the curve was measured at; 0: unknown
  int threads = 0;               // encoder threads per batch; 0: unknown
  std::string device = "cpu";    // descriptive
  std::string measured_at;       // descriptive, e.g. "2026-12-04 10:31"
  std::vector<double> batch_ms;  // batch_ms[b - 1]: median ms per batch of b requests, b = 1..max_batch()
  double jitter_cv = 0;

  size_t max_batch() const { return batch_ms.size(); }
  double batch_seconds(size_t b) const { return batch_ms[b - 1] * 1e-3; }
  // The most requests per second one replica can serve with batches of up to max_batch (0: max_batch()):
  // max over b of b / batch time.
  double replica_capacity(size_t max_batch = 0) const;

  // Checks what the file format promises; the error names the source and the field.
  Status validate(std::string_view source) const;
  static StatusOr<ServiceCurve> from_json(std::string_view text, std::string_view source);
  std::string to_json() const;
};

// The least-squares non-decreasing fit of `values` (pool adjacent violators): where a noisy measurement makes a
// larger batch faster than a smaller one, the run of violators is replaced by its mean. A running maximum would
// instead carry one slow outlier into every larger size. Measurers call it before writing batch_ms.
BRISK_API std::vector<double> non_decreasing_fit(const std::vector<double>& values);

// Erlang B, the blocking probability of c servers offered a erlangs (a = lambda / mu), by the recursion
// B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)): no factorials, no overflow.
BRISK_API double erlang_b(int servers, double offered_load);
// Erlang C, the probability that an arrival waits in M/M/c: c B / (c - a (1 - B)). Needs 0 <= a < c.
BRISK_API StatusOr<double> erlang_c(int servers, double offered_load);

struct MmcMetrics {
  int servers = 0;
  double utilisation = 0;  // rho = lambda / (c mu)
  double p_wait = 0;       // Erlang C
  double mean_wait_s = 0;  // Wq = C / (c mu - lambda)
  double mean_response_s = 0;
  double p99_wait_s = 0;      // from P(Wq > t) = C exp(-(c mu - lambda) t)
  double p99_response_s = 0;  // solves P(Wq + S > t) = 0.01, S ~ Exp(mu) (mmc_response_tail)
};
// Exact M/M/c; INVALID_ARGUMENT unless rates > 0, servers >= 1 and lambda < c mu.
BRISK_API StatusOr<MmcMetrics> mmc_metrics(double arrival_rate, double service_rate, int servers);
// P(response > t) in M/M/c: (1 - C) e^{-mu t} + C P(Exp(theta) + Exp(mu) > t), theta = c mu - lambda, where
// P(Exp(theta) + Exp(mu) > t) = e^{-mu t} + mu e^{-mu t} (1 - e^{-(theta - mu) t}) / (theta - mu) (-> t as
// theta -> mu; computed with expm1, so it is exact there too).
BRISK_API double mmc_response_tail(double arrival_rate, double service_rate, int servers, double p_wait, double t);

// The field report's approximation of the M/M/c mean wait, as printed there (seeds/000, section 2.2.1):
//   Wq = rho^(sqrt(2 (c + 1)) - 1) / (c mu (1 - rho)) * (1 + (1 - rho) (c - 1) sqrt(c / (c + 1)))
// Its first factor is Sakasegawa's (1977) approximation of Wq; the second factor is the report's own.
// INVALID_ARGUMENT unless rates > 0, servers >= 1 and rho < 1.
BRISK_API StatusOr<double> report_approximate_wait(double arrival_rate, double service_rate, int servers);

struct SimulationOptions {
  int replicas = 1;
  size_t max_batch = 0;       // 0: the curve's max_batch(); larger values are capped to it
  double jitter_cv = -1;      // < 0: the curve's; 0: deterministic; 1 with max_batch 1: exponential service (M/M/c)
  size_t requests = 200'000;  // measured requests (after the warm-up); at most 5'000'000
  size_t warmup_requests = 20'000;
  size_t max_queue = 1'000'000;  // queued requests past which the run stops as unstable (also unstable:
                                 // a rate at or above replicas x replica_capacity)
  uint64_t seed = 1;
};

struct SimulationResult {
  bool stable = true;   // false: the queue passed max_queue; the latencies below are then meaningless
  size_t requests = 0;  // measured
  double p50_s = 0, p99_s = 0, mean_s = 0;
  double mean_wait_s = 0, p99_wait_s = 0, p_wait = 0;  // wait: arrival to the start of its batch
  double utilisation = 0;                              // busy replica-time / (replicas x simulated time)
  double mean_batch = 0;                               // requests per batch
};
BRISK_API StatusOr<SimulationResult> simulate_batching(const ServiceCurve& curve, double arrival_rate,
                                                       const SimulationOptions& options);

struct PlanOptions {
  double arrival_rate = 0;  // requests per second, > 0
  double slo_p99_s = 0;     // P99 response time target in seconds, > 0
  int max_replicas = 4096;
  SimulationOptions simulation;  // replicas is chosen by the planner
};

// One fleet size, every model's figures for it. mmc_ok / approx_ok / simulated_ok: that model was defined (stable).
struct PlanRow {
  int replicas = 0;
  bool mmc_ok = false;
  MmcMetrics mmc;
  bool approx_ok = false;
  double approx_wait_s = 0;          // the report's Wq
  double approx_p99_response_s = 0;  // the M/M/c tail with the P(wait) the report's Wq implies: Wq (c mu - lambda)
  SimulationResult simulated;        // brisk's batcher, the curve's service times
  SimulationResult unbatched;        // the same simulation with max batch 1 (what batching buys)
};

struct CapacityPlan {
  double arrival_rate = 0, slo_p99_s = 0;
  double service_rate = 0;      // mu = 1 / batch_ms[1]
  double replica_capacity = 0;  // ServiceCurve::replica_capacity(), with the simulation's max batch
  size_t max_batch = 0;
  // The smallest fleet that meets the SLO by each model; 0: none up to max_replicas (see the notes).
  int mmc_replicas = 0;
  int approx_replicas = 0;
  int simulated_replicas = 0;
  int unbatched_replicas = 0;
  // At mmc_replicas (or the first stable fleet): the simulation run as M/M/c (max batch 1, exponential service),
  // against which the exact and the approximate Wq are checked.
  int check_replicas = 0;
  SimulationResult check_simulated;
  std::vector<PlanRow> rows;       // every fleet size from the smallest stable one to past the largest answer
  std::vector<std::string> notes;  // why a model has no answer (an SLO it cannot meet), in words
};

// INVALID_ARGUMENT naming the option for a rate or SLO <= 0 (or not finite) and for an invalid curve. An SLO that
// no fleet can meet (below the batch-1 service time) is OUT_OF_RANGE with both numbers in the message.
BRISK_API StatusOr<CapacityPlan> plan_capacity(const ServiceCurve& curve, const PlanOptions& options);

}  // namespace brisk::batch
