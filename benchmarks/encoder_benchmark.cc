// Per-op profile of one MiniLM-L6 encoder layer at (batch, seq) shapes, plus the whole forward pass on the real
// model: where the time of a forward pass goes.
//   build/release/benchmarks/brisk_encoder_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "brisk/core/parallel.h"
#include "brisk/kernels/attention.h"
#include "brisk/kernels/linear.h"
#include "brisk/kernels/layernorm.h"
#include "brisk/runtime/runtime.h"
#include "test_util.h"

namespace {

constexpr int64_t kHidden = 384, kInter = 1536, kHeads = 12;

// Uniform in [-scale, scale).
std::vector<float> random_vector(size_t n, float scale = 0.05f) {
  return brisk::testing::random_floats(n, -scale, scale, 7);
}

brisk::kernels::Linear make_linear(int64_t out, int64_t in, std::vector<float>& w, std::vector<float>& b) {
  w = random_vector(static_cast<size_t>(out * in));
  b = random_vector(static_cast<size_t>(out));
  return brisk::kernels::Linear::create(brisk::Tensor::borrow(w.data(), {out, in}, brisk::DType::kF32),
                                        brisk::Tensor::borrow(b.data(), {out}, brisk::DType::kF32), brisk::Device::kCPU)
      .value();
}

// args: tokens (batch * seq), out, in, epilogue
void BM_Linear(benchmark::State& state) {
  brisk::set_num_threads(2);
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const auto epilogue = static_cast<brisk::kernels::GemmEpilogue>(state.range(3));
  std::vector<float> w, b;
  brisk::kernels::Linear fc = make_linear(n, k, w, b);
  auto x = random_vector(static_cast<size_t>(m * k), 1.0f);
  std::vector<float> y(static_cast<size_t>(m * n));
  for (auto _ : state) {
    if (!fc.forward(x.data(), m, y.data(), epilogue).ok()) state.SkipWithError("forward failed");
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
// QKV, attention output (accumulate), FFN up (GeLU), FFN down (accumulate) at B*T = 4096 and 16.
BENCHMARK(BM_Linear)
    ->ArgNames({"M", "N", "K", "epi"})
    ->Args({4096, 3 * kHidden, kHidden, 0})
    ->Args({4096, kHidden, kHidden, 4})
    ->Args({4096, kInter, kHidden, 1})
    ->Args({4096, kHidden, kInter, 4})
    ->Args({16, 3 * kHidden, kHidden, 0})
    ->Args({16, kInter, kHidden, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_SelfAttention(benchmark::State& state) {
  brisk::set_num_threads(2);
  // mixed: every fourth sequence has `seq` tokens, the others seq / 8, as in a stream of short questions.
  const int64_t batch = state.range(0), seq = state.range(1);
  const bool mixed = state.range(2) != 0;
  std::vector<int64_t> offsets{0};
  for (int64_t b = 0; b < batch; ++b) offsets.push_back(offsets.back() + (mixed && b % 4 != 0 ? seq / 8 : seq));
  const int64_t tokens = offsets.back();
  auto qkv = random_vector(static_cast<size_t>(tokens * 3 * kHidden), 1.0f);
  std::vector<float> ctx(static_cast<size_t>(tokens * kHidden));
  double flops = 0;
  for (int64_t b = 0; b < batch; ++b)
    flops += 4.0 * double(offsets[b + 1] - offsets[b]) * (offsets[b + 1] - offsets[b]) * kHidden;
  std::vector<int32_t> starts, lengths;
  for (int64_t b = 0; b < batch; ++b) {
    starts.push_back(static_cast<int32_t>(offsets[b]));
    lengths.push_back(static_cast<int32_t>(offsets[b + 1] - offsets[b]));
  }
  const brisk::kernels::AttentionRows rows{starts.data(), lengths.data(), batch, seq};
  for (auto _ : state) {
    if (!brisk::kernels::self_attention(brisk::Device::kCPU, qkv.data(), nullptr, rows, tokens, kHeads,
                                        kHidden / kHeads, ctx.data())
             .ok()) {
      state.SkipWithError("attention failed");
    }
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_SelfAttention)
    ->ArgNames({"B", "T", "mixed"})
    ->Args({32, 128, 0})
    ->Args({32, 128, 1})
    ->Args({8, 64, 0})
    ->Args({1, 16, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_LayerNorm(benchmark::State& state) {
  brisk::set_num_threads(2);
  const int64_t rows = state.range(0);
  auto x = random_vector(static_cast<size_t>(rows * kHidden), 3.0f);
  auto gamma = random_vector(kHidden, 1.0f), beta = random_vector(kHidden, 1.0f);
  for (auto _ : state) {
    if (!brisk::kernels::layer_norm_bias_residual(brisk::Device::kCPU, x.data(), nullptr, nullptr, gamma.data(),
                                                  beta.data(), 1e-12f, x.data(), rows, kHidden)
             .ok())
      state.SkipWithError("layer_norm_bias_residual failed");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_LayerNorm)->Arg(4096)->Arg(16)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The whole runtime (tokenize + encoder + pooling) on the real model; texts tokenize to exactly `seq` tokens.
// Arg 2 (cached): 0 turns the caches off (the same text every time: measure the model); 1 keeps them on, so
// every call after the first is a token-cache and result-cache hit.
void BM_RuntimeEmbed(benchmark::State& state) {
  const int64_t batch = state.range(0), seq = state.range(1);
  brisk::RuntimeOptions opts;
  opts.model_dir = brisk::testing::model_dir().string();
  opts.num_threads = 2;
  opts.max_seq_len = static_cast<int>(seq);
  if (state.range(2) == 0) {
    opts.cache.result_cache_bytes = 0;
    opts.cache.token_cache_entries = 0;
  }
  auto rt = brisk::Runtime::create(opts);
  if (!rt.ok()) {
    state.SkipWithError(std::string(rt.status().message()).c_str());
    return;
  }
  std::string text;
  for (int64_t i = 0; i < seq; ++i) text += "hello ";  // truncated to seq tokens by max_seq_len
  std::vector<std::string_view> texts(static_cast<size_t>(batch), text);
  std::vector<float> out(static_cast<size_t>(batch * kHidden));
  if (state.range(2) == 1 && !(*rt)->embed(texts, out).ok()) state.SkipWithError("embed failed");  // fill the caches
  const uint64_t passes_before = (*rt)->forward_passes();
  for (auto _ : state) {
    if (!(*rt)->embed(texts, out).ok()) state.SkipWithError("embed failed");
  }
  state.counters["seq/s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
  // 1 for every uncached row up to batching.max_batch_size (32): one call, one forward pass.
  state.counters["passes/call"] = benchmark::Counter(static_cast<double>((*rt)->forward_passes() - passes_before),
                                                     benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_RuntimeEmbed)
    ->ArgNames({"B", "T", "cached"})
    ->Args({1, 16, 0})
    ->Args({1, 128, 0})
    ->Args({8, 64, 0})
    ->Args({32, 128, 0})
    ->Args({1, 16, 1})
    ->Args({1, 128, 1})
    ->Args({32, 128, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
