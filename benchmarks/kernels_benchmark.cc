// The CPU element-wise / row kernels at all-MiniLM-L6-v2 batch-32 shapes (32 sequences of 128 tokens, hidden 384,
// 12 heads, FFN 1536), once per ISA level (arg isa: 0 scalar, 1 avx2, 2 avx512; levels the CPU lacks are
// skipped). bytes_per_second counts the bytes each op must move (reads + writes of the activations; weights
// and bias vectors are negligible), so it reads directly against memory bandwidth.
//
//   brisk_kernels_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "brisk/core/cpu_features.h"
#include "brisk/kernels/gelu.h"
#include "brisk/kernels/layernorm.h"
#include "brisk/kernels/pooling.h"
#include "brisk/kernels/softmax.h"
#include "test_util.h"
#include "brisk/kernels/vector_math.h"

namespace brisk {
namespace {

using testing::random_floats;

constexpr int64_t kBatch = 32;
constexpr int64_t kSeq = 128;
constexpr int64_t kHidden = 384;
constexpr int64_t kHeads = 12;
constexpr int64_t kFfn = 1536;
constexpr int64_t kTokens = kBatch * kSeq;

// Caps the ISA level to the benchmark's argument for its lifetime; false (and the benchmark skipped) when the
// CPU lacks it.
class IsaScope {
 public:
  explicit IsaScope(benchmark::State& state) : isa_(static_cast<CpuIsa>(state.range(0))) {
    if (!cpu_supports(isa_)) {
      state.SkipWithError("this CPU lacks the ISA level");
      ok_ = false;
      return;
    }
    previous_ = set_cpu_isa_cap(isa_);
    state.SetLabel(std::string(cpu_isa_name(isa_)));
  }
  ~IsaScope() {
    if (ok_) set_cpu_isa_cap(previous_);
  }
  bool ok() const { return ok_; }

 private:
  CpuIsa isa_;
  CpuIsa previous_ = CpuIsa::kScalar;
  bool ok_ = true;
};

// Attention-output LayerNorm of the encoder: h = LN(x + b + h), in place on the residual stream.
void BM_layer_norm_bias_residual(benchmark::State& state) {
  IsaScope isa(state);
  if (!isa.ok()) return;
  const int64_t rows = kTokens, cols = kHidden;
  const std::vector<float> x = random_floats(static_cast<size_t>(rows * cols), -2.0f, 2.0f, 1);
  std::vector<float> h = random_floats(static_cast<size_t>(rows * cols), -30.0f, 30.0f, 2);
  const std::vector<float> bias = random_floats(static_cast<size_t>(cols), -0.1f, 0.1f, 3);
  const std::vector<float> gamma = random_floats(static_cast<size_t>(cols), 0.5f, 1.5f, 4);
  const std::vector<float> beta = random_floats(static_cast<size_t>(cols), -0.1f, 0.1f, 5);
  for (auto _ : state) {
    if (!kernels::layer_norm_bias_residual(Device::kCPU, x.data(), bias.data(), h.data(), gamma.data(), beta.data(),
                                           1e-12f, h.data(), rows, cols)
             .ok())
      state.SkipWithError("layer_norm_bias_residual failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * cols * 3 * static_cast<int64_t>(sizeof(float)));
}

// The embedding LayerNorm: no bias, no residual, in place.
void BM_layer_norm_plain(benchmark::State& state) {
  IsaScope isa(state);
  if (!isa.ok()) return;
  const int64_t rows = kTokens, cols = kHidden;
  std::vector<float> x = random_floats(static_cast<size_t>(rows * cols), -2.0f, 2.0f, 1);
  const std::vector<float> gamma = random_floats(static_cast<size_t>(cols), 0.5f, 1.5f, 4);
  const std::vector<float> beta = random_floats(static_cast<size_t>(cols), -0.1f, 0.1f, 5);
  for (auto _ : state) {
    if (!kernels::layer_norm_bias_residual(Device::kCPU, x.data(), nullptr, nullptr, gamma.data(), beta.data(), 1e-12f,
                                           x.data(), rows, cols)
             .ok())
      state.SkipWithError("layer_norm_bias_residual failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * cols * 2 * static_cast<int64_t>(sizeof(float)));
}

// FFN intermediate activation, in place. A bias of 1 keeps the repeatedly transformed values away from 0
// (gelu alone would shrink them into denormals over thousands of iterations).
void bias_gelu_benchmark(benchmark::State& state, kernels::GeluApproximation approx) {
  IsaScope isa(state);
  if (!isa.ok()) return;
  const int64_t rows = kTokens, cols = kFfn;
  std::vector<float> x = random_floats(static_cast<size_t>(rows * cols), -4.0f, 4.0f, 6);
  const std::vector<float> bias(static_cast<size_t>(cols), 1.0f);
  for (auto _ : state) {
    if (!kernels::bias_gelu(Device::kCPU, x.data(), bias.data(), rows, cols, approx).ok())
      state.SkipWithError("bias_gelu failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * cols * 2 * static_cast<int64_t>(sizeof(float)));
}
void BM_bias_gelu_erf(benchmark::State& state) { bias_gelu_benchmark(state, kernels::GeluApproximation::kErf); }
void BM_bias_gelu_tanh(benchmark::State& state) { bias_gelu_benchmark(state, kernels::GeluApproximation::kTanh); }

// Attention probabilities: [batch * heads * seq, seq] scores, scaled by 1/sqrt(head_dim), every key valid.
void BM_masked_softmax(benchmark::State& state) {
  IsaScope isa(state);
  if (!isa.ok()) return;
  const int64_t rows = kBatch * kHeads * kSeq, cols = kSeq;
  std::vector<float> x = random_floats(static_cast<size_t>(rows * cols), -10.0f, 10.0f, 7);
  for (auto _ : state) {
    if (!kernels::masked_softmax(Device::kCPU, x.data(), rows, cols, cols, 0.125f).ok())
      state.SkipWithError("masked_softmax failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * cols * 2 * static_cast<int64_t>(sizeof(float)));
}

// The same scores with per-sequence lengths (a padded batch with lengths spread over [1, 128]).
void BM_masked_softmax_batched(benchmark::State& state) {
  IsaScope isa(state);
  if (!isa.ok()) return;
  const int64_t rows_per_group = kHeads * kSeq, cols = kSeq;
  std::vector<float> x = random_floats(static_cast<size_t>(kBatch * rows_per_group * cols), -10.0f, 10.0f, 8);
  std::vector<int32_t> lengths(kBatch);
  for (int64_t b = 0; b < kBatch; ++b) lengths[static_cast<size_t>(b)] = static_cast<int32_t>(kSeq - b * 4);
  for (auto _ : state) {
    if (!kernels::masked_softmax_batched(Device::kCPU, x.data(), kBatch, rows_per_group, cols, cols, lengths.data(),
                                         0.125f)
             .ok())
      state.SkipWithError("masked_softmax_batched failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kBatch * rows_per_group * cols * 2 *
                          static_cast<int64_t>(sizeof(float)));
}

// Sentence embedding: mean over the real tokens of [32, 128, 384], then L2 normalisation.
void BM_mean_pool(benchmark::State& state) {
  IsaScope isa(state);
  if (!isa.ok()) return;
  const std::vector<float> hidden = random_floats(static_cast<size_t>(kTokens * kHidden), -1.0f, 1.0f, 9);
  const std::vector<int32_t> lengths(kBatch, static_cast<int32_t>(kSeq));
  std::vector<float> out(static_cast<size_t>(kBatch * kHidden));
  for (auto _ : state) {
    if (!kernels::mean_pool(Device::kCPU, hidden.data(), lengths.data(), kBatch, kSeq, kHidden, out.data()).ok())
      state.SkipWithError("mean_pool failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (kTokens + kBatch) * kHidden * static_cast<int64_t>(sizeof(float)));
}

void BM_l2_normalize(benchmark::State& state) {
  IsaScope isa(state);
  if (!isa.ok()) return;
  std::vector<float> x = random_floats(static_cast<size_t>(kBatch * kHidden), -1.0f, 1.0f, 10);
  for (auto _ : state) {
    if (!kernels::l2_normalize(Device::kCPU, x.data(), kBatch, kHidden).ok())
      state.SkipWithError("l2_normalize failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kBatch * kHidden * 2 * static_cast<int64_t>(sizeof(float)));
}

// The erf on its own, over as many elements as the FFN activation.
void BM_vector_erf(benchmark::State& state) {
  IsaScope isa(state);
  if (!isa.ok()) return;
  const int64_t n = kTokens * kFfn;
  const std::vector<float> x = random_floats(static_cast<size_t>(n), -5.0f, 5.0f, 11);
  std::vector<float> y(static_cast<size_t>(n));
  for (auto _ : state) {
    if (!kernels::vector_erf(Device::kCPU, x.data(), y.data(), n).ok()) state.SkipWithError("vector_erf failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 2 * static_cast<int64_t>(sizeof(float)));
}

void isa_levels(benchmark::internal::Benchmark* b) {
  b->ArgName("isa")->Arg(0)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_layer_norm_bias_residual)->Apply(isa_levels);
BENCHMARK(BM_layer_norm_plain)->Apply(isa_levels);
BENCHMARK(BM_bias_gelu_erf)->Apply(isa_levels);
BENCHMARK(BM_bias_gelu_tanh)->Apply(isa_levels);
BENCHMARK(BM_masked_softmax)->Apply(isa_levels);
BENCHMARK(BM_masked_softmax_batched)->Apply(isa_levels);
BENCHMARK(BM_mean_pool)->Apply(isa_levels);
BENCHMARK(BM_l2_normalize)->Apply(isa_levels);
BENCHMARK(BM_vector_erf)->Apply(isa_levels);

}  // namespace
}  // namespace brisk
