// brisk_torchscript_load: the TorchScript backend's batching gain under open-loop Poisson load. A traced classifier
// (benchmarks/peers/make_task_models.py's minilm-cls/model.pt) runs behind a Runtime with RuntimeOptions::torchscript;
// requests are submitted with submit_classify at Poisson arrival rates (the library's open-loop load generator,
// brisk/runtime/load_test.h), as fractions of the capacity measured first (closed loop: logits() on batches of 32),
// with the default batching (max_batch_size 32) and with max_batch_size 1 (no batching). Per cell: completed/s,
// p50/p99 latency (scheduled arrival to callback), mean batch size, and the requests refused at submit or expired.
//
//   OMP_NUM_THREADS=2 build/cpu-only/benchmarks/brisk_torchscript_load [--model-dir ~/.cache/brisk/models/minilm-cls]
//       [--module DIR/model.pt] [--texts benchmarks/data/heldout_sentences.txt] [--duration-s 6] [--loads 0.5,0.8,1.2]
//       [--timeout-ms 1000] [--seed 1]
//
// Every request text is a held-out sentence plus " #<request number>", so that no two requests share token ids (the
// runtime's single flight would otherwise answer duplicates in flight with one row). Result and token caches are off.
// Prints a markdown table. Thread safety: the generator thread submits, batcher threads write their own records.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "brisk/runtime/load_test.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "brisk_torchscript_load: %s\n", msg.c_str());
  std::exit(1);
}

struct Args {
  std::string model_dir, module, texts;
  double duration_s = 6, capacity_s = 3;
  std::vector<double> loads = {0.5, 0.8, 1.2};
  int timeout_ms = 1000;
  uint64_t seed = 1;
};

std::unique_ptr<brisk::Runtime> make_runtime(const Args& a, size_t max_batch) {
  brisk::RuntimeOptions opts;
  opts.model_dir = a.model_dir;
  opts.torchscript = brisk::TorchScriptOptions{.module = a.module, .output = brisk::TorchScriptOutput::kLogits};
  opts.cache.result_cache_bytes = 0;
  opts.cache.token_cache_entries = 0;
  opts.batching.max_batch_size = max_batch;
  auto rt = brisk::Runtime::create(opts);
  if (!rt.ok()) fail("Runtime::create: " + rt.status().ToString());
  return *std::move(rt);
}

// Closed loop, one logits() call of `batch` distinct texts after another, for `seconds`: sequences per second.
double capacity(const brisk::Runtime& rt, const std::vector<std::string>& sentences, size_t batch, double seconds) {
  uint64_t n = 0, done = 0;
  Clock::time_point start{};
  for (int warm = 1;; warm = 0) {
    if (!warm && start == Clock::time_point{}) start = Clock::now();
    std::vector<std::string> owned;
    for (size_t i = 0; i < batch; ++i, ++n) owned.push_back(fmt::format("{} #{}", sentences[n % sentences.size()], n));
    std::vector<std::string_view> texts(owned.begin(), owned.end());
    if (auto r = rt.logits(texts); !r.ok()) fail("logits: " + r.status().ToString());
    if (warm) continue;
    done += batch;
    const double el = std::chrono::duration<double>(Clock::now() - start).count();
    if (el >= seconds) return static_cast<double>(done) / el;
  }
}

struct Cell {
  size_t offered = 0, completed = 0, refused = 0, failed = 0;
  double wall_s = 0, p50 = 0, p99 = 0, mean_batch = 0;
};

// The library's open-loop generator (brisk/runtime/load_test.h): submit_classify at Poisson arrivals, every text made
// unique with " #<arrival>".
Cell open_loop(const brisk::Runtime& rt, const std::vector<std::string>& sentences, double rate, const Args& a,
               uint64_t seed) {
  brisk::load_test::OpenLoopOptions o;
  o.rate = rate;
  o.duration_s = a.duration_s;
  o.seed = seed;
  o.timeout = std::chrono::milliseconds(a.timeout_ms);
  o.slo = o.timeout;
  o.classify = true;
  auto r = brisk::load_test::run_open_loop(rt, sentences, o);
  if (!r.ok()) fail("open loop: " + r.status().ToString());
  Cell c;
  c.offered = r->offered;
  c.completed = r->completed;
  c.refused = r->refused;
  c.failed = r->expired + r->failed;
  c.wall_s = r->duration_s;
  c.p50 = r->p50_ms;
  c.p99 = r->p99_ms;
  c.mean_batch = r->mean_batch;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  const char* home = std::getenv("HOME");
  a.model_dir = std::string(home ? home : ".") + "/.cache/brisk/models/minilm-cls";
  a.texts = "benchmarks/data/heldout_sentences.txt";
  std::string cmd = "brisk_torchscript_load";
  for (int i = 1; i < argc; ++i) cmd += std::string(" ") + argv[i];
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i], v = argv[i + 1];
    char* end = nullptr;
    auto num = [&] {
      const double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(d > 0)) fail(f + " is '" + v + "'; expected a positive number");
      return d;
    };
    if (f == "--model-dir")
      a.model_dir = v;
    else if (f == "--module")
      a.module = v;
    else if (f == "--texts")
      a.texts = v;
    else if (f == "--duration-s")
      a.duration_s = num();
    else if (f == "--capacity-s")
      a.capacity_s = num();
    else if (f == "--timeout-ms")
      a.timeout_ms = static_cast<int>(num());
    else if (f == "--seed")
      a.seed = static_cast<uint64_t>(num());
    else if (f == "--loads") {
      a.loads.clear();
      std::stringstream ss(v);
      for (std::string item; std::getline(ss, item, ',');) {
        const double d = std::strtod(item.c_str(), &end);
        if (end == item.c_str() || *end != '\0' || !(d > 0)) fail("--loads: '" + item + "'; expected fractions > 0");
        a.loads.push_back(d);
      }
    } else
      fail("unknown flag " + f + " (or a flag without its value)");
  }
  if ((argc - 1) % 2 != 0) fail(std::string(argv[argc - 1]) + " needs a value");
  if (a.module.empty()) a.module = a.model_dir + "/model.pt";
  std::ifstream in(a.texts);
  if (!in) fail("--texts: cannot open '" + a.texts + "'");
  std::vector<std::string> sentences;
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) sentences.push_back(l);
  }
  if (sentences.empty()) fail("--texts: '" + a.texts + "' has no lines");

  std::unique_ptr<brisk::Runtime> rt32 = make_runtime(a, 32), rt1 = make_runtime(a, 1);
  const double cap32 = capacity(*rt32, sentences, 32, a.capacity_s);
  const double cap1 = capacity(*rt1, sentences, 1, a.capacity_s);
  std::printf("<!-- %s -->\n", cmd.c_str());
  std::printf("backend: %s; capacity (closed loop, logits()): batch 32 %.1f seq/s, batch 1 %.1f seq/s (%.2fx)\n\n",
              rt32->backend_info().description.c_str(), cap32, cap1, cap1 > 0 ? cap32 / cap1 : 0.0);
  std::printf(
      "| offered (x batch-32 capacity) | max_batch_size | offered/s | completed/s | p50 ms | p99 ms | "
      "mean batch | refused / expired |\n|---|---|---|---|---|---|---|---|\n");
  for (size_t li = 0; li < a.loads.size(); ++li) {
    const double rate = a.loads[li] * cap32;
    for (auto& [mb, rt] : {std::pair<int, brisk::Runtime*>{32, rt32.get()}, {1, rt1.get()}}) {
      const Cell c = open_loop(*rt, sentences, rate, a, brisk::load_test::mix_seed(a.seed, li));
      std::printf("| %.0f%% | %d | %.1f | %.1f | %.1f | %.1f | %.2f | %.1f%% / %.1f%% |\n", 100 * a.loads[li], mb,
                  static_cast<double>(c.offered) / a.duration_s, static_cast<double>(c.completed) / c.wall_s, c.p50,
                  c.p99, c.mean_batch, 100.0 * static_cast<double>(c.refused) / static_cast<double>(c.offered),
                  100.0 * static_cast<double>(c.failed) / static_cast<double>(c.offered));
      std::fflush(stdout);
    }
  }
  return 0;
}
