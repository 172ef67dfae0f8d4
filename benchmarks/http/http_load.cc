// brisk_http_load: open-loop HTTP load on examples/http_server's POST /embed, and the same schedule through
// Runtime::submit() in this process, interleaved, so that the HTTP service's overhead is a same-run ratio.
//
//   OMP_WAIT_POLICY=passive http_server --port 8080 --threads 2 --no-cache --http-threads 128 &
//   OMP_WAIT_POLICY=passive build/cpu-only/benchmarks/brisk_http_load --port 8080 --threads 2 --rounds 3
//       [--loads 0.5,0.8,1.2] [--slo-ms 100] [--duration-s 8] [--windows 16,32] [--pool 64] [--out FILE]
//
// 1. Capacity: closed loop, --windows workers each sending one request at a time, --capacity-s per round; the
//    capacity C is the best window's median HTTP throughput (--capacity R skips this).
// 2. Open loop at each load L: Poisson arrivals (seeded, the load generator's poisson_schedule) at L*C per second for
//    --duration-s, every request with the deadline --deadline-ms (default --slo-ms; the X-Request-Timeout-Ms header;
//    in-process EmbedRequestOptions::timeout), so that the server's reject_predicted_late refuses what it cannot serve
//    in time (429). Latency is counted from each request's scheduled arrival, not from when it was sent, so the
//    generator's own delays count against the server (no coordinated omission). Each round runs the same schedule and
//    texts in-process and over HTTP, alternating which goes first.
// The in-process Runtime gets the server's settings: --threads, --max-batch-size, --max-queue, no result or token
// cache, reject_predicted_late, normalize off. By default every request's text is a question plus " #<n>", unique,
// so that the runtime's single flight never answers two requests with one forward pass (--no-unique: the bare
// questions). Prints markdown (also to --out); --records-dir keeps one CSV per cell (scheduled, sent, done, status).
//
// Thread safety: single-threaded driver; the drivers (http_load.h) own their worker threads.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "brisk/core/stats.h"
#include "http/http_load.h"

namespace {

using namespace brisk::httpload;

struct Flags {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string mode = "both";  // both | http | in-process
  std::string model_dir = brisk::default_model_dir();
  std::string questions = BRISK_SOURCE_DIR "/examples/faq_assistant/questions.txt";
  int threads = 2;
  size_t max_batch_size = 32, max_queue = 4096;
  int slo_ms = 100;
  int deadline_ms = 0;  // 0: slo_ms
  int rounds = 3;
  double duration_s = 8, capacity_s = 5, capacity = 0;
  std::vector<size_t> windows = {16, 32};
  size_t pool = 64;
  std::vector<double> loads = {0.5, 0.8, 1.2};
  uint64_t seed = 1;
  bool unique = true;
  std::string out, records_dir;
};

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = -1;
  in >> one;
  return one;
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) {
    if (!s.empty()) s.push_back(' ');
    s.append(std::to_string(x));
  }
  return s.empty() ? "-" : s;
}

class Report {
 public:
  explicit Report(const std::string& path) {
    if (!path.empty()) file_.open(path);
  }
  void line(const std::string& s) {
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
    if (file_.is_open()) file_ << s << '\n' << std::flush;
  }

 private:
  std::ofstream file_;
};

struct Cell {
  CellSummary s;
  double load_before = 0, load_after = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"brisk_http_load: open-loop HTTP load on http_server's /embed against in-process Runtime::submit()"};
  app.add_option("--host", f.host, "http_server's address (loopback)")->capture_default_str();
  app.add_option("--port", f.port, "http_server's port (needed unless --mode in-process)");
  app.add_option("--mode", f.mode, "both, http or in-process")
      ->capture_default_str()
      ->check(CLI::IsMember({"both", "http", "in-process"}));
  app.add_option("--model", f.model_dir, "the model the server runs (for the in-process runtime)");
  app.add_option("--questions", f.questions, "one short text a line")->capture_default_str()->check(CLI::ExistingFile);
  app.add_option("--threads", f.threads, "in-process compute threads (as the server's --threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--max-batch-size", f.max_batch_size, "as the server's")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--max-queue", f.max_queue, "as the server's")->capture_default_str()->check(CLI::Range(1, 1 << 24));
  app.add_option("--slo-ms", f.slo_ms,
                 "latency objective of the open-loop cells (accepted requests within it are counted)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600000));
  app.add_option("--deadline-ms", f.deadline_ms,
                 "the deadline sent (X-Request-Timeout-Ms; in-process timeout); default --slo-ms")
      ->check(CLI::Range(1, 3600000));
  app.add_option("--rounds", f.rounds, "interleaved rounds per cell")->capture_default_str()->check(CLI::Range(1, 100));
  app.add_option("--duration-s", f.duration_s, "open-loop schedule length")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("--capacity-s", f.capacity_s, "closed-loop length per round")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("--capacity", f.capacity, "requests/s taken as 100% load (skips the closed loop)")
      ->check(CLI::Range(0.0, 1e7));
  app.add_option("--windows", f.windows, "closed-loop worker counts; the capacity is the best")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--pool", f.pool, "open-loop HTTP workers (one connection each)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--loads", f.loads, "open-loop rates as fractions of the capacity")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(0.001, 100.0));
  app.add_option("--seed", f.seed, "schedule seed")->capture_default_str();
  app.add_flag("--unique,!--no-unique", f.unique, "append \" #<n>\" to every text (no single-flight joins)")
      ->capture_default_str();
  app.add_option("--out", f.out, "also write the markdown here");
  app.add_option("--records-dir", f.records_dir, "write each cell's per-request records here (CSV)");
  CLI11_PARSE(app, argc, argv);
  const bool use_http = f.mode != "in-process", use_in_process = f.mode != "http";
  if (use_http && (f.port < 1 || f.port > 65535)) {
    std::fprintf(stderr, "brisk_http_load: --port is %d; expected http_server's port, 1 to 65535\n", f.port);
    return 2;
  }
  if (!f.records_dir.empty()) std::filesystem::create_directories(f.records_dir);

  std::vector<std::string> questions;
  {
    std::ifstream in(f.questions);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) questions.push_back(line);
    }
  }
  if (questions.empty()) {
    std::fprintf(stderr, "brisk_http_load: %s holds no texts; expected one a line\n", f.questions.c_str());
    return 2;
  }

  std::unique_ptr<brisk::Runtime> runtime;
  if (use_in_process) {
    brisk::RuntimeOptions opts;  // as examples/http_server/main.cc builds it
    opts.model_dir = f.model_dir;
    opts.num_threads = f.threads;
    opts.normalize = false;
    opts.batching.max_batch_size = f.max_batch_size;
    opts.batching.max_queue_size = f.max_queue;
    opts.batching.reject_predicted_late = true;
    opts.batching.fail_late_results = true;  // the server's default (--fail-late)
    opts.cache.result_cache_bytes = 0;
    opts.cache.token_cache_entries = 0;
    auto rt = brisk::Runtime::create(opts);
    if (!rt.ok()) {
      std::fprintf(stderr, "brisk_http_load: Runtime::create: %s\n", std::string(rt.status().message()).c_str());
      return 1;
    }
    runtime = *std::move(rt);
  }
  if (f.deadline_ms == 0) f.deadline_ms = f.slo_ms;
  HttpTarget http{.host = f.host, .port = f.port, .timeout_ms = f.deadline_ms, .pool = f.pool};
  InProcessTarget in_process{.runtime = runtime.get(), .timeout_ms = f.deadline_ms};
  HttpTarget http_closed = http;
  http_closed.timeout_ms = 0;
  InProcessTarget in_process_closed{.runtime = runtime.get(), .timeout_ms = 0};
  std::vector<Target> open_targets, closed_targets;
  if (use_in_process)
    open_targets.push_back({nullptr, &in_process}), closed_targets.push_back({nullptr, &in_process_closed});
  if (use_http) open_targets.push_back({&http, nullptr}), closed_targets.push_back({&http_closed, nullptr});

  size_t serial = 0;  // makes every text unique across the whole run
  const auto texts_for = [&](size_t n, const std::vector<brisk::load::Arrival>* schedule) {
    std::vector<std::string> texts(n);
    for (size_t i = 0; i < n; ++i) {
      const size_t q = schedule ? (*schedule)[i].item : i % questions.size();
      texts[i] = f.unique ? questions[q] + " #" + std::to_string(serial++) : questions[q];
    }
    return texts;
  };

  Report report(f.out);
  report.line(fmt::format(
      "brisk_http_load: mode {}, {} texts from {}, unique {}, threads {}, max_batch_size {}, "
      "slo {} ms, deadline {} ms, rounds {}, windows {}, pool {}, OMP_WAIT_POLICY={}",
      f.mode, questions.size(), f.questions, f.unique, f.threads, f.max_batch_size, f.slo_ms, f.deadline_ms, f.rounds,
      fmt::join(f.windows, ","), f.pool, std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "(unset)"));
  for (const Target& t : closed_targets) run_closed_loop(t, texts_for(4096, nullptr), f.windows[0], 1.0);  // warm-up

  // 1. Capacity, closed loop.
  std::map<std::pair<size_t, std::string>, std::vector<Cell>> closed;
  if (f.capacity <= 0) {
    report.line("\n### closed loop (capacity)\n");
    report.line("| workers | round | mode | req/s | P50 ms | P99 ms | errors | load avg before/after |");
    report.line("|---|---|---|---|---|---|---|---|");
    for (size_t window : f.windows) {
      for (int r = 0; r < f.rounds; ++r) {
        for (size_t k = 0; k < closed_targets.size(); ++k) {
          const Target& t = closed_targets[(k + r) % closed_targets.size()];
          Cell c;
          c.load_before = load_average();
          c.s = summarize(run_closed_loop(t, texts_for(1 << 20, nullptr), window, f.capacity_s), f.slo_ms);
          c.load_after = load_average();
          closed[{window, t.name()}].push_back(c);
          report.line(fmt::format("| {} | {} | {} | {:.0f} | {:.1f} | {:.1f} | {} | {:.1f} / {:.1f} |", window, r,
                                  t.name(), c.s.throughput, c.s.p50_ms, c.s.p99_ms, c.s.errors + c.s.lost,
                                  c.load_before, c.load_after));
        }
      }
    }
    for (size_t window : f.windows) {
      std::vector<double> tput;
      for (const Cell& c : closed[{window, use_http ? "http" : "in-process"}]) tput.push_back(c.s.throughput);
      f.capacity = std::max(f.capacity, brisk::percentile(tput, 50));
    }
  }
  report.line(fmt::format("\ncapacity C = {:.0f} req/s ({})\n", f.capacity,
                          closed.empty() ? "given"
                          : use_http     ? "best median closed-loop HTTP"
                                         : "best median closed-loop in-process"));

  // 2. Open loop at each load.
  std::map<std::pair<double, std::string>, std::vector<Cell>> open;
  report.line("### open loop (Poisson), latency from the scheduled arrival\n");
  report.line(
      "| load | round | mode | offered/s | ok/s | P50 ms | P99 ms | 429 | 429 P99 ms | errors | lost | "
      "send late P99 ms | load avg before/after |");
  report.line("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (size_t li = 0; li < f.loads.size(); ++li) {
    const double rate = f.loads[li] * f.capacity;
    for (int r = 0; r < f.rounds; ++r) {
      const auto schedule = brisk::load::poisson_schedule({brisk::load::Stream{.rate = rate}}, f.duration_s,
                                                          questions.size(), brisk::load::mix_seed(f.seed, li, r));
      std::vector<brisk::load::Arrival> numbered = schedule;  // item i: the i-th arrival's own text
      for (size_t i = 0; i < numbered.size(); ++i) numbered[i].item = static_cast<uint32_t>(i);
      const std::vector<std::string> texts = texts_for(schedule.size(), &schedule);
      for (size_t k = 0; k < open_targets.size(); ++k) {
        const Target& t = open_targets[(k + r) % open_targets.size()];
        Cell c;
        c.load_before = load_average();
        const std::vector<Record> records = run_open_loop(t, texts, numbered);
        c.load_after = load_average();
        c.s = summarize(records, f.slo_ms);
        if (!f.records_dir.empty()) {
          write_records(fmt::format("{}/load{:.2f}_round{}_{}.csv", f.records_dir, f.loads[li], r, t.name()), records);
        }
        open[{f.loads[li], t.name()}].push_back(c);
        report.line(
            fmt::format("| {:.0f}% | {} | {} | {:.0f} | {:.0f} | {:.1f} | {:.1f} | {} | {:.1f} | {}{} | {} | "
                        "{:.1f} | {:.1f} / {:.1f} |",
                        100 * f.loads[li], r, t.name(), schedule.size() / f.duration_s, c.s.throughput, c.s.p50_ms,
                        c.s.p99_ms, c.s.rejected_429, c.s.rejected_p99_ms, c.s.errors,
                        c.s.errors ? " (" + join_ints(c.s.error_statuses) + ")" : "", c.s.lost, c.s.send_late_p99_ms,
                        c.load_before, c.load_after));
      }
    }
  }

  // 3. Medians and same-round ratios.
  const auto med = [](const std::vector<Cell>& cells, auto field) {
    std::vector<double> v;
    for (const Cell& c : cells) v.push_back(field(c.s));
    return brisk::percentile(v, 50);
  };
  const auto ratio = [](const std::vector<Cell>& a, const std::vector<Cell>& b, auto field) {
    std::vector<double> v;  // per round a/b, then the median
    for (size_t r = 0; r < std::min(a.size(), b.size()); ++r) {
      if (field(b[r].s) > 0) v.push_back(field(a[r].s) / field(b[r].s));
    }
    return brisk::percentile(v, 50);
  };
  const auto tput = [](const CellSummary& s) { return s.throughput; };
  const auto p50 = [](const CellSummary& s) { return s.p50_ms; };
  const auto p99 = [](const CellSummary& s) { return s.p99_ms; };
  report.line("\n### medians over rounds\n");
  report.line("| load | mode | ok/s | P50 ms | P99 ms | ok within SLO | 429 | 429 P99 ms | errors | lost |");
  report.line("|---|---|---|---|---|---|---|---|---|---|");
  for (const auto& [key, cells] : closed) {
    report.line(fmt::format("| closed ({}) | {} | {:.0f} | {:.1f} | {:.1f} | - | - | - | {:.0f} | - |", key.first,
                            key.second, med(cells, tput), med(cells, p50), med(cells, p99),
                            med(cells, [](const CellSummary& s) { return double(s.errors + s.lost); })));
  }
  for (const auto& [key, cells] : open) {
    report.line(fmt::format("| {:.0f}% | {} | {:.0f} | {:.1f} | {:.1f} | {:.1f}% | {:.0f} | {:.1f} | {:.0f} | {:.0f} |",
                            100 * key.first, key.second, med(cells, tput), med(cells, p50), med(cells, p99),
                            med(cells, [](const CellSummary& s) { return s.ok ? 100.0 * s.ok_within_slo / s.ok : 0; }),
                            med(cells, [](const CellSummary& s) { return double(s.rejected_429); }),
                            med(cells, [](const CellSummary& s) { return s.rejected_p99_ms; }),
                            med(cells, [](const CellSummary& s) { return double(s.errors); }),
                            med(cells, [](const CellSummary& s) { return double(s.lost); })));
  }
  if (use_http && use_in_process) {
    report.line("\n### HTTP / in-process, median of the per-round ratios\n");
    report.line("| cell | ok/s | P50 | P99 |");
    report.line("|---|---|---|---|");
    for (size_t window : closed.empty() ? std::vector<size_t>{} : f.windows) {
      const auto& h = closed[{window, "http"}];
      const auto& i = closed[{window, "in-process"}];
      report.line(fmt::format("| closed ({}) | {:.3f} | {:.3f} | {:.3f} |", window, ratio(h, i, tput), ratio(h, i, p50),
                              ratio(h, i, p99)));
    }
    for (double l : f.loads) {
      const auto& h = open[{l, "http"}];
      const auto& i = open[{l, "in-process"}];
      report.line(fmt::format("| {:.0f}% | {:.3f} | {:.3f} | {:.3f} |", 100 * l, ratio(h, i, tput), ratio(h, i, p50),
                              ratio(h, i, p99)));
    }
  }
  return 0;
}
