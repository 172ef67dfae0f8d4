// The load generator's experiments: (a) saturated throughput, (b) open-loop latency and goodput for three
// batching setups plus the throughput at the SLO, (c) priority isolation, (d) padding with and without length
// bucketing, and (e, capacity_check.cc) brisk plan's simulation against the open loop. Each prints markdown tables.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <limits>
#include <thread>

#include "load/load.h"

namespace brisk::load {

namespace {

using std::chrono::milliseconds;

struct Env {
  const Options& opt;
  const Model& model;
  Source questions;
  Source mixed;
  Report report;
  double S = 0, S32 = 0, S1 = 0;  // saturated throughput: adaptive setup's max batch 64, fixed 32, no batching
  double slo_s() const { return std::chrono::duration<double>(opt.slo).count(); }
};

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  in >> a >> b >> c;
  return fmt::format("{:.2f} {:.2f} {:.2f}", a, b, c);
}

std::string now_string() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::localtime(&t));
  return buf;
}

batch::BatchPolicy base_policy() {
  batch::BatchPolicy p;
  p.executor_threads = 1;  // one batch at a time; the batch itself runs on Options.threads encoder threads
  p.levels = {batch::PriorityLevel{.name = "default"}};
  return p;
}

batch::BatchPolicy no_batching_policy() {
  batch::BatchPolicy p = base_policy();
  p.max_batch_size = 1;
  p.max_queue_delay = Duration::zero();
  p.length_bucketing = false;
  return p;  // max_queue_size: the default 4096
}

batch::BatchPolicy fixed_policy() {  // Triton's dynamic batcher: a max batch and a queue-delay timeout, FIFO
  batch::BatchPolicy p = base_policy();
  p.max_batch_size = 32;
  p.max_queue_delay = milliseconds(5);
  p.length_bucketing = false;
  return p;
}

// brisk's setup: SLO-adaptive sizing with a target at half the SLO (the controller reacts a window late, and
// the queue wait of a request admitted at the limit must still fit), batches in multiples of 8, length buckets,
// a 2 ms delay, and a queue that holds what drains in half the SLO, so excess load is rejected at submit.
batch::BatchPolicy adaptive_policy(double S, Duration slo) {
  batch::BatchPolicy p = base_policy();
  p.max_batch_size = 64;
  p.preferred_batch_multiple = 8;
  p.length_bucketing = true;
  p.max_queue_delay = milliseconds(2);
  p.adaptive.enabled = true;
  p.adaptive.p99_target = slo / 2;
  p.max_queue_size = std::max<size_t>(64, static_cast<size_t>(S * std::chrono::duration<double>(slo).count() / 2));
  return p;
}

struct Setup {
  std::string name;
  batch::BatchPolicy policy;
};

std::vector<Setup> open_loop_setups(const Env& env) {
  return {{"no batching (B=1)", no_batching_policy()},
          {"fixed B<=32, 5 ms", fixed_policy()},
          {"brisk adaptive B<=64", adaptive_policy(env.S, env.opt.slo)}};
}

bool meets_slo(const Summary& s, double slo_ms) {
  return s.completed > 0 && s.p99_ms <= slo_ms && s.good >= 0.99 * s.offered;
}

std::string yes_no(bool met) { return met ? "**met**" : "**not met**"; }

// ---- a: saturated throughput ----------------------------------------------------------------------------

void experiment_a(Env& env, bool print) {
  struct Row {
    std::string name;
    batch::BatchPolicy policy;
    size_t window;
    double* out;
  };
  batch::BatchPolicy p64 = base_policy();
  p64.max_batch_size = 64;
  p64.max_queue_delay = milliseconds(2);
  std::vector<Row> rows = {{"max batch 64 (adaptive setup's max)", p64, 192, &env.S},
                           {"max batch 32 (fixed setup)", fixed_policy(), 96, &env.S32},
                           {"no batching (B=1)", no_batching_policy(), 4, &env.S1}};
  std::string table =
      "| setup | window | seq/s | mean batch | tokens/request | closed-loop P50 ms |\n|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& r = rows[i];
    ClosedResult c = run_closed_loop(env.questions, r.policy, Backend::kPacked, r.window, i == 0 ? 1.5 : 0.5,
                                     env.opt.duration_s, mix_seed(env.opt.seed, 'a', i));
    *r.out = c.throughput;
    table += fmt::format("| {} | {} | {:.0f} | {:.1f} | {:.1f} | {:.1f} |\n", r.name, r.window, c.throughput,
                         c.mean_batch, c.mean_tokens, c.p50_ms);
  }
  if (!print) return;
  env.report.write(fmt::format(
      "### a. Saturated throughput (closed loop, FAQ questions)\n\n"
      "Closed loop: `window` requests always outstanding, so the queue never runs dry; {:.1f} s measured after a "
      "warm-up. S = {:.0f} seq/s (max batch 64), S1 = {:.0f} seq/s (no batching): batching gives {:.2f}x here.\n\n{}\n",
      env.opt.duration_s, env.S, env.S1, env.S / env.S1, table));
}

// ---- b: open loop at fractions of S ---------------------------------------------------------------------

std::string cell_row(const std::string& setup, const std::string& load, const CellResult& c) {
  const Summary& s = c.all;
  return fmt::format(
      "| {} | {} | {:.0f} | {:.0f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {} | {:.2f} |\n", setup,
      load, s.offered_rate, s.goodput(), s.p50_ms, s.p95_ms, s.p99_ms, s.pct(s.rejected), s.pct(s.expired),
      c.mean_batch(), s.rejected ? fmt::format("{:.1f}", s.rejected_submit_p50_us) : std::string("–"),
      s.generator_late_p99_ms);
}

constexpr const char* kCellHeader =
    "| setup | load | offered/s | goodput/s | P50 ms | P95 ms | P99 ms | rejected % | expired % | mean batch | "
    "rejected submit P50 µs | generator late P99 ms |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";

struct Point {
  double rate;
  bool pass;
  double p99_ms, goodput;
};

void experiment_b(Env& env) {
  const double slo_ms = to_ms(env.opt.slo);
  const std::vector<double> loads = {0.5, 0.8, 0.95, 1.2};
  std::vector<Setup> setups = open_loop_setups(env);
  std::vector<std::vector<CellResult>> cells(setups.size());
  std::vector<std::vector<Point>> points(setups.size());
  // Load-major order, so that the setups compared at one load run minutes apart at most on a shared machine.
  for (size_t li = 0; li < loads.size(); ++li) {
    for (size_t si = 0; si < setups.size(); ++si) {
      const double rate = loads[li] * env.S;
      CellResult c = run_open_loop(env.questions, setups[si].policy, Backend::kPacked, {Stream{rate, 0, env.opt.slo}},
                                   env.opt.duration_s, mix_seed(env.opt.seed, 'b', si, li), {env.opt.slo});
      points[si].push_back({rate, meets_slo(c.all, slo_ms), c.all.p99_ms, c.all.goodput()});
      cells[si].push_back(std::move(c));
    }
  }
  std::string table = kCellHeader;
  for (size_t si = 0; si < setups.size(); ++si) {
    for (size_t li = 0; li < loads.size(); ++li) {
      table += cell_row(setups[si].name, fmt::format("{:.0f}% of S", loads[li] * 100), cells[si][li]);
    }
  }
  const batch::BatchPolicy& ap = setups[2].policy;
  env.report.write(fmt::format(
      "### b. Open loop, Poisson arrivals at fractions of S = {:.0f} seq/s (FAQ questions)\n\n"
      "SLO {:.0f} ms, given to every request as its deadline (scheduled arrival + SLO; late requests expire in the "
      "queue instead of running late). Latencies count from the scheduled arrival, over completed requests. "
      "goodput = completed within the SLO per second; generator late = how far behind its schedule the generator "
      "submitted (open-loop fidelity). {:.1f} s per cell, cells run load by load. Adaptive setup: p99_target "
      "{:.0f} ms, max_queue_delay 2 ms, preferred multiple 8, length bucketing, max_queue_size {} (S x SLO / 2: a "
      "request at the tail waits about SLO / 2 for the queue plus two batches of at most the controller's compute "
      "budget, p99_target / 2).\n\n{}\n",
      env.S, slo_ms, env.opt.duration_s, to_ms(ap.adaptive.p99_target), ap.max_queue_size, table));

  // Throughput at the SLO: the highest rate with P99 <= SLO and goodput >= 99% of offered, by bisection between
  // the highest passing and the lowest failing rate seen so far; one test per setup per round.
  auto bounds = [&](size_t si, double& lo, double& hi) {
    lo = 0;
    hi = std::numeric_limits<double>::infinity();
    for (const Point& p : points[si])
      if (p.pass) lo = std::max(lo, p.rate);
    for (const Point& p : points[si])
      if (!p.pass && p.rate > lo) hi = std::min(hi, p.rate);
  };
  std::vector<int> tests(setups.size(), 0), bisections(setups.size(), 0);
  for (bool any = true; any;) {
    any = false;
    for (size_t si = 0; si < setups.size(); ++si) {
      double lo, hi, rate;
      bounds(si, lo, hi);
      if (tests[si] >= 6 + env.opt.search_steps) continue;
      if (lo == 0) {
        rate = (std::isinf(hi) ? env.S : hi) / 2;
      } else if (std::isinf(hi)) {
        rate = lo * 1.5;
      } else if (bisections[si] < env.opt.search_steps) {
        rate = (lo + hi) / 2;
        ++bisections[si];
      } else {
        continue;
      }
      CellResult c = run_open_loop(env.questions, setups[si].policy, Backend::kPacked, {Stream{rate, 0, env.opt.slo}},
                                   env.opt.duration_s, mix_seed(env.opt.seed, 's', si, tests[si]++), {env.opt.slo});
      points[si].push_back({rate, meets_slo(c.all, slo_ms), c.all.p99_ms, c.all.goodput()});
      any = true;
    }
  }
  std::string search =
      "| setup | throughput at SLO, seq/s | P99 there, ms | rates tried (seq/s: pass/fail) |\n"
      "|---|---|---|---|\n";
  std::vector<double> at_slo(setups.size());
  for (size_t si = 0; si < setups.size(); ++si) {
    double lo, hi;
    bounds(si, lo, hi);
    at_slo[si] = lo;
    std::vector<Point> pts = points[si];
    std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.rate < b.rate; });
    std::string tried, p99_there = "–";
    for (const Point& p : pts) {
      tried += fmt::format("{}{:.0f}: {}", tried.empty() ? "" : ", ", p.rate, p.pass ? "pass" : "fail");
      if (p.rate == lo) p99_there = fmt::format("{:.1f}", p.p99_ms);
    }
    search += fmt::format("| {} | {:.0f} | {} | {} |\n", setups[si].name, lo, p99_there, tried);
  }
  // Targets, for the adaptive setup.
  const Summary& nb80 = cells[0][1].all;
  std::string targets = "Targets (no batching at 80%: P99 " + fmt::format("{:.1f}", nb80.p99_ms) +
                        " ms; throughput at the SLO " + fmt::format("{:.0f}", at_slo[0]) + " seq/s):\n\n";
  for (size_t si : {size_t{2}}) {
    const Summary& ad80 = cells[si][1].all;
    const Summary& ad120 = cells[si][3].all;
    const bool t1 = ad80.p99_ms <= 0.5 * nb80.p99_ms;
    const bool t2 = ad120.p99_ms <= slo_ms && ad120.rejected > 0 && ad120.rejected_submit_p50_us < 50 &&
                    ad120.expired <= 0.01 * ad120.offered;
    const double ratio = at_slo[0] > 0 ? at_slo[si] / at_slo[0] : 0;
    targets += fmt::format(
        "- {}:\n"
        "  - 80% load, P99 <= 0.5x no-batching P99: {:.1f} ms ({:.2f}x): {}\n"
        "  - 120% load, accepted requests' P99 within the SLO and the excess rejected fast: P99 {:.1f} ms, "
        "rejected {:.1f}% with a median submit() of {:.1f} µs (P99 {:.1f} µs), expired {:.1f}% (met when P99 <= SLO, "
        "rejections return in < 50 µs median and <= 1% expire): {}\n"
        "  - throughput at the SLO >= 3x no batching: {:.0f} seq/s ({:.2f}x): {}\n",
        setups[si].name, ad80.p99_ms, nb80.p99_ms > 0 ? ad80.p99_ms / nb80.p99_ms : 0, yes_no(t1), ad120.p99_ms,
        ad120.pct(ad120.rejected), ad120.rejected_submit_p50_us, ad120.rejected_submit_p99_us, ad120.pct(ad120.expired),
        yes_no(t2), at_slo[si], ratio, yes_no(ratio >= 3));
  }
  targets += fmt::format("- for reference, fixed B<=32, 5 ms: throughput at the SLO {:.0f} seq/s ({:.2f}x)\n\n",
                         at_slo[1], at_slo[0] > 0 ? at_slo[1] / at_slo[0] : 0);
  env.report.write(
      fmt::format("Throughput at the SLO (highest offered rate with P99 <= {:.0f} ms and goodput >= 99% of offered; "
                  "bisection, {} steps after the grid above):\n\n{}\n{}",
                  slo_ms, env.opt.search_steps, search, targets));
}

// ---- c: priority isolation ------------------------------------------------------------------------------

void experiment_c(Env& env) {
  const Duration high_target = milliseconds(200), low_deadline = milliseconds(1000);
  struct Variant {
    std::string name;
    Duration aging;
    size_t low_cap;  // 0: only the total limit
  };
  const size_t total_cap = static_cast<size_t>(env.S * 1.0);                       // what drains in the low deadline
  const size_t low_cap = std::max<size_t>(16, static_cast<size_t>(env.S * 0.05));  // 50 ms of work
  const std::vector<Variant> variants = {{"strict priority", Duration::zero(), 0},
                                         {"aging, no low-level cap", milliseconds(100), 0},
                                         {"aging + low-level cap (chosen)", milliseconds(100), low_cap}};
  std::string table =
      "| variant | aging | low queue cap | high P50 ms | high P99 ms | high good % | high rejected % | high expired % "
      "| "
      "low completed/s | low P99 ms | low rejected % | low expired % | low rejected submit P50 µs | mean batch |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::vector<CellResult> results;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    const Variant& v = variants[vi];
    batch::BatchPolicy p = adaptive_policy(env.S, env.opt.slo);
    p.max_queue_size = total_cap;
    p.aging_interval = v.aging;
    p.levels = {batch::PriorityLevel{.name = "realtime", .default_timeout = high_target},
                batch::PriorityLevel{.name = "bulk", .max_queue_size = v.low_cap, .default_timeout = low_deadline}};
    CellResult c =
        run_open_loop(env.questions, p, Backend::kPacked, {Stream{0.2 * env.S, 0, {}}, Stream{2.0 * env.S, 1, {}}},
                      env.opt.duration_s, mix_seed(env.opt.seed, 'c', vi), {high_target, low_deadline});
    const Summary& h = c.streams[0];
    const Summary& l = c.streams[1];
    table += fmt::format(
        "| {} | {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.0f} | {:.1f} | {:.1f} | {:.1f} | "
        "{} | {:.1f} |\n",
        v.name, v.aging.count() ? fmt::format("{:.0f} ms", to_ms(v.aging)) : "off",
        v.low_cap ? std::to_string(v.low_cap) : "–", h.p50_ms, h.p99_ms, h.offered ? 100.0 * h.good / h.offered : 0,
        h.pct(h.rejected), h.pct(h.expired), l.completed_rate(), l.p99_ms, l.pct(l.rejected), l.pct(l.expired),
        l.rejected ? fmt::format("{:.1f}", l.rejected_submit_p50_us) : "–", c.mean_batch());
    results.push_back(std::move(c));
  }
  const Summary& chosen = results.back().streams[0];
  env.report.write(fmt::format(
      "### c. Priority isolation\n\n"
      "High priority (level 0, deadline {:.0f} ms = its target) at 0.2 x S = {:.0f}/s plus low priority (level 1, "
      "deadline {:.0f} ms) at 2 x S = {:.0f}/s, FAQ questions, the adaptive setup of (b) otherwise, total "
      "max_queue_size {} (S x 1 s); {:.1f} s per cell. With aging, a low request that waited aging_interval competes "
      "as level 0, and older: it goes before newer high requests. That bounds low-priority starvation, but under a "
      "sustained low overload the aged backlog sits in front of every new high request; a per-level cap on the low "
      "queue (S x 50 ms = {}) bounds that backlog, so high requests wait at most about 50 ms of low work.\n\n{}\n"
      "Target: high-priority P99 <= 200 ms with aging + cap: {:.1f} ms: {}\n\n",
      to_ms(high_target), 0.2 * env.S, to_ms(low_deadline), 2.0 * env.S, total_cap, env.opt.duration_s, low_cap, table,
      chosen.p99_ms, yes_no(chosen.p99_ms <= 200 && chosen.completed > 0)));
}

// ---- d: padding -----------------------------------------------------------------------------------------

void experiment_d(Env& env) {
  const Duration deadline = milliseconds(500);
  auto policy = [](bool bucketing, size_t budget) {
    batch::BatchPolicy p = base_policy();
    p.max_batch_size = 32;
    p.max_queue_delay = milliseconds(5);
    p.max_batch_tokens = budget;  // padded: batch size x longest request
    p.length_bucketing = bucketing;
    return p;
  };
  const char* names[2] = {"FIFO", "length buckets"};
  const std::vector<size_t> budgets = {2048, 512};
  const std::vector<double> loads = {0.8, 1.2};
  std::string closed =
      "| max_batch_tokens | mode | seq/s | mean batch | padded tokens/request | padding waste "
      "|\n|---|---|---|---|---|---|\n";
  std::string open =
      "| max_batch_tokens | mode | load | offered/s | goodput/s | P50 ms | P99 ms | expired % | mean batch | tokens | "
      "padded tokens | padded/request | padding waste |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::string verdicts;
  for (size_t bi = 0; bi < budgets.size(); ++bi) {
    const size_t budget = budgets[bi];
    double sat[2];
    for (int m = 0; m < 2; ++m) {
      ClosedResult c = run_closed_loop(env.mixed, policy(m == 1, budget), Backend::kPadded, 96, 0.5, env.opt.duration_s,
                                       mix_seed(env.opt.seed, 'D', bi, m));
      sat[m] = c.throughput;
      closed += fmt::format("| {} | {} | {:.0f} | {:.1f} | {:.1f} | {:.1f}% |\n", budget, names[m], c.throughput,
                            c.mean_batch, c.batched ? double(c.padded_tokens) / c.batched : 0,
                            c.padded_tokens ? 100.0 * (1 - double(c.tokens) / c.padded_tokens) : 0);
    }
    for (size_t li = 0; li < loads.size(); ++li) {
      CellResult r[2];
      for (int m = 0; m < 2; ++m) {  // the same seed: the same arrivals for both modes
        r[m] = run_open_loop(env.mixed, policy(m == 1, budget), Backend::kPadded,
                             {Stream{loads[li] * sat[0], 0, deadline}}, env.opt.duration_s,
                             mix_seed(env.opt.seed, 'd', bi, li), {deadline});
        const Summary& s = r[m].all;
        const batch::BatcherStats& st = r[m].stats;
        open += fmt::format(
            "| {} | {} | {:.0f}% of FIFO sat. | {:.0f} | {:.0f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {} | {} | "
            "{:.1f} | {:.1f}% |\n",
            budget, names[m], loads[li] * 100, s.offered_rate, s.goodput(), s.p50_ms, s.p99_ms, s.pct(s.expired),
            r[m].mean_batch(), st.tokens, st.padded_tokens, st.completed ? double(st.padded_tokens) / st.completed : 0,
            100 * st.padding_waste());
      }
      auto per_request = [](const CellResult& c) {
        return c.stats.completed ? double(c.stats.padded_tokens) / c.stats.completed : 0;
      };
      const double cut = per_request(r[0]) > 0 ? 1 - per_request(r[1]) / per_request(r[0]) : 0;
      if (li == 0) {  // for reference: bucketing at the same utilisation as FIFO (80% of its own saturation)
        CellResult own =
            run_open_loop(env.mixed, policy(true, budget), Backend::kPadded, {Stream{loads[li] * sat[1], 0, deadline}},
                          env.opt.duration_s, mix_seed(env.opt.seed, 'o', bi), {deadline});
        const Summary& s = own.all;
        const batch::BatcherStats& st = own.stats;
        open += fmt::format(
            "| {} | {} | {:.0f}% of its own sat. | {:.0f} | {:.0f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {} | {} | "
            "{:.1f} | {:.1f}% |\n",
            budget, names[1], loads[li] * 100, s.offered_rate, s.goodput(), s.p50_ms, s.p99_ms, s.pct(s.expired),
            own.mean_batch(), st.tokens, st.padded_tokens, per_request(own), 100 * st.padding_waste());
      }
      const bool met = cut >= 0.4 && r[1].all.goodput() >= 0.99 * r[0].all.goodput();
      verdicts += fmt::format(
          "- max_batch_tokens {}, {:.0f}% of FIFO saturation: padded tokens per completed request {:.1f} → {:.1f} "
          "({:.0f}% fewer; total {} → {}), goodput {:.0f} → {:.0f}/s, P99 {:.1f} → {:.1f} ms: {}\n",
          budget, loads[li] * 100, per_request(r[0]), per_request(r[1]), 100 * cut, r[0].stats.padded_tokens,
          r[1].stats.padded_tokens, r[0].all.goodput(), r[1].all.goodput(), r[0].all.p99_ms, r[1].all.p99_ms,
          yes_no(met));
    }
  }
  env.report.write(fmt::format(
      "### d. Padding: length buckets vs FIFO on a padded backend\n\n"
      "{} (70% 8 tokens, 30% 128 tokens). Padded backend: every sequence of a batch is padded to the batch's "
      "longest before brisk's encoder runs, so padding costs real compute. Policy: max batch 32, max_queue_delay "
      "5 ms, max_batch_tokens (padded) 2048 or 512, no adaptive sizing, deadline {:.0f} ms (long inputs: 16 x 128 "
      "padded tokens take ~120 ms); the same arrivals for both modes; open-loop rates are fractions of FIFO's "
      "closed-loop saturation. {:.1f} s per cell.\n\n"
      "Closed-loop saturation:\n\n{}\nOpen loop:\n\n{}\n"
      "Target: bucketing cuts padded tokens by >= 40% against FIFO, for equal goodput or better:\n\n{}\n",
      env.mixed.name, to_ms(deadline), env.opt.duration_s, closed, open, verdicts));
}

}  // namespace

int run_experiments(const Options& opt) {
  // The model is loaded on a thread that then exits. Packing the weights runs OpenMP regions, which give the
  // loading thread its own libgomp pool; were that thread alive (main), each batcher executor's pool would make
  // more OpenMP threads than cores, libgomp would stop spinning between regions, and every region would pay
  // futex wake-ups: measured 2.5x slower at B=1 (2.8 vs 1.1 ms for an 8-token question).
  StatusOr<std::unique_ptr<Model>> model = absl::UnknownError("not loaded");
  std::thread([&] { model = load_model(opt.model_dir, opt.threads); }).join();
  if (!model.ok()) {
    std::fprintf(stderr, "brisk_load_generator: loading %s: %s\n", opt.model_dir.c_str(),
                 std::string(model.status().message()).c_str());
    return 1;
  }
  auto questions = questions_source(**model, opt.questions);
  if (!questions.ok()) {
    std::fprintf(stderr, "brisk_load_generator: %s\n", std::string(questions.status().message()).c_str());
    return 1;
  }
  Env env{opt, **model, *std::move(questions), mixed_length_source(**model, 1000, 8, 128, 0.7, opt.seed),
          Report(opt.out)};
  if (!env.report.file_ok()) {
    std::fprintf(stderr, "brisk_load_generator: cannot write %s\n", opt.out.c_str());
    return 1;
  }
  auto wants = [&](char e) {
    for (size_t i = 0; i < opt.experiments.size(); ++i) {
      if (opt.experiments[i] == e && (i == 0 || opt.experiments[i - 1] == ',')) return true;
    }
    return false;
  };
  const auto started = SteadyTime::now();
  env.report.write(fmt::format(
      "- date: {}; hardware threads: {}; load average (1/5/15 min) at the start: {}\n"
      "- command: `{}`\n- model: {} ({} encoder threads per batch, executor_threads 1); questions: {} ({} texts, "
      "{:.1f} tokens on average); seed {}\n\n",
      now_string(), std::thread::hardware_concurrency(), load_average(), opt.command_line, opt.model_dir, opt.threads,
      opt.questions, env.questions.items(), env.questions.mean_tokens(), opt.seed));
  if (wants('a') || wants('b') || wants('c')) experiment_a(env, /*print=*/true);
  if (wants('b')) experiment_b(env);
  if (wants('c')) experiment_c(env);
  if (wants('d')) experiment_d(env);
  if (wants('e')) run_capacity_check(opt, env.questions, env.report);
  env.report.write(fmt::format("Run took {:.0f} s; load average at the end: {}\n",
                               std::chrono::duration<double>(SteadyTime::now() - started).count(), load_average()));
  return 0;
}

}  // namespace brisk::load
