// brisk_task_driver: times Runtime::logits or Runtime::rerank on texts from a file and prints one JSON object, so
// that benchmarks/peers/task_peers.py can interleave brisk with ONNX Runtime in rounds (as run_peers.py does with
// `brisk bench --json --samples`). The result and token caches are off: every timed call tokenizes and computes.
//
//   brisk_task_driver --model DIR --task logits --texts FILE [--iters 10] [--warmup 1] [--threads 2]
//   brisk_task_driver --model DIR --task rerank --texts PAIRS.tsv ...        # query<TAB>passage, one query
//   brisk_task_driver --model DIR --task logits --texts FILE --dump          # the logits, for agreement checks
//
// logits: one timed call is rt->logits(all lines of FILE). rerank: every line is query<TAB>passage with the same
// query; one timed call is rt->rerank(query, all passages) (sigmoid scores, sorted). Output:
//   {"task": "logits", "batch": 32, "samples_ms": [...], "passes_per_call": 1, "backend": "native"}
// --dump prints {"logits": [[...], ...]} (logits) or {"scores": [...]} (rerank: raw scores in file order; lines may
// have different queries, consecutive lines with the same query are ranked in one call). Not a Google Benchmark
// program: the peers script needs per-call samples from a process it starts between the other engines' rounds.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/text_lines.h"
#include "brisk/runtime/runtime.h"

namespace {

struct Args {
  std::string model, task, texts;
  int iters = 10, warmup = 1, threads = 2;
  bool dump = false;
};

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "brisk_task_driver: %s\n", msg.c_str());
  std::exit(1);
}

int to_int(const std::string& flag, const std::string& v, int lo) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || n < lo || n > 1000000) {
    fail(fmt::format("{} is '{}'; expected an integer >= {}", flag, v, lo));
  }
  return static_cast<int>(n);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--dump") {
      a.dump = true;
      continue;
    }
    if (i + 1 >= argc) fail(flag + " needs a value");
    const std::string v = argv[++i];
    if (flag == "--model")
      a.model = v;
    else if (flag == "--task")
      a.task = v;
    else if (flag == "--texts")
      a.texts = v;
    else if (flag == "--iters")
      a.iters = to_int(flag, v, 1);
    else if (flag == "--warmup")
      a.warmup = to_int(flag, v, 0);
    else if (flag == "--threads")
      a.threads = to_int(flag, v, 1);
    else
      fail("unknown flag " + flag);
  }
  if (a.model.empty() || a.texts.empty()) fail("--model and --texts are required");
  if (a.task != "logits" && a.task != "rerank") fail("--task is '" + a.task + "'; expected logits or rerank");
  return a;
}

template <typename T>
T check(brisk::StatusOr<T> v, const char* what) {
  if (!v.ok()) fail(fmt::format("{}: {}", what, v.status().ToString()));
  return *std::move(v);
}

std::string floats(const std::vector<float>& v, size_t begin, size_t end) {
  std::string s = "[";
  for (size_t i = begin; i < end; ++i) s += fmt::format("{}{:.7g}", i > begin ? ", " : "", v[i]);
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  brisk::RuntimeOptions opts;
  opts.model_dir = a.model;
  opts.num_threads = a.threads;
  opts.cache.result_cache_bytes = 0;
  opts.cache.token_cache_entries = 0;
  std::unique_ptr<brisk::Runtime> rt = check(brisk::Runtime::create(opts), "Runtime::create");
  const std::vector<std::string> lines = check(brisk::read_text_lines(a.texts, "--texts", true), "--texts");

  std::vector<std::string_view> texts, queries, passages;
  for (const std::string& l : lines) {
    if (a.task == "logits") {
      texts.push_back(l);
      continue;
    }
    const size_t tab = l.find('\t');
    if (tab == std::string::npos) fail("--texts: a line has no TAB; expected query<TAB>passage for --task rerank");
    queries.push_back(std::string_view(l).substr(0, tab));
    passages.push_back(std::string_view(l).substr(tab + 1));
  }

  if (a.dump) {
    if (a.task == "logits") {
      const std::vector<float> logits = check(rt->logits(texts), "Runtime::logits");
      const size_t labels = logits.size() / texts.size();
      std::string out = "{\"logits\": [";
      for (size_t i = 0; i < texts.size(); ++i) {
        out += (i ? ", " : "") + floats(logits, i * labels, (i + 1) * labels);
      }
      std::printf("%s]}\n", out.c_str());
    } else {
      std::vector<float> scores(passages.size());
      for (size_t b = 0; b < passages.size();) {
        size_t e = b;
        while (e < passages.size() && queries[e] == queries[b]) ++e;
        const auto ranked = check(rt->rerank(queries[b], std::span(passages).subspan(b, e - b), {.raw_scores = true}),
                                  "Runtime::rerank");
        for (const brisk::RerankResult& r : ranked) scores[b + r.index] = r.score;
        b = e;
      }
      std::printf("{\"scores\": %s}\n", floats(scores, 0, scores.size()).c_str());
    }
    return 0;
  }

  for (size_t i = 1; i < queries.size(); ++i) {
    if (queries[i] != queries[0]) fail("--texts: timing a rerank needs one query on every line");
  }
  auto call = [&] {
    if (a.task == "logits") {
      check(rt->logits(texts), "Runtime::logits");
    } else {
      check(rt->rerank(queries[0], passages), "Runtime::rerank");
    }
  };
  for (int i = 0; i < a.warmup; ++i) call();
  const uint64_t passes0 = rt->forward_passes();
  std::vector<double> ms;
  for (int i = 0; i < a.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const double passes = static_cast<double>(rt->forward_passes() - passes0) / a.iters;
  std::string samples = "[";
  for (size_t i = 0; i < ms.size(); ++i) samples += fmt::format("{}{:.4f}", i ? ", " : "", ms[i]);
  std::printf("{\"task\": \"%s\", \"batch\": %zu, \"samples_ms\": %s], \"passes_per_call\": %g, \"backend\": \"%s\"}\n",
              a.task.c_str(), a.task == "logits" ? texts.size() : passages.size(), samples.c_str(), passes,
              rt->backend_info().name.c_str());
  return 0;
}
