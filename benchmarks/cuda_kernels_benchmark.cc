// The CUDA fused kernels against the device's memory bandwidth. First the device-to-device copy bandwidth is
// measured (copy_bytes of 256 MiB: bytes read + written per second); then each memory-bound kernel reports
//   bytes        the compulsory traffic of one launch (inputs read once, outputs written once; small vectors such
//                as bias/gamma/beta and the int32 ids count too)
//   GB/s         bytes / time per launch
//   bw_fraction  GB/s over the measured copy bandwidth (1.0 = as fast as a plain copy)
// Each iteration queues `reps` launches (enough for ~1 ms of traffic, so the launch and synchronize() overhead of a
// small kernel does not dominate) and then synchronizes; real time is reported.
//
//   brisk_cuda_kernels_benchmark --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Without a CUDA device the program prints "no CUDA device" and exits 0.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "brisk/core/allocator.h"
#include "brisk/core/half.h"
#include "brisk/kernels/copy.h"
#include "brisk/kernels/embedding.h"
#include "brisk/kernels/gelu.h"
#include "brisk/kernels/layernorm.h"
#include "brisk/kernels/pooling.h"
#include "brisk/kernels/quantize.h"
#include "brisk/kernels/softmax.h"

namespace brisk {
namespace {

double g_copy_bytes_per_second = 0.0;  // measured in main() before any benchmark runs

// A device allocation from brisk's caching allocator.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    StatusOr<void*> p = allocate(Device::kCUDA, std::max<size_t>(bytes, 1));
    if (p.ok()) ptr_ = *p;
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) deallocate(Device::kCUDA, ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  bool ok() const { return ptr_ != nullptr; }
  template <typename E>
  E* as() const {
    return static_cast<E*>(ptr_);
  }
  bool upload(const void* host) {
    return kernels::copy_bytes(Device::kCUDA, ptr_, Device::kCPU, host, bytes_).ok() &&
           kernels::synchronize(Device::kCUDA).ok();
  }

 private:
  size_t bytes_;
  void* ptr_ = nullptr;
};

template <typename T>
T from_float(float v) {
  if constexpr (std::is_same_v<T, float16_t>) return float16_t{float_to_f16(v)};
  if constexpr (std::is_same_v<T, bfloat16_t>) return bfloat16_t{float_to_bf16(v)};
  if constexpr (std::is_same_v<T, float>) return v;
}

// n random values of T in [lo, hi) on the device; null when allocating or uploading fails.
template <typename T>
std::unique_ptr<DeviceBuffer> random_array(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<T> host(n);
  for (T& v : host) v = from_float<T>(dist(rng));
  auto buf = std::make_unique<DeviceBuffer>(n * sizeof(T));
  if (!buf->ok() || !buf->upload(host.data())) return nullptr;
  return buf;
}

std::unique_ptr<DeviceBuffer> int_buffer(const std::vector<int32_t>& host) {
  auto buf = std::make_unique<DeviceBuffer>(host.size() * sizeof(int32_t));
  if (!buf->ok() || !buf->upload(host.data())) return nullptr;
  return buf;
}

// Runs `launch` reps times per iteration, synchronizing at the end of each, and sets the counters.
template <class Launch>
void run(benchmark::State& state, double bytes, Launch&& launch) {
  const int64_t reps = std::max<int64_t>(1, static_cast<int64_t>(256.0 * 1024 * 1024 / bytes));
  // Warm-up: first-launch costs (module loading) stay out of the timing, and errors show before it.
  Status s = launch();
  if (s.ok()) s = kernels::synchronize(Device::kCUDA);
  if (!s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (int64_t i = 0; i < reps; ++i) {
      s = launch();
      if (!s.ok()) break;
    }
    if (s.ok()) s = kernels::synchronize(Device::kCUDA);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double launches = static_cast<double>(state.iterations()) * static_cast<double>(reps);
  const double rate = bytes * launches / seconds;
  state.counters["bytes"] = bytes;
  state.counters["reps"] = static_cast<double>(reps);
  state.counters["us_per_launch"] = seconds / launches * 1e6;
  state.counters["GB/s"] = rate / 1e9;
  state.counters["bw_fraction"] = g_copy_bytes_per_second > 0.0 ? rate / g_copy_bytes_per_second : 0.0;
}

#define BRISK_REQUIRE_BUFFERS(...)                                 \
  do {                                                             \
    for (const auto* b : {__VA_ARGS__}) {                          \
      if (b == nullptr || !b->ok()) {                              \
        state.SkipWithError("device allocation or upload failed"); \
        return;                                                    \
      }                                                            \
    }                                                              \
  } while (0)

constexpr size_t kCopyBytes = size_t{256} << 20;

// Device-to-device copy of 256 MiB: the bandwidth every other kernel is compared with.
double measure_copy_bandwidth() {
  DeviceBuffer src(kCopyBytes), dst(kCopyBytes);
  if (!src.ok() || !dst.ok()) return 0.0;
  for (int i = 0; i < 3; ++i) {
    if (!kernels::copy_bytes(Device::kCUDA, dst.as<void>(), Device::kCUDA, src.as<void>(), kCopyBytes).ok()) return 0.0;
  }
  if (!kernels::synchronize(Device::kCUDA).ok()) return 0.0;
  constexpr int kReps = 20;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kReps; ++i) {
    if (!kernels::copy_bytes(Device::kCUDA, dst.as<void>(), Device::kCUDA, src.as<void>(), kCopyBytes).ok()) return 0.0;
  }
  if (!kernels::synchronize(Device::kCUDA).ok()) return 0.0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return 2.0 * static_cast<double>(kCopyBytes) * kReps / seconds;
}

void BM_copy_bytes_d2d(benchmark::State& state) {
  DeviceBuffer src(kCopyBytes), dst(kCopyBytes);
  BRISK_REQUIRE_BUFFERS(&src, &dst);
  run(state, 2.0 * kCopyBytes,
      [&] { return kernels::copy_bytes(Device::kCUDA, dst.as<void>(), Device::kCUDA, src.as<void>(), kCopyBytes); });
}
BENCHMARK(BM_copy_bytes_d2d)->UseRealTime();

// h = LN(x + b + h) in place on the residual stream: x and h read, h written.
template <typename T>
void BM_layer_norm_bias_residual(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const size_t n = static_cast<size_t>(rows * cols);
  std::unique_ptr<DeviceBuffer> x = random_array<T>(n, -1.0f, 1.0f, 1);
  std::unique_ptr<DeviceBuffer> h = random_array<T>(n, -1.0f, 1.0f, 2);
  std::unique_ptr<DeviceBuffer> b = random_array<T>(static_cast<size_t>(cols), -0.1f, 0.1f, 3);
  std::unique_ptr<DeviceBuffer> g = random_array<T>(static_cast<size_t>(cols), 0.9f, 1.1f, 4);
  std::unique_ptr<DeviceBuffer> be = random_array<T>(static_cast<size_t>(cols), -0.1f, 0.1f, 5);
  BRISK_REQUIRE_BUFFERS(x.get(), h.get(), b.get(), g.get(), be.get());
  const double bytes = static_cast<double>(sizeof(T)) * (3.0 * static_cast<double>(n) + 3.0 * cols);
  run(state, bytes, [&] {
    return kernels::layer_norm_bias_residual(Device::kCUDA, x->as<T>(), b->as<T>(), h->as<T>(), g->as<T>(), be->as<T>(),
                                             1e-12f, h->as<T>(), rows, cols);
  });
}
BENCHMARK_TEMPLATE(BM_layer_norm_bias_residual, float16_t)->Args({32 * 128, 384})->Args({16384, 1024})->UseRealTime();
BENCHMARK_TEMPLATE(BM_layer_norm_bias_residual, float)->Args({32 * 128, 384})->Args({16384, 1024})->UseRealTime();

// The same, also writing the int8 rows and their scales for the int8 linear layer that follows.
template <typename T>
void BM_layer_norm_bias_residual_quantize(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const size_t n = static_cast<size_t>(rows * cols);
  std::unique_ptr<DeviceBuffer> x = random_array<T>(n, -1.0f, 1.0f, 1);
  std::unique_ptr<DeviceBuffer> h = random_array<T>(n, -1.0f, 1.0f, 2);
  std::unique_ptr<DeviceBuffer> b = random_array<T>(static_cast<size_t>(cols), -0.1f, 0.1f, 3);
  std::unique_ptr<DeviceBuffer> g = random_array<T>(static_cast<size_t>(cols), 0.9f, 1.1f, 4);
  std::unique_ptr<DeviceBuffer> be = random_array<T>(static_cast<size_t>(cols), -0.1f, 0.1f, 5);
  DeviceBuffer q(n), scales(static_cast<size_t>(rows) * sizeof(float));
  BRISK_REQUIRE_BUFFERS(x.get(), h.get(), b.get(), g.get(), be.get(), &q, &scales);
  const double bytes = static_cast<double>(sizeof(T)) * (3.0 * static_cast<double>(n) + 3.0 * cols) +
                       static_cast<double>(n) + 4.0 * rows;
  run(state, bytes, [&] {
    return kernels::layer_norm_bias_residual_quantize(Device::kCUDA, x->as<T>(), b->as<T>(), h->as<T>(), g->as<T>(),
                                                      be->as<T>(), 1e-12f, h->as<T>(), q.as<int8_t>(),
                                                      scales.as<float>(), rows, cols);
  });
}
BENCHMARK_TEMPLATE(BM_layer_norm_bias_residual_quantize, float16_t)
    ->Args({32 * 128, 384})
    ->Args({16384, 1024})
    ->UseRealTime();

// x = gelu(x + b) in place: x read and written. arg 2: 0 erf, 1 tanh.
template <typename T>
void BM_bias_gelu(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const kernels::GeluApproximation approx =
      state.range(2) == 0 ? kernels::GeluApproximation::kErf : kernels::GeluApproximation::kTanh;
  state.SetLabel(approx == kernels::GeluApproximation::kErf ? "erf" : "tanh");
  const size_t n = static_cast<size_t>(rows * cols);
  std::unique_ptr<DeviceBuffer> x = random_array<T>(n, -3.0f, 3.0f, 1);
  std::unique_ptr<DeviceBuffer> b = random_array<T>(static_cast<size_t>(cols), -0.1f, 0.1f, 2);
  BRISK_REQUIRE_BUFFERS(x.get(), b.get());
  const double bytes = static_cast<double>(sizeof(T)) * (2.0 * static_cast<double>(n) + cols);
  // gelu(gelu(x)) stays in range, so repeated launches on the same buffer see ordinary values.
  run(state, bytes, [&] { return kernels::bias_gelu(Device::kCUDA, x->as<T>(), b->as<T>(), rows, cols, approx); });
}
BENCHMARK_TEMPLATE(BM_bias_gelu, float16_t)
    ->Args({32 * 128, 1536, 0})
    ->Args({32 * 128, 1536, 1})
    ->Args({16384, 4096, 0})
    ->Args({16384, 4096, 1})
    ->UseRealTime();

// Batched attention scores [batch, heads, seq, seq] with per-sequence lengths in [seq/2, seq]: the valid columns
// are read, every column of every row written.
template <typename T>
void BM_masked_softmax_batched(benchmark::State& state) {
  const int64_t batch = state.range(0), heads = state.range(1), seq = state.range(2);
  const int64_t rows_per_group = heads * seq;
  const size_t n = static_cast<size_t>(batch * rows_per_group * seq);
  std::unique_ptr<DeviceBuffer> x = random_array<T>(n, -4.0f, 4.0f, 1);
  std::vector<int32_t> lengths(static_cast<size_t>(batch));
  std::mt19937 rng(2);
  double valid = 0.0;
  for (int32_t& len : lengths) {
    len = static_cast<int32_t>(seq / 2 + static_cast<int64_t>(rng() % static_cast<uint32_t>(seq / 2 + 1)));
    valid += static_cast<double>(len);
  }
  auto d_lengths = int_buffer(lengths);
  BRISK_REQUIRE_BUFFERS(x.get(), d_lengths.get());
  const double bytes =
      static_cast<double>(sizeof(T)) * static_cast<double>(rows_per_group) * (valid + batch * seq) + 4.0 * batch;
  // Softmax of a softmax is a softmax: repeated launches stay finite.
  run(state, bytes, [&] {
    return kernels::masked_softmax_batched(Device::kCUDA, x->as<T>(), batch, rows_per_group, seq, seq,
                                           d_lengths->as<int32_t>(), 0.125f);
  });
}
BENCHMARK_TEMPLATE(BM_masked_softmax_batched, float16_t)->Args({32, 12, 128})->Args({16, 16, 512})->UseRealTime();

// The embedding layer: three gathered rows read per token (word, position, token type), the output written.
template <typename T>
void BM_embed_layer_norm(benchmark::State& state) {
  const int64_t rows = state.range(0), hidden = state.range(1);
  const int64_t vocab = 30522, max_positions = 512;
  std::unique_ptr<DeviceBuffer> word = random_array<T>(static_cast<size_t>(vocab * hidden), -0.1f, 0.1f, 1);
  std::unique_ptr<DeviceBuffer> position = random_array<T>(static_cast<size_t>(max_positions * hidden), -0.1f, 0.1f, 2);
  std::unique_ptr<DeviceBuffer> type = random_array<T>(static_cast<size_t>(2 * hidden), -0.1f, 0.1f, 3);
  std::unique_ptr<DeviceBuffer> gamma = random_array<T>(static_cast<size_t>(hidden), 0.9f, 1.1f, 4);
  std::unique_ptr<DeviceBuffer> beta = random_array<T>(static_cast<size_t>(hidden), -0.1f, 0.1f, 5);
  DeviceBuffer out(static_cast<size_t>(rows * hidden) * sizeof(T));
  std::vector<int32_t> ids(static_cast<size_t>(rows)), types(static_cast<size_t>(rows)),
      positions(static_cast<size_t>(rows));
  std::mt19937 rng(6);
  for (int64_t r = 0; r < rows; ++r) {
    ids[static_cast<size_t>(r)] = static_cast<int32_t>(rng() % vocab);
    types[static_cast<size_t>(r)] = static_cast<int32_t>(r % 2);
    positions[static_cast<size_t>(r)] = static_cast<int32_t>(r % 128);
  }
  auto d_ids = int_buffer(ids), d_types = int_buffer(types), d_positions = int_buffer(positions);
  BRISK_REQUIRE_BUFFERS(word.get(), position.get(), type.get(), gamma.get(), beta.get(), &out, d_ids.get(),
                        d_types.get(), d_positions.get());
  const kernels::EmbeddingTables<T> tables{word->as<T>(),  position->as<T>(), type->as<T>(),
                                           gamma->as<T>(), beta->as<T>(),     hidden};
  const double bytes = static_cast<double>(sizeof(T)) * 4.0 * static_cast<double>(rows * hidden) + 12.0 * rows;
  run(state, bytes, [&] {
    return kernels::embed_layer_norm(Device::kCUDA, tables, d_ids->as<int32_t>(), d_types->as<int32_t>(),
                                     d_positions->as<int32_t>(), 1e-12f, out.as<T>(), rows);
  });
}
BENCHMARK_TEMPLATE(BM_embed_layer_norm, float16_t)->Args({32 * 128, 384})->Args({16384, 1024})->UseRealTime();

// Mean pooling of packed sequences with L2 normalisation: every token row read once, fp32 embeddings written.
template <typename T>
void BM_pool_sequences(benchmark::State& state) {
  const int64_t batch = state.range(0), seq = state.range(1), dim = state.range(2);
  std::unique_ptr<DeviceBuffer> hidden = random_array<T>(static_cast<size_t>(batch * seq * dim), -1.0f, 1.0f, 1);
  std::vector<int32_t> starts(static_cast<size_t>(batch)), lengths(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    starts[static_cast<size_t>(b)] = static_cast<int32_t>(b * seq);
    lengths[static_cast<size_t>(b)] = static_cast<int32_t>(seq);
  }
  auto d_starts = int_buffer(starts), d_lengths = int_buffer(lengths);
  DeviceBuffer out(static_cast<size_t>(batch * dim) * sizeof(float));
  BRISK_REQUIRE_BUFFERS(hidden.get(), d_starts.get(), d_lengths.get(), &out);
  const double bytes = static_cast<double>(sizeof(T)) * static_cast<double>(batch * seq * dim) +
                       4.0 * static_cast<double>(batch * dim) + 8.0 * batch;
  const kernels::SequenceRows rows{d_starts->as<int32_t>(), d_lengths->as<int32_t>(), batch};
  run(state, bytes, [&] {
    return kernels::pool_sequences(Device::kCUDA, hidden->as<T>(), rows, dim, kernels::SequencePooling::kMean, true,
                                   out.as<float>());
  });
}
BENCHMARK_TEMPLATE(BM_pool_sequences, float16_t)->Args({32, 128, 384})->Args({128, 512, 1024})->UseRealTime();

// Row-wise int8 quantization: x read, q and the row scales written.
template <typename T>
void BM_quantize_rows_int8(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const size_t n = static_cast<size_t>(rows * cols);
  std::unique_ptr<DeviceBuffer> x = random_array<T>(n, -3.0f, 3.0f, 1);
  DeviceBuffer q(n), scales(static_cast<size_t>(rows) * sizeof(float));
  BRISK_REQUIRE_BUFFERS(x.get(), &q, &scales);
  const double bytes = static_cast<double>(sizeof(T) + 1) * static_cast<double>(n) + 4.0 * rows;
  run(state, bytes, [&] {
    return kernels::quantize_rows_int8(Device::kCUDA, x->as<T>(), rows, cols, q.as<int8_t>(), scales.as<float>());
  });
}
BENCHMARK_TEMPLATE(BM_quantize_rows_int8, float16_t)->Args({32 * 128, 384})->Args({16384, 1024})->UseRealTime();

// The int8 GEMM's dequantizing epilogue with the erf GeLU: int32 accumulators read, T written.
template <typename T>
void BM_dequantize_rows_int8(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const size_t n = static_cast<size_t>(rows * cols);
  std::vector<int32_t> acc(n);
  std::mt19937 rng(1);
  for (int32_t& a : acc) a = static_cast<int32_t>(rng() % 20001) - 10000;
  auto d_acc = int_buffer(acc);
  std::unique_ptr<DeviceBuffer> row_scales = random_array<float>(static_cast<size_t>(rows), 1e-3f, 2e-3f, 2);
  std::unique_ptr<DeviceBuffer> col_scales = random_array<float>(static_cast<size_t>(cols), 1e-2f, 2e-2f, 3);
  std::unique_ptr<DeviceBuffer> bias = random_array<T>(static_cast<size_t>(cols), -0.1f, 0.1f, 4);
  DeviceBuffer y(n * sizeof(T));
  BRISK_REQUIRE_BUFFERS(d_acc.get(), row_scales.get(), col_scales.get(), bias.get(), &y);
  const double bytes = static_cast<double>(4 + sizeof(T)) * static_cast<double>(n) + 4.0 * rows +
                       static_cast<double>(4 + sizeof(T)) * cols;
  run(state, bytes, [&] {
    return kernels::dequantize_rows_int8(Device::kCUDA, d_acc->as<int32_t>(), row_scales->as<float>(),
                                         col_scales->as<float>(), cols, bias->as<T>(),
                                         kernels::GemmEpilogue::kBiasGeluErf, y.as<T>(), cols, rows, cols);
  });
}
BENCHMARK_TEMPLATE(BM_dequantize_rows_int8, float16_t)->Args({16384, 4096})->UseRealTime();

}  // namespace
}  // namespace brisk

int main(int argc, char** argv) {
  if (brisk::cuda_device_count() == 0) {
    std::printf("no CUDA device\n");
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  brisk::g_copy_bytes_per_second = brisk::measure_copy_bandwidth();
  std::printf("device copy bandwidth (copy_bytes D2D, 256 MiB, read + written): %.1f GB/s\n",
              brisk::g_copy_bytes_per_second / 1e9);
  benchmark::AddCustomContext("copy_GB/s", std::to_string(brisk::g_copy_bytes_per_second / 1e9));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
