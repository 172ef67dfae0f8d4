// brisk_two_runtimes: two Runtimes in one process (two models under load, or a primary and its fallback) against
// one alone, for benchmarks/RESULTS.md ("Compute threads that share the CPU", issue 25). Interleaved rounds: one
// runtime embedding batches on one thread for --seconds, then two runtimes, each on its own thread, at once. Both
// use num_threads 0 (the CPUs this process may use), so without the process's compute budget they would run twice
// the threads the CPUs have.
//
//   brisk_two_runtimes [--model DIR] [--batch 8] [--words 24] [--seconds 4] [--rounds 3]
//
// Per round and mode it prints one JSON line: texts embedded per second (both runtimes together in "two") and the
// compute threads' peak (brisk::compute_threads_peak(), which the budget caps); then the median ratio two / one.
// The result and token caches are off, so every text is a forward pass.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "brisk/core/parallel.h"
#include "brisk/runtime/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string model = brisk::default_model_dir();
  int batch = 8, words = 24, rounds = 3;
  double seconds = 4;
};

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", argv[i]);
      return false;
    }
    const char* v = argv[++i];
    if (flag == "--model") {
      a->model = v;
    } else if (flag == "--batch") {
      a->batch = std::atoi(v);
    } else if (flag == "--words") {
      a->words = std::atoi(v);
    } else if (flag == "--seconds") {
      a->seconds = std::atof(v);
    } else if (flag == "--rounds") {
      a->rounds = std::atoi(v);
    } else {
      std::fprintf(stderr, "unknown flag %s; expected --model, --batch, --words, --seconds or --rounds\n", argv[i - 1]);
      return false;
    }
  }
  if (a->batch < 1 || a->words < 1 || a->rounds < 1 || !(a->seconds > 0)) {
    std::fprintf(stderr, "--batch, --words, --rounds and --seconds must be > 0\n");
    return false;
  }
  return true;
}

// Texts of `words` words, distinct per thread and call (no cache would help anyway: both are off).
std::vector<std::string> texts(int batch, int words, int salt) {
  static const char* kWords[] = {"reset", "card", "pin", "account", "transfer", "limit", "branch", "loan"};
  std::vector<std::string> out(static_cast<size_t>(batch));
  for (int i = 0; i < batch; ++i) {
    for (int w = 0; w < words; ++w)
      out[static_cast<size_t>(i)] += std::string(kWords[(i * 7 + w * 3 + salt) % 8]) + " ";
  }
  return out;
}

// Texts per second of `runtimes`, each driven by its own thread for `seconds`.
double run(const std::vector<brisk::Runtime*>& runtimes, const Args& a) {
  std::atomic<long> done{0};
  std::atomic<bool> failed{false};
  const auto stop = Clock::now() + std::chrono::duration<double>(a.seconds);
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (size_t r = 0; r < runtimes.size(); ++r) {
    threads.emplace_back([&, r] {
      const std::vector<std::string> owned = texts(a.batch, a.words, static_cast<int>(r));
      const std::vector<std::string_view> views(owned.begin(), owned.end());
      while (Clock::now() < stop) {
        if (!runtimes[r]->embed(views).ok()) failed = true;
        done += a.batch;
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed) {
    std::fprintf(stderr, "an embed() failed\n");
    std::exit(1);
  }
  return static_cast<double>(done.load()) / std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) return 2;
  brisk::RuntimeOptions o;
  o.model_dir = a.model;
  o.num_threads = 0;
  o.cache.result_cache_bytes = 0;
  o.cache.token_cache_entries = 0;
  o.batching.max_batch_size = a.batch;
  auto first = brisk::Runtime::create(o);
  auto second = brisk::Runtime::create(o);
  if (!first.ok() || !second.ok()) {
    std::fprintf(stderr, "%s\n", std::string((first.ok() ? second.status() : first.status()).message()).c_str());
    return 1;
  }
  std::printf("{\"cpus\": %d, \"budget\": %d, \"batch\": %d, \"words\": %d, \"seconds\": %.1f}\n",
              brisk::available_cpus(), brisk::compute_budget(), a.batch, a.words, a.seconds);
  run({first->get()}, a);  // warm-up
  std::vector<double> ratios;
  for (int round = 0; round < a.rounds; ++round) {
    brisk::set_compute_budget(0);  // restarts the peak
    const double one = run({first->get()}, a);
    const int peak_one = brisk::compute_threads_peak();
    brisk::set_compute_budget(0);
    const double two = run({first->get(), second->get()}, a);
    const int peak_two = brisk::compute_threads_peak();
    ratios.push_back(two / one);
    std::printf(
        "{\"round\": %d, \"one_texts_per_s\": %.1f, \"one_peak_threads\": %d, \"two_texts_per_s\": %.1f, "
        "\"two_peak_threads\": %d, \"ratio\": %.3f}\n",
        round, one, peak_one, two, peak_two, two / one);
    std::fflush(stdout);
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("median two/one %.3f over %d rounds; budget %d threads\n", ratios[ratios.size() / 2], a.rounds,
              brisk::compute_budget());
  return 0;
}
