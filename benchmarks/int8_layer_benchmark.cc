// Where the time of one dynamic-int8 MiniLM-L6 encoder layer goes, op by op, on the int8 kernel of the ISA level in
// use (BRISK_ISA caps it; each benchmark's label names the kernel): the four per-token quantize passes, the four
// int8 GEMMs with their fused epilogues (QKV, attention output + residual, FFN up + GeLU, FFN down + residual), the
// self-attention in fp32 and in int8 (the encoder runs int8 where int8_attention_preferred(): the AVX-512 levels), and
// the two LayerNorms; at B x T = 32 x 128 (4096 tokens) and 1 x 16, 2 threads. Multiply by
// the 6 layers and compare with brisk bench's whole pass for the rest (embeddings, pooling, batching).
//   BRISK_ISA=avx2 DNNL_MAX_CPU_ISA=AVX2 build/release/benchmarks/brisk_int8_layer_benchmark
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only   (one command line)
// Counters: GOP/s (2 m n k per call) for the GEMMs, GB/s (bytes read and written) for the quantize passes.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "kernels/cpu/int8_gemm.h"
#include "brisk/core/cpu_features.h"
#include "brisk/core/parallel.h"
#include "brisk/kernels/attention.h"
#include "brisk/kernels/layernorm.h"
#include "test_util.h"

namespace {

namespace cpu = brisk::kernels::cpu;

constexpr int64_t kHidden = 384, kInter = 1536, kHeads = 12;

struct Shape {
  int64_t batch, seq;
  int64_t tokens() const { return batch * seq; }
};
Shape shape_of(const benchmark::State& state) { return {state.range(0), state.range(1)}; }

std::vector<float> random_vector(size_t n, float scale, uint32_t seed = 7) {
  return brisk::testing::random_floats(n, -scale, scale, seed);
}

std::vector<int8_t> random_weights(int64_t n, int64_t k) {
  std::vector<int8_t> w(static_cast<size_t>(n * k));
  uint32_t s = 12345;
  for (int8_t& v : w) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<int8_t>(static_cast<int>(s >> 24) % 255 - 127);
  }
  return w;
}

bool vector_kernel(benchmark::State& state, cpu::Int8Kernel kernel) {
  if (kernel != cpu::Int8Kernel::kScalar) {
    state.SetLabel(cpu::int8_kernel_name(kernel));
    return true;
  }
  state.SkipWithError("the ISA level is scalar: the int8 kernels would run their scalar reference");
  return false;
}

// args: B, T, k (the input width: 384 for QKV, attention output and FFN up; 1536 for FFN down)
void BM_QuantizePass(benchmark::State& state) {
  brisk::set_num_threads(2);
  const cpu::Int8Kernel kernel = cpu::int8_kernel_for(brisk::cpu_isa());
  if (!vector_kernel(state, kernel)) return;
  const int64_t m = shape_of(state).tokens(), k = state.range(2);
  const auto x = random_vector(static_cast<size_t>(m * k), 3.0f);
  std::vector<uint8_t> xq(static_cast<size_t>(m * k * cpu::int8_activation_bytes(kernel)));
  std::vector<float> scales(static_cast<size_t>(m));
  for (auto _ : state) {
    cpu::quantize_activations(kernel, x.data(), m, k, k, xq.data(), scales.data());
    benchmark::ClobberMemory();
  }
  const double bytes = static_cast<double>(m * k) * (4.0 + static_cast<double>(cpu::int8_activation_bytes(kernel)));
  state.counters["GB/s"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// args: B, T, n, k, epilogue
void BM_Int8Gemm(benchmark::State& state) {
  brisk::set_num_threads(2);
  const cpu::Int8Kernel kernel = cpu::int8_kernel_for(brisk::cpu_isa());
  if (!vector_kernel(state, kernel)) return;
  const int64_t m = shape_of(state).tokens(), n = state.range(2), k = state.range(3);
  const auto epilogue = static_cast<cpu::Int8Epilogue>(state.range(4));
  const auto w = random_weights(n, k);
  const cpu::Int8PackedWeights packed = cpu::pack_int8_weights(w.data(), n, k);
  const auto x = random_vector(static_cast<size_t>(m * k), 3.0f);
  std::vector<uint8_t> xq(static_cast<size_t>(m * packed.k_padded * cpu::int8_activation_bytes(kernel)));
  std::vector<float> row_scales(static_cast<size_t>(m));
  cpu::quantize_activations(kernel, x.data(), m, k, packed.k_padded, xq.data(), row_scales.data());
  const std::vector<float> col_scales(static_cast<size_t>(n), 0.01f);
  const auto bias = random_vector(static_cast<size_t>(n), 0.5f);
  std::vector<float> y(static_cast<size_t>(m * n), 0.0f);
  for (auto _ : state) {
    cpu::int8_gemm(kernel, xq.data(), packed.k_padded, row_scales.data(), m, packed, col_scales.data(), bias.data(),
                   epilogue, y.data(), n);
    benchmark::ClobberMemory();
  }
  state.counters["GOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(m * n * k), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// args: B, T; int8: brisk::kernels::self_attention_int8, else the float op.
template <bool kInt8>
void BM_Attention(benchmark::State& state) {
  brisk::set_num_threads(2);
  const Shape s = shape_of(state);
  const int64_t n = s.tokens();
  const auto qkv = random_vector(static_cast<size_t>(n * 3 * kHidden), 1.0f);
  std::vector<float> ctx(static_cast<size_t>(n * kHidden));
  std::vector<int32_t> starts, lengths;
  for (int64_t b = 0; b < s.batch; ++b) {
    starts.push_back(static_cast<int32_t>(b * s.seq));
    lengths.push_back(static_cast<int32_t>(s.seq));
  }
  const brisk::kernels::AttentionRows rows{starts.data(), lengths.data(), s.batch, s.seq};
  for (auto _ : state) {
    const brisk::Status st = kInt8 ? brisk::kernels::self_attention_int8(brisk::Device::kCPU, qkv.data(), rows, n,
                                                                         kHeads, kHidden / kHeads, ctx.data())
                                   : brisk::kernels::self_attention(brisk::Device::kCPU, qkv.data(), nullptr, rows, n,
                                                                    kHeads, kHidden / kHeads, ctx.data());
    if (!st.ok()) {
      state.SkipWithError("attention failed");
    }
    benchmark::ClobberMemory();
  }
}

// args: B, T
void BM_LayerNorm(benchmark::State& state) {
  brisk::set_num_threads(2);
  const int64_t n = shape_of(state).tokens();
  auto x = random_vector(static_cast<size_t>(n * kHidden), 3.0f);
  const auto gamma = random_vector(kHidden, 1.0f), beta = random_vector(kHidden, 1.0f);
  for (auto _ : state) {
    if (!brisk::kernels::layer_norm_bias_residual(brisk::Device::kCPU, x.data(), nullptr, nullptr, gamma.data(),
                                                  beta.data(), 1e-12f, x.data(), n, kHidden)
             .ok()) {
      state.SkipWithError("layer_norm_bias_residual failed");
    }
    benchmark::ClobberMemory();
  }
}

const bool kRegistered = [] {
  using E = cpu::Int8Epilogue;
  for (const auto& [b, t] : {std::pair<int64_t, int64_t>{32, 128}, {1, 16}}) {
    const std::vector<std::string> shape_names = {"B", "T"};
    for (const int64_t k : {kHidden, kInter}) {
      benchmark::RegisterBenchmark("quantize", BM_QuantizePass)
          ->ArgNames({"B", "T", "k"})
          ->Args({b, t, k})
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
    const std::vector<std::vector<int64_t>> gemms = {{3 * kHidden, kHidden, static_cast<int64_t>(E::kBias)},
                                                     {kHidden, kHidden, static_cast<int64_t>(E::kBiasAccumulate)},
                                                     {kInter, kHidden, static_cast<int64_t>(E::kBiasGeluErf)},
                                                     {kHidden, kInter, static_cast<int64_t>(E::kBiasAccumulate)}};
    for (const auto& g : gemms) {
      benchmark::RegisterBenchmark("int8_gemm", BM_Int8Gemm)
          ->ArgNames({"B", "T", "n", "k", "epi"})
          ->Args({b, t, g[0], g[1], g[2]})
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
    for (const bool int8 : {false, true}) {
      benchmark::RegisterBenchmark(int8 ? "attention_int8" : "attention_fp32",
                                   int8 ? BM_Attention<true> : BM_Attention<false>)
          ->ArgNames(shape_names)
          ->Args({b, t})
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
    benchmark::RegisterBenchmark("layer_norm", BM_LayerNorm)
        ->ArgNames(shape_names)
        ->Args({b, t})
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  return true;
}();

}  // namespace
