// Capacity planning (brisk/batch/capacity.h): Erlang C against a published table and textbook closed forms, the
// field report's approximation against its formula worked by hand, the batching simulation against exact M/M/c
// and M/D/1, the planner's answers, and the curve file's errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "brisk/batch/capacity.h"

using namespace brisk;
using namespace brisk::batch;
using Catch::Matchers::Contains;

namespace {

ServiceCurve curve_of(std::vector<double> batch_ms, double jitter_cv = 0) {
  ServiceCurve c;
  c.batch_ms = std::move(batch_ms);
  c.jitter_cv = jitter_cv;
  return c;
}

PlanOptions plan_options(double rate, double slo_s) {
  PlanOptions o;
  o.arrival_rate = rate;
  o.slo_p99_s = slo_s;
  return o;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Erlang C

TEST_CASE("Erlang C matches a published Erlang C table", "[capacity]") {
  // The Erlang C table of a trunked-radio (TETRA) traffic text, "Table C", and its worked example: "Given C = 8 and
  // PQ = 0.05 (5%), from the Erlang C table ... the offered traffic can be found to be A = 3.87. If PQ has to be
  // reduced to 0.01 (1%) ... the number of channels can be found to be 10 ... A = 4.08 from the table." The table
  // gives A to 0.01 erlang, so C(c, A) at the printed A is the row's probability up to that rounding:
  // dC/dA is about 0.065 per erlang at (8, 3.87) and 0.016 at (10, 4.08), so +-0.005 erlang moves C by at most
  // 0.00033 and 0.00008.
  CHECK(*erlang_c(8, 3.87) == Approx(0.05).margin(0.00033));
  CHECK(*erlang_c(10, 4.08) == Approx(0.01).margin(0.00008));
  // and the table's neighbours: one channel fewer at the same traffic waits far more often.
  CHECK(*erlang_c(7, 3.87) > 0.1);  // 0.118
}

TEST_CASE("Erlang C matches the textbook closed forms for one, two and three servers", "[capacity]") {
  // M/M/1 (Kleinrock, Queueing Systems Vol. 1, 1975, section 3.2): P(wait) = rho, Wq = rho / (mu - lambda), and the
  // response time is exponential with rate mu - lambda, so its P99 is ln(100) / (mu - lambda).
  // lambda = 20/s, mu = 25/s: rho = 0.8, Wq = 0.8 / 5 = 0.16 s, P99 = 4.60517 / 5 = 0.921034 s.
  MmcMetrics m1 = *mmc_metrics(20, 25, 1);
  CHECK(m1.p_wait == Approx(0.8).epsilon(1e-12));
  CHECK(m1.mean_wait_s == Approx(0.16).epsilon(1e-12));
  CHECK(m1.p99_response_s == Approx(0.921034).epsilon(1e-5));
  // M/M/2 (Kleinrock section 3.5 with m = 2): p0 = (1 - rho) / (1 + rho), P(wait) = p0 (2 rho)^2 / (2 (1 - rho))
  // = 2 rho^2 / (1 + rho). rho = 0.5 (lambda = mu = 1): P(wait) = 0.5 / 1.5 = 1/3, Wq = (1/3) / (2 - 1) = 1/3.
  MmcMetrics m2 = *mmc_metrics(1, 1, 2);
  CHECK(m2.p_wait == Approx(1.0 / 3).epsilon(1e-12));
  CHECK(m2.mean_wait_s == Approx(1.0 / 3).epsilon(1e-12));
  // c mu - lambda = mu here (1 = 1): the tail's (1 - e^{-(theta - mu) t}) / (theta - mu) takes its limit t. By
  // hand: P(T > t) = (2/3) e^{-t} + (1/3) (1 + t) e^{-t}; at t = 2: (2/3 + 1) e^{-2} = 1.666667 x 0.135335 = 0.225559.
  CHECK(mmc_response_tail(1, 1, 2, 1.0 / 3, 2.0) == Approx(0.225559).epsilon(1e-5));
  CHECK(mmc_response_tail(1 - 1e-10, 1, 2, 1.0 / 3, 2.0) == Approx(0.225559).epsilon(1e-5));  // continuous there
  // M/M/3 with a = 2 (lambda = 1/10, mu = 1/20 per minute): sum_{k<3} a^k/k! = 1 + 2 + 2 = 5, a^3/3! * 3/(3-2) = 4,
  // P(wait) = 4 / 9, Lq = C rho / (1 - rho) = (4/9)(2/3)/(1/3) = 0.8889, W = Lq / lambda + 1/mu = 8.889 + 20 = 28.889.
  MmcMetrics m3 = *mmc_metrics(0.1, 0.05, 3);
  CHECK(m3.p_wait == Approx(4.0 / 9).epsilon(1e-12));
  CHECK(m3.mean_wait_s * 0.1 == Approx(0.888889).epsilon(1e-6));
  CHECK(m3.mean_response_s == Approx(28.888889).epsilon(1e-6));
}

TEST_CASE("Erlang B recursion stays finite and exact for thousands of servers", "[capacity]") {
  // Factorials overflow doubles past 170 servers; the recursion does not. Erlang B at a = c = 1: 1/2; at c = 2,
  // a = 1: (1/2) / (1 + 1/2 + 1/2) ... by the definition a^c/c! / sum_{k<=c} a^k/k! = 0.5 / 2.5 = 0.2.
  CHECK(erlang_b(1, 1) == Approx(0.5));
  CHECK(erlang_b(2, 1) == Approx(0.2));
  const double c = *erlang_c(3000, 2900);
  CHECK(std::isfinite(c));
  CHECK(c > 0);
  CHECK(c < 1);
  // More servers at the same load never wait more.
  CHECK(*erlang_c(3001, 2900) < c);
  CHECK_FALSE(erlang_c(8, 8).ok());
  CHECK_FALSE(erlang_c(0, 0.5).ok());
  CHECK_THAT(std::string(mmc_metrics(200, 25, 8).status().message()), Contains("expected < 1"));
}

// ---------------------------------------------------------------------------------------------------------------
// The field report's approximation

TEST_CASE("The report's approximation matches its formula worked by hand, and differs from Erlang C", "[capacity]") {
  // Wq = rho^(sqrt(2(c+1)) - 1) / (c mu (1 - rho)) * (1 + (1 - rho)(c - 1) sqrt(c / (c + 1))), the report's example
  // c = 8, mu = 25/s:
  //   lambda = 150: rho = 0.75; sqrt(18) - 1 = 3.242641; 0.75^3.242641 = e^(3.242641 x -0.287682) = e^-0.932853
  //     = 0.393431; c mu (1 - rho) = 200 x 0.25 = 50; first factor 0.393431 / 50 = 0.00786862 s;
  //     second factor 1 + 0.25 x 7 x sqrt(8/9) = 1 + 1.75 x 0.942809 = 2.649916; Wq = 0.0208512 s = 20.85 ms.
  //   lambda = 180: rho = 0.9; 0.9^3.242641 = e^(3.242641 x -0.105361) = e^-0.341647 = 0.710601;
  //     c mu (1 - rho) = 20; first factor 0.0355300 s; second 1 + 0.1 x 7 x 0.942809 = 1.659966; Wq = 0.0589786 s.
  CHECK(*report_approximate_wait(150, 25, 8) == Approx(0.0208512).epsilon(2e-5));
  CHECK(*report_approximate_wait(180, 25, 8) == Approx(0.0589786).epsilon(2e-5));
  // The report prints about 35 ms and 120 ms for these; exact Erlang C gives 7.14 ms and 35.08 ms:
  //   a = 6, c = 8: C = 0.356981 (the table's row for 8 servers), Wq = C / (200 - 150) = 7.14 ms;
  //   a = 7.2: C = 0.701533, Wq = C / 20 = 35.08 ms.
  CHECK(mmc_metrics(150, 25, 8)->mean_wait_s == Approx(0.00713962).epsilon(1e-5));
  CHECK(mmc_metrics(180, 25, 8)->mean_wait_s == Approx(0.0350766).epsilon(1e-5));
  // At c = 1 the formula is exact: rho^(2 - 1) / (mu (1 - rho)) x (1 + 0) = M/M/1's Wq.
  CHECK(*report_approximate_wait(20, 25, 1) == Approx(0.16).epsilon(1e-12));
  CHECK_FALSE(report_approximate_wait(200, 25, 8).ok());
}

// ---------------------------------------------------------------------------------------------------------------
// The simulation

// Tolerances: the simulator's estimate has no bias against the closed forms; its spread over 20 seeds at these
// sizes (200'000 measured requests after 20'000 warm-up) was 1.9% (Wq) and 1.3% (P99) of the exact value for the
// M/M/3 case and 1.6% (Wq) for M/D/1 (one standard deviation, 2026-12 on this code). The checks allow 4 of them.
TEST_CASE("The simulation with max batch 1 and exponential service reproduces exact Erlang C", "[capacity]") {
  const ServiceCurve curve = curve_of({1000.0});  // mu = 1/s
  SimulationOptions o;
  o.replicas = 3;
  o.max_batch = 1;
  o.jitter_cv = 1;  // gamma with cv 1 is exponential
  const SimulationResult r = *simulate_batching(curve, 2.0, o);
  const MmcMetrics exact = *mmc_metrics(2.0, 1.0, 3);  // a = 2: C = 4/9, Wq = 0.4444 s
  CHECK(r.stable);
  CHECK(r.requests == o.requests);
  CHECK(r.mean_wait_s == Approx(exact.mean_wait_s).epsilon(0.08));
  CHECK(r.p_wait == Approx(exact.p_wait).epsilon(0.04));
  CHECK(r.p99_s == Approx(exact.p99_response_s).epsilon(0.06));
  CHECK(r.utilisation == Approx(2.0 / 3).epsilon(0.03));
  CHECK(r.mean_batch == 1.0);
}

TEST_CASE("The simulation with deterministic service matches M/D/1 (Pollaczek-Khinchine)", "[capacity]") {
  // M/D/1: Wq = rho S / (2 (1 - rho)); S = 10 ms, lambda = 80/s: rho = 0.8, Wq = 0.8 x 0.01 / 0.4 = 20 ms.
  const ServiceCurve curve = curve_of({10.0});
  SimulationOptions o;
  o.max_batch = 1;
  const SimulationResult r = *simulate_batching(curve, 80.0, o);
  CHECK(r.mean_wait_s == Approx(0.020).epsilon(0.07));
  CHECK(r.p50_s >= 0.010);  // never faster than the service time
}

TEST_CASE("Batching keeps a replica stable at a load that batch 1 cannot carry", "[capacity]") {
  // Batch 1 takes 10 ms (100/s); a batch of 8 takes 20 ms (400/s). At 200/s unbatched is overloaded.
  const ServiceCurve curve = curve_of({10, 11.5, 13, 14.5, 16, 17, 18.5, 20});
  SimulationOptions o;
  o.requests = 50'000;
  o.warmup_requests = 5'000;
  o.max_batch = 1;
  const SimulationResult unbatched = *simulate_batching(curve, 200.0, o);
  CHECK_FALSE(unbatched.stable);
  o.max_batch = 8;
  const SimulationResult batched = *simulate_batching(curve, 200.0, o);
  CHECK(batched.stable);
  CHECK(batched.mean_batch > 1.5);
  CHECK(batched.utilisation < 1.0);
  CHECK(batched.p99_s < 0.2);  // bounded: a few batch times, not a growing queue
  // And a light load runs mostly alone: a request that finds the replica idle starts at once, in a batch of 1.
  const SimulationResult light = *simulate_batching(curve, 5.0, o);
  CHECK(light.mean_batch < 1.1);
  CHECK(light.p50_s == Approx(0.010).epsilon(1e-9));
}

TEST_CASE("The simulation is reproducible from its seed", "[capacity]") {
  const ServiceCurve curve = curve_of({2, 3, 4, 5}, 0.2);
  SimulationOptions o;
  o.requests = 20'000;
  o.replicas = 2;
  const SimulationResult a = *simulate_batching(curve, 900, o);
  const SimulationResult b = *simulate_batching(curve, 900, o);
  CHECK(a.p99_s == b.p99_s);
  o.seed = 2;
  CHECK(simulate_batching(curve, 900, o)->p99_s != a.p99_s);
}

// ---------------------------------------------------------------------------------------------------------------
// The planner

TEST_CASE("The planner's fleet sizes are the smallest that meet the SLO by each model", "[capacity]") {
  // 4 ms alone, 16 ms for 8: a replica does 250/s unbatched, 500/s batched.
  const ServiceCurve curve = curve_of({4, 6, 8, 9.5, 11, 12.5, 14, 16}, 0.05);
  PlanOptions opts = plan_options(1500, 0.030);
  opts.simulation.requests = 50'000;
  opts.simulation.warmup_requests = 5'000;
  const CapacityPlan plan = *plan_capacity(curve, opts);
  CHECK(plan.service_rate == Approx(250));
  CHECK(plan.replica_capacity == Approx(500));
  REQUIRE(plan.mmc_replicas > 0);
  CHECK(mmc_metrics(1500, 250, plan.mmc_replicas)->p99_response_s <= 0.030);
  CHECK(mmc_metrics(1500, 250, plan.mmc_replicas - 1).status().ok() == (plan.mmc_replicas - 1 > 6));
  if (plan.mmc_replicas - 1 > 6) CHECK(mmc_metrics(1500, 250, plan.mmc_replicas - 1)->p99_response_s > 0.030);
  REQUIRE(plan.simulated_replicas > 0);
  REQUIRE(plan.unbatched_replicas > 0);
  CHECK(plan.simulated_replicas <= plan.unbatched_replicas);  // batching never needs more replicas
  CHECK(plan.simulated_replicas >= 4);                        // 1500/s needs > 3 replicas of 500/s
  // Every row agrees with a direct evaluation.
  bool saw_simulated_answer = false;
  for (const PlanRow& row : plan.rows) {
    if (row.replicas == plan.simulated_replicas) {
      saw_simulated_answer = true;
      CHECK(row.simulated.p99_s <= 0.030);
    }
    if (row.replicas == plan.simulated_replicas - 1) CHECK(row.simulated.p99_s > 0.030);
    if (row.mmc_ok) CHECK(row.mmc.p_wait == Approx(*erlang_c(row.replicas, 1500.0 / 250)));
  }
  CHECK(saw_simulated_answer);
  // The M/M/c check run: the simulator as M/M/c at the M/M/c answer agrees with Erlang C (50'000 requests: the
  // spread is about twice that of 200'000, so 8 standard deviations of the one above make 16%).
  const MmcMetrics exact = *mmc_metrics(1500, 250, plan.check_replicas);
  CHECK(plan.check_simulated.mean_wait_s == Approx(exact.mean_wait_s).epsilon(0.16));
}

TEST_CASE("The planner refuses bad rates and SLOs, and an SLO below the service time, with clear errors",
          "[capacity]") {
  const ServiceCurve curve = curve_of({5, 6, 7});
  auto message = [&](double rate, double slo) {
    auto p = plan_capacity(curve, plan_options(rate, slo));
    REQUIRE_FALSE(p.ok());
    return std::string(p.status().message());
  };
  CHECK_THAT(message(0, 0.05), Contains("rate is 0; expected > 0"));
  CHECK_THAT(message(-3, 0.05), Contains("rate is -3; expected > 0"));
  CHECK_THAT(message(NAN, 0.05), Contains("rate is nan; expected > 0"));
  CHECK_THAT(message(100, 0), Contains("P99 SLO is 0 ms; expected > 0 ms"));
  CHECK_THAT(message(100, -0.01), Contains("P99 SLO is -10 ms; expected > 0 ms"));
  const auto impossible = plan_capacity(curve, plan_options(100, 0.002));
  CHECK(absl::IsOutOfRange(impossible.status()));
  CHECK_THAT(std::string(impossible.status().message()),
             Contains("the P99 SLO (2.000 ms) is below the batch-1 service time (5.000 ms)"));
  // Above the service time but below M/M/c's floor ln(100)/mu = 23 ms: M/M/c says no, with the reason.
  PlanOptions opts = plan_options(100, 0.010);
  opts.simulation.requests = 20'000;
  const CapacityPlan plan = *plan_capacity(curve, opts);
  CHECK(plan.mmc_replicas == 0);
  REQUIRE_FALSE(plan.notes.empty());
  CHECK_THAT(plan.notes[0], Contains("ln(100)/mu = 23.026 ms"));
  CHECK(plan.simulated_replicas > 0);  // deterministic 5 ms service meets 10 ms with enough replicas
  // A rate past what the replica limit can carry: no answer from any model, and a note that says why.
  PlanOptions huge = plan_options(1e6, 0.050);
  huge.max_replicas = 16;
  huge.simulation.requests = 5'000;
  const CapacityPlan none = *plan_capacity(curve, huge);
  CHECK(none.mmc_replicas == 0);
  CHECK(none.simulated_replicas == 0);
  REQUIRE_FALSE(none.notes.empty());
  CHECK_THAT(none.notes[0], Contains("1e+06 req/s is more than 16 replicas carry"));
}

// ---------------------------------------------------------------------------------------------------------------
// The curve file

TEST_CASE("The curve file round-trips and its errors name the field", "[capacity]") {
  const std::string good =
      R"({"model":"m","seq":16,"threads":2,"jitter_cv":0.1,"batch_ms":{"1":2.0,"2":2.5,"3":3.0},"extra":[1]})";
  const ServiceCurve c = *ServiceCurve::from_json(good, "curve.json");
  CHECK(c.batch_ms == std::vector<double>{2.0, 2.5, 3.0});
  CHECK(c.seq == 16);
  CHECK(c.threads == 2);
  CHECK(c.jitter_cv == 0.1);
  CHECK(c.replica_capacity() == Approx(1000.0));
  CHECK(c.replica_capacity(2) == Approx(800.0));
  const ServiceCurve again = *ServiceCurve::from_json(c.to_json(), "round trip");
  CHECK(again.batch_ms == c.batch_ms);
  CHECK(again.model == "m");

  auto error = [](const std::string& text) {
    auto r = ServiceCurve::from_json(text, "curve.json");
    REQUIRE_FALSE(r.ok());
    CHECK(absl::IsInvalidArgument(r.status()));
    return std::string(r.status().message());
  };
  CHECK_THAT(error("{"), Contains("curve.json: is not valid JSON"));
  // A depth bomb (100,000 nested arrays, as `brisk plan --bench` read one) is refused, naming the limit.
  CHECK_THAT(error("{\"batch_ms\":{\"1\":" + std::string(100000, '[') + std::string(100000, ']') + "}}"),
             Contains("curve.json: arrays and objects are nested more than 64 levels deep"));
  CHECK_THAT(error("[1,2]"), Contains("is not a JSON object"));
  CHECK_THAT(error(R"({"seq":16})"), Contains("\"batch_ms\" is missing"));
  CHECK_THAT(error(R"({"batch_ms":[1,2]})"), Contains("\"batch_ms\" is array; expected an object"));
  CHECK_THAT(error(R"({"batch_ms":{}})"), Contains("batch_ms is empty"));
  CHECK_THAT(error(R"({"batch_ms":{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":-1}})"),
             Contains("batch_ms[\"8\"] is -1; expected > 0"));
  CHECK_THAT(error(R"({"batch_ms":{"1":1,"3":2}})"), Contains("batch size 3 but only 2 entries"));
  CHECK_THAT(error(R"({"batch_ms":{"1":1,"two":2}})"), Contains("key \"two\" is not a batch size"));
  CHECK_THAT(error(R"({"batch_ms":{"0":1}})"), Contains("key \"0\" is not a batch size"));
  CHECK_THAT(error(R"({"batch_ms":{"1":"fast"}})"), Contains("batch_ms[\"1\"] is \"fast\"; expected a number"));
  CHECK_THAT(
      error(R"({"batch_ms":{"1":3,"2":2}})"),
      Contains("batch_ms[\"2\"] is 2 ms, below batch_ms[\"1\"] = 3 ms; expected a curve that does not decrease"));
  CHECK_THAT(error(R"({"batch_ms":{"1":1},"jitter_cv":-0.5})"), Contains("jitter_cv is -0.5; expected"));
  CHECK_THAT(error(R"({"batch_ms":{"1":1},"seq":"long"})"), Contains("\"seq\" is \"long\"; expected a whole number"));
  CHECK_THAT(error(R"({"batch_ms":{"1":1},"model":3})"), Contains("\"model\" is number; expected a string"));
}

TEST_CASE("The non-decreasing fit pools violators into their mean and keeps a monotone curve", "[capacity]") {
  // Pool adjacent violators by hand: {1, 3, 2, 4}: 3 > 2 pool to 2.5 -> {1, 2.5, 2.5, 4}.
  CHECK(non_decreasing_fit({1, 3, 2, 4}) == std::vector<double>{1, 2.5, 2.5, 4});
  // {5, 1, 1, 6}: 5 > 1 -> 3 (two), 3 > 1 -> (5 + 1 + 1) / 3 = 7/3 (three), then 6.
  const std::vector<double> fit = non_decreasing_fit({5, 1, 1, 6});
  REQUIRE(fit.size() == 4);
  CHECK(fit[0] == Approx(7.0 / 3));
  CHECK(fit[2] == Approx(7.0 / 3));
  CHECK(fit[3] == 6);
  CHECK(non_decreasing_fit({}).empty());
  CHECK(non_decreasing_fit({1, 2, 3}) == std::vector<double>{1, 2, 3});
}

TEST_CASE("Greedy batching on a curve where batches cost more than singles is reported unstable", "[capacity]") {
  // A batch of b costs b^2 ms: alone 1 ms (1000/s, the best per-request rate, so replica_capacity is 1000/s). At
  // 300/s a replica that never batched carries it (M/D/1 at rho 0.3), but once k requests queue, a batch of k takes
  // k^2 ms while 0.3 k^2 more arrive: past k = 4 the batches grow to 32 (1.024 s for 32: 31/s) and the queue grows
  // without bound. Only the growth check can tell, since the rate is below replica_capacity.
  std::vector<double> ms;
  for (int b = 1; b <= 32; ++b) ms.push_back(static_cast<double>(b * b));
  SimulationOptions o;
  o.requests = 50'000;
  o.warmup_requests = 5'000;
  const SimulationResult r = *simulate_batching(curve_of(ms), 300, o);
  CHECK(r.mean_batch > 5);
  CHECK_FALSE(r.stable);
  o.max_batch = 1;
  const SimulationResult alone = *simulate_batching(curve_of(ms), 300, o);
  CHECK(alone.stable);
  CHECK(alone.mean_batch == 1.0);
}
