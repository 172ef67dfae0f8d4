// Google Benchmark program of the runtime module: the learned semantic-cache verifier's cost per candidate
// (PairVerifier::score: the text features, the guards and the 2 x 384 embedding features; brisk/runtime/
// pair_verifier.h), on one thread, at all-MiniLM-L6-v2's dimension with weights of the fitted file's shape; and a
// semantic-cache hit through that verifier in a cache of 5,000 entries. Each reports its per-call p50 and p99 (us)
// as counters, timed call by call.
//
//   build/release/benchmarks/brisk_runtime_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "brisk/runtime/pair_verifier.h"

namespace {

constexpr int64_t kDim = 384;

std::vector<float> unit_vector(std::mt19937& rng) {
  std::normal_distribution<float> g;
  std::vector<float> v(kDim);
  double n = 0.0;
  for (float& x : v) {
    x = g(rng);
    n += double(x) * x;
  }
  for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
  return v;
}

const char* const kPairs[][2] = {
    {"How do I reset my online banking password?", "I forgot my internet banking password, how can I change it?"},
    {"Can I send 500 pounds abroad without a fee?", "Can I send 5,000 pounds abroad without a fee?"},
    {"Do you ship to Canada?", "Do you ship to Australia?"},
    {"my card was declined at the supermarket this morning even though I have money in my account, why?",
     "Why was my card declined at the shop when my balance is fine?"}};

brisk::StatusOr<brisk::PairVerifier> random_verifier(std::mt19937& rng) {
  const size_t n = brisk::pair_text_feature_names().size() + 2 * kDim;
  std::vector<float> mean(n, 0.1f), scale(n, 0.5f), weight(n);
  std::normal_distribution<float> g;
  for (float& w : weight) w = 0.1f * g(rng);
  return brisk::PairVerifier::create("bench-model", kDim, mean, scale, weight, -0.5f, 0.9f, 0.95f);
}

// Per-call latencies (us) into p50 and p99 counters.
class CallTimes {
 public:
  void add(std::chrono::steady_clock::duration d) {
    us_.push_back(std::chrono::duration<double, std::micro>(d).count());
  }
  void report(benchmark::State& state) {
    if (us_.empty()) return;
    std::sort(us_.begin(), us_.end());
    const auto at = [&](double q) { return us_[std::min(us_.size() - 1, static_cast<size_t>(q * us_.size()))]; };
    state.counters["p50_us"] = at(0.50);
    state.counters["p99_us"] = at(0.99);
  }

 private:
  std::vector<double> us_;
};

void BM_PairVerifierScore(benchmark::State& state) {
  std::mt19937 rng(1);
  auto v = random_verifier(rng);
  if (!v.ok()) {
    state.SkipWithError(std::string(v.status().message()).c_str());
    return;
  }
  const std::vector<float> u = unit_vector(rng), w = unit_vector(rng);
  size_t i = 0;
  CallTimes times;
  for (auto _ : state) {
    const auto& p = kPairs[i++ % std::size(kPairs)];
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(v->score(brisk::cache::SemanticPair{p[1], p[0], u, w, 0.8f}));
    times.add(std::chrono::steady_clock::now() - start);
  }
  state.SetItemsProcessed(state.iterations());
  times.report(state);
}
BENCHMARK(BM_PairVerifierScore);

// A semantic-cache hit with the verifier: 5,000 entries of random unit vectors, each lookup a question near one of
// them (cosine ~0.9), its `candidates` (4) nearest from cosine 0.5 scored by the verifier (threshold 0: served).
void BM_SemanticHitWithVerifier(benchmark::State& state) {
  constexpr int kEntries = 5000;
  std::mt19937 rng(2);
  auto v = random_verifier(rng);
  brisk::cache::SemanticCacheOptions o;
  o.dim = kDim;
  o.max_entries = kEntries;
  o.guards.clear();
  if (v.ok()) o.verifier = v->as_semantic_verifier();
  o.verifier_threshold = 0.0f;
  o.verifier_cosine_floor = 0.5f;
  auto cache = brisk::cache::SemanticCache::create(o);
  if (!v.ok() || !cache.ok()) {
    state.SkipWithError(std::string((v.ok() ? cache.status() : v.status()).message()).c_str());
    return;
  }
  std::vector<std::vector<float>> entries;
  for (int e = 0; e < kEntries; ++e) {
    entries.push_back(unit_vector(rng));
    const auto& p = kPairs[e % std::size(kPairs)];
    if (!(*cache)->insert("t", std::string(p[0]) + " #" + std::to_string(e), entries.back(), "answer").ok()) {
      state.SkipWithError("insert failed");
      return;
    }
  }
  std::vector<std::vector<float>> queries;  // 0.9 * entry + ~0.44 * noise, normalised: cosine ~0.9
  for (int q = 0; q < 256; ++q) {
    const std::vector<float>& e = entries[static_cast<size_t>(q * 19) % entries.size()];
    std::vector<float> noise = unit_vector(rng), x(kDim);
    double n = 0.0;
    for (int64_t j = 0; j < kDim; ++j) {
      x[j] = 0.9f * e[j] + 0.4359f * noise[j];
      n += double(x[j]) * x[j];
    }
    for (float& f : x) f = static_cast<float>(f / std::sqrt(n));
    queries.push_back(std::move(x));
  }
  size_t i = 0, hits = 0;
  CallTimes times;
  for (auto _ : state) {
    const auto& p = kPairs[i % std::size(kPairs)];
    const auto start = std::chrono::steady_clock::now();
    const brisk::cache::SemanticLookup r = (*cache)->lookup("t", p[1], queries[i++ % queries.size()]);
    times.add(std::chrono::steady_clock::now() - start);
    hits += r.hit;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["hit_ratio"] = double(hits) / double(std::max<size_t>(1, i));
  times.report(state);
}
BENCHMARK(BM_SemanticHitWithVerifier);

}  // namespace
