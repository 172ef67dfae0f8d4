// Google Benchmark program of the runtime module: the learned semantic-cache verifier's cost per candidate
// (PairVerifier::score: the text features, the guards and the 2 x 384 embedding features; brisk/runtime/
// pair_verifier.h), on one thread, at all-MiniLM-L6-v2's dimension with weights of the fitted file's shape.
//
//   build/release/benchmarks/brisk_runtime_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
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

void BM_PairVerifierScore(benchmark::State& state) {
  std::mt19937 rng(1);
  const size_t n = brisk::pair_text_feature_names().size() + 2 * kDim;
  std::vector<float> mean(n, 0.1f), scale(n, 0.5f), weight(n);
  std::normal_distribution<float> g;
  for (float& w : weight) w = 0.1f * g(rng);
  auto v = brisk::PairVerifier::create("bench-model", kDim, mean, scale, weight, -0.5f, 0.9f, 0.95f);
  if (!v.ok()) {
    state.SkipWithError(std::string(v.status().message()).c_str());
    return;
  }
  const std::vector<float> u = unit_vector(rng), w = unit_vector(rng);
  size_t i = 0;
  for (auto _ : state) {
    const auto& p = kPairs[i++ % std::size(kPairs)];
    benchmark::DoNotOptimize(v->score(brisk::cache::SemanticPair{p[1], p[0], u, w, 0.8f}));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PairVerifierScore);

}  // namespace
