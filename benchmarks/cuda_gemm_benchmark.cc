// The CUDA Linear (cuBLASLt) at BERT-base's GEMM shapes with 4096 rows (a batch of 32 x 128 tokens): the fused QKV
// projection (k=384 -> n=1152), the FFN up (384 -> 1536) and down (1536 -> 384) projections of all-MiniLM-L6-v2's
// widths, in f16 and bf16 activations and with i8 weights (dynamic per-token quantization, IMMA, dequantization:
// the whole int8 Linear). Through the public API: Linear::create(..., Device::kCUDA, ..., activation) and forward.
//
// Each iteration queues kCallsPerIteration forwards on the thread's stream and waits for them, so the launch and
// synchronization overhead is amortized; the reported time is per call, and TFLOP/s counts 2 m n k per call.
// Without a GPU every benchmark skips with a message (exit status 0).
//
//   brisk_cuda_gemm_benchmark --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "brisk/core/allocator.h"
#include "brisk/core/half.h"
#include "brisk/kernels/copy.h"
#include "brisk/kernels/linear.h"

namespace brisk {
namespace {

constexpr int kCallsPerIteration = 50;

enum class Precision { kF16, kBF16, kInt8 };

template <typename T>
void run(benchmark::State& state, Precision precision) {
  if (cuda_device_count() == 0) {
    state.SkipWithError("no CUDA device: skipped");
    return;
  }
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const DType activation = std::is_same_v<T, float16_t> ? DType::kF16 : DType::kBF16;

  std::vector<float> w(static_cast<size_t>(n * k)), bias(static_cast<size_t>(n), 0.01f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 0.01f;
  std::vector<int8_t> wq(w.size());
  for (size_t i = 0; i < w.size(); ++i) wq[i] = static_cast<int8_t>(static_cast<int>(i % 255) - 127);
  std::vector<float> scale{0.001f};
  const Tensor bt = Tensor::borrow(bias.data(), {n}, DType::kF32);
  StatusOr<kernels::Linear> fc =
      precision == Precision::kInt8
          ? kernels::Linear::create(
                Tensor::borrow(wq.data(), {n, k}, DType::kI8), bt, Device::kCUDA,
                kernels::QuantScales{Tensor::borrow(scale.data(), {1}, DType::kF32), 0.0f, Tensor()}, activation)
          : kernels::Linear::create(Tensor::borrow(w.data(), {n, k}, DType::kF32), bt, Device::kCUDA, {}, activation);
  if (!fc.ok()) {
    state.SkipWithError(fc.status().ToString().c_str());
    return;
  }

  // Activations: host values converted once, then copied up.
  std::vector<T> x(static_cast<size_t>(m * k));
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.1f;
    x[i] = std::is_same_v<T, float16_t> ? T{float_to_f16(v)} : T{float_to_bf16(v)};
  }
  StatusOr<void*> dx = allocate(Device::kCUDA, x.size() * sizeof(T));
  StatusOr<void*> dy = allocate(Device::kCUDA, static_cast<size_t>(m * n) * sizeof(T));
  if (!dx.ok() || !dy.ok()) {
    state.SkipWithError("device allocation failed");
    return;
  }
  T* d_x = static_cast<T*>(*dx);
  T* d_y = static_cast<T*>(*dy);
  Status st = kernels::copy_bytes(Device::kCUDA, d_x, Device::kCPU, x.data(), x.size() * sizeof(T));
  if (st.ok()) st = fc->forward(d_x, m, d_y, kernels::GemmEpilogue::kBias);  // warm-up: plans, scratch blocks
  if (st.ok()) st = kernels::synchronize(Device::kCUDA);

  double seconds = 0.0;
  int64_t calls = 0;
  for (auto _ : state) {
    if (!st.ok()) break;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCallsPerIteration && st.ok(); ++i) st = fc->forward(d_x, m, d_y, kernels::GemmEpilogue::kBias);
    if (st.ok()) st = kernels::synchronize(Device::kCUDA);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(elapsed / kCallsPerIteration);
    seconds += elapsed;
    calls += kCallsPerIteration;
  }
  if (!st.ok()) state.SkipWithError(st.ToString().c_str());
  if (seconds > 0.0) {
    state.counters["TFLOP/s"] = 2.0 * double(m) * double(n) * double(k) * double(calls) / seconds / 1e12;
  }
  deallocate(Device::kCUDA, d_x);
  deallocate(Device::kCUDA, d_y);
}

void f16(benchmark::State& state) { run<float16_t>(state, Precision::kF16); }
void bf16(benchmark::State& state) { run<bfloat16_t>(state, Precision::kBF16); }
void int8_f16(benchmark::State& state) { run<float16_t>(state, Precision::kInt8); }

// {rows, in_features, out_features}
void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "k", "n"});
  b->Args({4096, 384, 1152});
  b->Args({4096, 384, 1536});
  b->Args({4096, 1536, 384});
  b->UseManualTime();
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(f16)->Apply(shapes);
BENCHMARK(bf16)->Apply(shapes);
BENCHMARK(int8_f16)->Apply(shapes);

}  // namespace
}  // namespace brisk
