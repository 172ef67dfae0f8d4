// brisk's dynamic-int8 GEMM (lib/kernels/cpu/int8_gemm.h, the kernel of the ISA level in use: BRISK_ISA caps it,
// the benchmark's label names it) against oneDNN's int8 matmul at the
// all-MiniLM-L6-v2 Linear shapes (k=384 -> n=384 / 1152 / 1536, k=1536 -> n=384) and m = 16 (one 16-token
// sentence), 128 and 4096 rows, on 2 threads and on 1. Both take the same input: activations already quantised
// (u8 +128 shifted for oneDNN and the VNNI kernels, s16 for the vpmaddwd ones), s8 weights packed once outside the
// timed loop, f32 output with per-channel scales and a bias.
//   brisk_int8:        int8_gemm, kBias epilogue (per-row x per-channel scales, bias).
//   brisk_int8_quant:  quantize_activations from f32 + int8_gemm: what a dynamic-int8 Linear costs end to end.
//   onednn_int8_zp:    matmul u8 x s8 -> f32, weights format_tag::any (reordered once), src zero point 128 (the
//                      same signed product as brisk's), per-channel output scales, bias. oneDNN 2.6's matmul
//                      takes no per-row scale, so it does slightly less epilogue work than brisk_int8.
//   onednn_int8:       the same without the zero point (its u8 x s8 product is not the signed one; shown as the
//                      best case oneDNN reaches).
//   paired:            brisk_int8 and onednn_int8_zp alternating call by call, with the ratio of their medians.
// Counters: GOP/s = 2 m n k per call over the run's wall time; median_us and GOP/s_median for the median call;
// on 1 thread GOP/s_cpu per second of the calling thread's CPU time (the robust figure on a loaded machine).
//
//   brisk_int8_gemm_benchmark --benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/cpu/int8_gemm.h"
#include "brisk/core/cpu_features.h"
#include "brisk/core/parallel.h"
#include "brisk/core/stats.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace brisk {
namespace {

namespace cpu = kernels::cpu;

struct Inputs {
  int64_t m, n, k;
  std::vector<float> x;   // [m, k]
  std::vector<int8_t> w;  // [n, k]
  std::vector<float> col_scales, bias;
};

Inputs make_inputs(const benchmark::State& state) {
  Inputs in;
  in.m = state.range(0);
  in.n = state.range(1);
  in.k = state.range(2);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> xd(-3.0f, 3.0f);
  std::uniform_int_distribution<int> wd(-127, 127);
  in.x.resize(static_cast<size_t>(in.m * in.k));
  for (float& v : in.x) v = xd(rng);
  in.w.resize(static_cast<size_t>(in.n * in.k));
  for (int8_t& v : in.w) v = static_cast<int8_t>(wd(rng));
  in.col_scales.assign(static_cast<size_t>(in.n), 0.01f);
  in.bias.assign(static_cast<size_t>(in.n), 0.5f);
  return in;
}

double ops_per_call(const Inputs& in) { return 2.0 * static_cast<double>(in.m * in.n * in.k); }

// brisk: weights packed and activations quantised at construction; call() runs int8_gemm (and, with
// with_quantize, quantize_activations first), on the kernel of the ISA level in use.
class BriskRunner {
 public:
  BriskRunner(const Inputs& in, bool with_quantize)
      : in_(in),
        with_quantize_(with_quantize),
        kernel_(cpu::int8_kernel_for(cpu_isa())),
        packed_(cpu::pack_int8_weights(in.w.data(), in.n, in.k)) {
    xq_.resize(static_cast<size_t>(in.m * packed_.k_padded * cpu::int8_activation_bytes(kernel_)));
    row_scales_.resize(static_cast<size_t>(in.m));
    y_.resize(static_cast<size_t>(in.m * in.n));
    cpu::quantize_activations(kernel_, in.x.data(), in.m, in.k, packed_.k_padded, xq_.data(), row_scales_.data());
  }
  const char* kernel_name() const { return cpu::int8_kernel_name(kernel_); }
  void call() {
    if (with_quantize_) {
      cpu::quantize_activations(kernel_, in_.x.data(), in_.m, in_.k, packed_.k_padded, xq_.data(), row_scales_.data());
    }
    cpu::int8_gemm(kernel_, xq_.data(), packed_.k_padded, row_scales_.data(), in_.m, packed_, in_.col_scales.data(),
                   in_.bias.data(), cpu::Int8Epilogue::kBias, y_.data(), in_.n);
    benchmark::DoNotOptimize(y_.data());
    benchmark::ClobberMemory();
  }

 private:
  const Inputs& in_;
  bool with_quantize_;
  cpu::Int8Kernel kernel_;
  cpu::Int8PackedWeights packed_;
  std::vector<uint8_t> xq_;
  std::vector<float> row_scales_, y_;
};

// oneDNN: the matmul primitive built and the weights reordered to its chosen layout at construction; call()
// executes it. error() is non-empty when oneDNN has no implementation.
class OnednnRunner {
 public:
  OnednnRunner(const Inputs& in, bool zero_point) : eng_(dnnl::engine::kind::cpu, 0), stream_(eng_) {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    xq_.resize(static_cast<size_t>(in.m * in.k));
    for (size_t i = 0; i < xq_.size(); ++i) xq_[i] = static_cast<uint8_t>(static_cast<int>(in.x[i] * 40) + 128);
    y_.resize(static_cast<size_t>(in.m * in.n));
    const dnnl::memory::desc src_md({in.m, in.k}, dt::u8, tag::ab);
    const dnnl::memory::desc any_w_md({in.k, in.n}, dt::s8, tag::any);
    const dnnl::memory::desc plain_w_md({in.k, in.n}, dt::s8, dnnl::memory::dims{1, in.k});  // PyTorch's [n, k]
    const dnnl::memory::desc bias_md({1, in.n}, dt::f32, tag::ab);
    const dnnl::memory::desc dst_md({in.m, in.n}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    attr.set_output_scales(1 << 1, in.col_scales);  // per output channel
    if (zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {128});
    dnnl::matmul::primitive_desc pd;
    try {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, any_w_md, bias_md, dst_md), attr, eng_);
    } catch (const dnnl::error& e) {
      error_ = e.what();
      return;
    }
    impl_ = pd.impl_info_str();
    dnnl::memory plain_w(plain_w_md, eng_, const_cast<int8_t*>(in.w.data()));
    dnnl::memory packed_w(pd.weights_desc(), eng_);
    dnnl::reorder(plain_w, packed_w).execute(stream_, plain_w, packed_w);
    stream_.wait();
    args_ = {{DNNL_ARG_SRC, dnnl::memory(src_md, eng_, xq_.data())},
             {DNNL_ARG_WEIGHTS, packed_w},
             {DNNL_ARG_BIAS, dnnl::memory(bias_md, eng_, const_cast<float*>(in.bias.data()))},
             {DNNL_ARG_DST, dnnl::memory(dst_md, eng_, y_.data())}};
    matmul_ = dnnl::matmul(pd);
  }
  const std::string& error() const { return error_; }
  const std::string& impl() const { return impl_; }
  void call() {
    matmul_.execute(stream_, args_);
    stream_.wait();
    benchmark::DoNotOptimize(y_.data());
    benchmark::ClobberMemory();
  }

 private:
  dnnl::engine eng_;
  dnnl::stream stream_;
  dnnl::matmul matmul_;
  std::unordered_map<int, dnnl::memory> args_;
  std::vector<uint8_t> xq_;
  std::vector<float> y_;
  std::string error_, impl_;
};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <typename Runner>
double timed_call(Runner& runner) {
  const auto start = std::chrono::steady_clock::now();
  runner.call();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Counters: GOP/s over the whole run (wall clock), and the median call's latency (median_us) and rate
// (GOP/s_median): on a shared machine a preempted OpenMP worker stalls the calls it is part of for a scheduler
// tick, which drags the mean far more than the median. On 1 thread, where the calling thread does all the work,
// also GOP/s_cpu: per second of that thread's CPU time, which preemption does not inflate.
template <typename Runner>
void timed_loop(benchmark::State& state, const Inputs& in, Runner& runner) {
  std::vector<double> wall;
  wall.reserve(1 << 16);
  const double cpu_start = thread_cpu_seconds();
  for (auto _ : state) wall.push_back(timed_call(runner));
  const double cpu = thread_cpu_seconds() - cpu_start;
  const double ops = ops_per_call(in);
  state.counters["GOP/s"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const double mid = brisk::percentile(wall, 50);
  state.counters["median_us"] = mid * 1e6;
  if (mid > 0) state.counters["GOP/s_median"] = ops * 1e-9 / mid;
  if (state.range(3) == 1 && cpu > 0) {
    state.counters["GOP/s_cpu"] = ops * 1e-9 * static_cast<double>(wall.size()) / cpu;
  }
}

bool have_vector_kernel(benchmark::State& state) {
  if (cpu_isa() >= CpuIsa::kAvx2) return true;
  state.SkipWithError("the ISA level is scalar: int8_gemm would run its scalar reference");
  return false;
}

void BM_brisk_int8(benchmark::State& state, bool with_quantize) {
  if (!have_vector_kernel(state)) return;
  ScopedNumThreads threads(static_cast<int>(state.range(3)));
  const Inputs in = make_inputs(state);
  BriskRunner runner(in, with_quantize);
  state.SetLabel(runner.kernel_name());
  timed_loop(state, in, runner);
}

void BM_onednn_int8(benchmark::State& state, bool zero_point) {
  ScopedNumThreads threads(static_cast<int>(state.range(3)));  // oneDNN (OpenMP) sizes its team from this
  const Inputs in = make_inputs(state);
  OnednnRunner runner(in, zero_point);
  if (!runner.error().empty()) {
    state.SkipWithError(runner.error().c_str());
    return;
  }
  state.SetLabel(runner.impl());
  timed_loop(state, in, runner);
}

// brisk_int8 and onednn_int8_zp called alternately in one loop (one iteration = one call of each), so both see
// the same machine load: the fairest ratio on a shared machine. Counters: each one's median call and the ratio
// of the medians (brisk_speedup > 1: brisk faster).
void BM_paired(benchmark::State& state) {
  if (!have_vector_kernel(state)) return;
  ScopedNumThreads threads(static_cast<int>(state.range(3)));
  const Inputs in = make_inputs(state);
  BriskRunner brisk(in, false);
  OnednnRunner onednn(in, true);
  if (!onednn.error().empty()) {
    state.SkipWithError(onednn.error().c_str());
    return;
  }
  std::vector<double> brisk_s, onednn_s;
  brisk_s.reserve(1 << 16);
  onednn_s.reserve(1 << 16);
  for (auto _ : state) {
    brisk_s.push_back(timed_call(brisk));
    onednn_s.push_back(timed_call(onednn));
  }
  const double b = brisk::percentile(brisk_s, 50);
  const double o = brisk::percentile(onednn_s, 50);
  if (b <= 0 || o <= 0) return;
  state.counters["brisk_GOP/s"] = ops_per_call(in) * 1e-9 / b;
  state.counters["onednn_zp_GOP/s"] = ops_per_call(in) * 1e-9 / o;
  state.counters["brisk_speedup"] = o / b;
}

// Registered shape by shape, the variants next to each other, so that each comparison runs close in time
// on a shared machine; then every shape again on 1 thread, where the calling thread's CPU time is the whole
// cost, whatever the load.
const bool kRegistered = [] {
  const std::pair<int64_t, int64_t> nk[] = {{384, 384}, {1152, 384}, {1536, 384}, {384, 1536}};
  for (const int64_t threads : {2, 1}) {
    for (const int64_t m : {16, 128, 4096}) {
      for (const auto& [n, k] : nk) {
        const std::vector<int64_t> args = {m, n, k, threads};
        const std::vector<std::string> names = {"m", "n", "k", "threads"};
        benchmark::RegisterBenchmark("brisk_int8", BM_brisk_int8, false)->ArgNames(names)->Args(args)->UseRealTime();
        benchmark::RegisterBenchmark("brisk_int8_quant", BM_brisk_int8, true)
            ->ArgNames(names)
            ->Args(args)
            ->UseRealTime();
        benchmark::RegisterBenchmark("onednn_int8_zp", BM_onednn_int8, true)
            ->ArgNames(names)
            ->Args(args)
            ->UseRealTime();
        benchmark::RegisterBenchmark("onednn_int8", BM_onednn_int8, false)->ArgNames(names)->Args(args)->UseRealTime();
        benchmark::RegisterBenchmark("paired", BM_paired)->ArgNames(names)->Args(args)->UseRealTime();
      }
    }
  }
  return true;
}();

}  // namespace
}  // namespace brisk
