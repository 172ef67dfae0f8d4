// brisk_degradation_load: open-loop overload of Runtime::submit with and without RuntimeOptions::fallback, in
// interleaved rounds, for benchmarks/RESULTS.md ("Degradation under overload"). Every request has a deadline (the
// SLO); the model's queue refuses what it predicts late (reject_predicted_late), which the fallback then answers.
//
//   brisk_degradation_load --model DIR --fallback minilm-int8.brisk --texts questions.txt --rate 120 --slo-ms 100
//       [--seconds 10] [--rounds 2] [--threads 2] [--fallback-threads 2] [--seed 1]
//
// Per round and mode it prints one JSON line: offered, answered (by path), refused at submit, failed (by code), lost
// (offered minus every outcome: must be 0), goodput (answers within the SLO per second) and the answered requests'
// P50/P99. The result cache is off (every answer is a forward pass); the token cache stays on.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "brisk/core/text_lines.h"
#include "brisk/runtime/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string model, fallback, texts;
  double rate = 100, slo_ms = 100, seconds = 10;
  int rounds = 2, threads = 2, fallback_threads = 0;
  uint32_t seed = 1;
};

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "brisk_degradation_load: %s\n", msg.c_str());
  std::exit(1);
}

double to_number(const std::string& flag, const std::string& v, double lo) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !(x >= lo))
    fail(fmt::format("{} is '{}'; expected a number >= {}", flag, v, lo));
  return x;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], v = argv[i + 1];
    if (flag == "--model")
      a.model = v;
    else if (flag == "--fallback")
      a.fallback = v;
    else if (flag == "--texts")
      a.texts = v;
    else if (flag == "--rate")
      a.rate = to_number(flag, v, 0.1);
    else if (flag == "--slo-ms")
      a.slo_ms = to_number(flag, v, 1);
    else if (flag == "--seconds")
      a.seconds = to_number(flag, v, 0.5);
    else if (flag == "--rounds")
      a.rounds = static_cast<int>(to_number(flag, v, 1));
    else if (flag == "--threads")
      a.threads = static_cast<int>(to_number(flag, v, 1));
    else if (flag == "--fallback-threads")
      a.fallback_threads = static_cast<int>(to_number(flag, v, 0));
    else if (flag == "--seed")
      a.seed = static_cast<uint32_t>(to_number(flag, v, 0));
    else
      fail("unknown flag " + flag);
  }
  if (argc % 2 == 0) fail("every flag needs a value");
  if (a.model.empty() || a.fallback.empty() || a.texts.empty()) fail("--model, --fallback and --texts are required");
  return a;
}

// What one round saw; every offered request ends in exactly one of answered / refused / failed.
struct Outcomes {
  std::mutex mu;
  std::condition_variable cv;
  size_t pending = 0;
  std::vector<double> answered_ms;
  std::map<std::string, size_t> paths, failed;
  size_t refused = 0, within_slo = 0;
};

nlohmann::json run_round(const Args& args, const std::vector<std::string>& texts, bool with_fallback, int round) {
  brisk::RuntimeOptions o;
  o.model_dir = args.model;
  o.num_threads = args.threads;
  o.cache.result_cache_bytes = 0;
  if (with_fallback) {
    o.fallback = brisk::FallbackOptions{
        .model_dir = args.fallback, .classification_head = {}, .num_threads = args.fallback_threads};
  }
  auto rt = brisk::Runtime::create(o);
  if (!rt.ok()) fail(std::string(rt.status().message()));
  // The throughput estimate behind reject_predicted_late needs measured batches: warm both models up.
  std::vector<std::string_view> warm(texts.begin(),
                                     texts.begin() + static_cast<ptrdiff_t>(std::min<size_t>(64, texts.size())));
  for (int i = 0; i < 4; ++i) (void)(*rt)->embed(warm);

  Outcomes out;
  std::mt19937_64 rng(args.seed + static_cast<uint32_t>(round));
  std::exponential_distribution<double> gap(args.rate);
  const auto slo = std::chrono::duration<double, std::milli>(args.slo_ms);
  const Clock::time_point start = Clock::now();
  const Clock::time_point stop =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(args.seconds));
  Clock::time_point next = start;
  size_t offered = 0;
  while (next < stop) {
    std::this_thread::sleep_until(next);
    const std::string& text = texts[offered % texts.size()];
    const Clock::time_point submitted = Clock::now();
    {
      std::lock_guard lock(out.mu);
      out.pending++;
    }
    auto id =
        (*rt)->submit(text, {.timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(slo)},
                      [&out, submitted, slo](uint64_t, brisk::StatusOr<std::vector<float>> e, brisk::AnswerPath path) {
                        const auto took = std::chrono::duration<double, std::milli>(Clock::now() - submitted);
                        std::lock_guard lock(out.mu);
                        if (e.ok()) {
                          out.answered_ms.push_back(took.count());
                          out.paths[std::string(brisk::answer_path_name(path))]++;
                          if (took <= slo) out.within_slo++;
                        } else {
                          out.failed[absl::StatusCodeToString(e.status().code())]++;
                        }
                        out.pending--;
                        out.cv.notify_all();
                      });
    if (!id.ok()) {
      std::lock_guard lock(out.mu);
      out.pending--;
      out.refused++;
    }
    offered++;
    next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
  }
  std::unique_lock lock(out.mu);
  const bool drained = out.cv.wait_for(lock, std::chrono::seconds(30), [&] { return out.pending == 0; });
  std::vector<double> ms = out.answered_ms;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    return ms.empty() ? 0.0
                      : ms[std::min(ms.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(ms.size())))];
  };
  size_t failed = 0;
  for (const auto& [code, n] : out.failed) failed += n;
  nlohmann::json j = {{"mode", with_fallback ? "fallback" : "none"},
                      {"round", round},
                      {"rate", args.rate},
                      {"slo_ms", args.slo_ms},
                      {"seconds", args.seconds},
                      {"offered", offered},
                      {"answered", ms.size()},
                      {"paths", out.paths},
                      {"refused", out.refused},
                      {"failed", out.failed},
                      {"lost", static_cast<int64_t>(offered) - static_cast<int64_t>(ms.size() + out.refused + failed)},
                      {"drained", drained},
                      {"goodput_per_s", static_cast<double>(out.within_slo) / args.seconds},
                      {"p50_ms", pct(50)},
                      {"p99_ms", pct(99)}};
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  brisk::StatusOr<std::vector<std::string>> read = brisk::read_text_lines(args.texts, "--texts", true);
  if (!read.ok()) fail(std::string(read.status().message()));
  const std::vector<std::string> texts = *std::move(read);
  for (int round = 0; round < args.rounds; ++round) {
    for (bool with_fallback : {false, true}) {
      std::printf("%s\n", run_round(args, texts, with_fallback, round).dump().c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
