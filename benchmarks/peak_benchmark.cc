// This machine's arithmetic peaks, the ceilings the GEMM benchmarks read against: AVX-512 fp32 FMA
// (vfmadd231ps zmm: 2 x 16 flops) and AVX-512 VNNI int8 (vpdpbusd zmm: 2 x 64 ops), on 1 and 2 threads.
// Each thread runs register-only chains on 24 independent accumulators (more than latency x throughput on
// current cores: 4-5 cycles x 2 per cycle), so nothing but the execution ports limits it; the rates are wall-clock
// (comparable with the GEMM benchmarks' GOP/s) and per thread-CPU-second (what the cores do while they run). The
// kernels carry their own target attributes, so this file needs no ISA flags; CPUs without the ISA skip the benchmark.
//
//   brisk_peak_benchmark --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 24;
constexpr int64_t kIterations = 1 << 20;  // x 24 instructions per thread and benchmark iteration (~7 ms)

// The loops are inline assembly: with intrinsics, GCC 12 copies the 24 accumulators between registers and the
// stack inside the loop, which measures its register allocator rather than the execution ports. zmm0-23 are
// the accumulators, zmm30/zmm31 the two operands.
#define BRISK_PEAK_OP24(op)                                                                                      \
  op " %%zmm31, %%zmm30, %%zmm0\n\t" op " %%zmm31, %%zmm30, %%zmm1\n\t" op " %%zmm31, %%zmm30, %%zmm2\n\t" op    \
     " %%zmm31, %%zmm30, %%zmm3\n\t" op " %%zmm31, %%zmm30, %%zmm4\n\t" op " %%zmm31, %%zmm30, %%zmm5\n\t" op    \
     " %%zmm31, %%zmm30, %%zmm6\n\t" op " %%zmm31, %%zmm30, %%zmm7\n\t" op " %%zmm31, %%zmm30, %%zmm8\n\t" op    \
     " %%zmm31, %%zmm30, %%zmm9\n\t" op " %%zmm31, %%zmm30, %%zmm10\n\t" op " %%zmm31, %%zmm30, %%zmm11\n\t" op  \
     " %%zmm31, %%zmm30, %%zmm12\n\t" op " %%zmm31, %%zmm30, %%zmm13\n\t" op " %%zmm31, %%zmm30, %%zmm14\n\t" op \
     " %%zmm31, %%zmm30, %%zmm15\n\t" op " %%zmm31, %%zmm30, %%zmm16\n\t" op " %%zmm31, %%zmm30, %%zmm17\n\t" op \
     " %%zmm31, %%zmm30, %%zmm18\n\t" op " %%zmm31, %%zmm30, %%zmm19\n\t" op " %%zmm31, %%zmm30, %%zmm20\n\t" op \
     " %%zmm31, %%zmm30, %%zmm21\n\t" op " %%zmm31, %%zmm30, %%zmm22\n\t" op " %%zmm31, %%zmm30, %%zmm23\n\t"

#define BRISK_PEAK_CLOBBERS                                                                                           \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", \
      "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm30", "xmm31", "cc"

// Zeroes the accumulators, broadcasts `operand` (32 bits) into zmm30 and zmm31, then runs `iterations` x 24 of
// op on independent chains. fp32: acc += 1e-3 * 1e-3 stays a small normal number; int8: the non-saturating
// int32 accumulators wrap harmlessly.
#define BRISK_PEAK_LOOP(op, operand, iterations)                                                    \
  do {                                                                                              \
    int64_t n = (iterations);                                                                       \
    const uint32_t bits = (operand);                                                                \
    asm volatile(                                                                                   \
        "vpxord %%zmm0, %%zmm0, %%zmm0\n\tvmovdqa64 %%zmm0, %%zmm1\n\tvmovdqa64 %%zmm0, %%zmm2\n\t" \
        "vmovdqa64 %%zmm0, %%zmm3\n\tvmovdqa64 %%zmm0, %%zmm4\n\tvmovdqa64 %%zmm0, %%zmm5\n\t"      \
        "vmovdqa64 %%zmm0, %%zmm6\n\tvmovdqa64 %%zmm0, %%zmm7\n\tvmovdqa64 %%zmm0, %%zmm8\n\t"      \
        "vmovdqa64 %%zmm0, %%zmm9\n\tvmovdqa64 %%zmm0, %%zmm10\n\tvmovdqa64 %%zmm0, %%zmm11\n\t"    \
        "vmovdqa64 %%zmm0, %%zmm12\n\tvmovdqa64 %%zmm0, %%zmm13\n\tvmovdqa64 %%zmm0, %%zmm14\n\t"   \
        "vmovdqa64 %%zmm0, %%zmm15\n\tvmovdqa64 %%zmm0, %%zmm16\n\tvmovdqa64 %%zmm0, %%zmm17\n\t"   \
        "vmovdqa64 %%zmm0, %%zmm18\n\tvmovdqa64 %%zmm0, %%zmm19\n\tvmovdqa64 %%zmm0, %%zmm20\n\t"   \
        "vmovdqa64 %%zmm0, %%zmm21\n\tvmovdqa64 %%zmm0, %%zmm22\n\tvmovdqa64 %%zmm0, %%zmm23\n\t"   \
        "vpbroadcastd %k[bits], %%zmm30\n\tvmovdqa64 %%zmm30, %%zmm31\n\t"                          \
        "1:\n\t" BRISK_PEAK_OP24(op) "dec %[n]\n\tjnz 1b\n\t"                                       \
        : [n] "+r"(n)                                                                               \
        : [bits] "r"(bits)                                                                          \
        : BRISK_PEAK_CLOBBERS);                                                                     \
  } while (0)

__attribute__((target("avx512f"))) int fma_chains(int64_t iterations) {
  BRISK_PEAK_LOOP("vfmadd231ps", 0x3a83126fu /* 1e-3f */, iterations);
  return 0;
}

__attribute__((target("avx512f,avx512vnni"))) int vnni_chains(int64_t iterations) {
  BRISK_PEAK_LOOP("vpdpbusd", 0x03030303u, iterations);
  return 0;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs `chains(kIterations)` on `threads` threads per benchmark iteration. Counters, for ops_per_instruction x
// the instructions issued: `counter` per wall-clock second, and `counter`_cpu per second of the threads' own CPU
// time times the thread count: what the threads reach while running, which a loaded machine's preemption
// does not lower (the wall-clock rate is the one to compare with other programs' wall-clock rates).
template <typename Result>
void run_peak(benchmark::State& state, Result (*chains)(int64_t), double ops_per_instruction, const char* counter) {
  const int threads = static_cast<int>(state.range(0));
  std::vector<Result> results(static_cast<size_t>(threads));
  std::vector<double> cpu_seconds(static_cast<size_t>(threads), 0.0);
  const auto run = [&](int t) {
    const double start = thread_cpu_seconds();
    results[t] = chains(kIterations);
    cpu_seconds[t] += thread_cpu_seconds() - start;
  };
  for (auto _ : state) {
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t) workers.emplace_back(run, t);
    run(0);
    for (std::thread& w : workers) w.join();
    benchmark::DoNotOptimize(results.data());
  }
  const double ops = ops_per_instruction * kChains * static_cast<double>(kIterations) * threads;
  state.counters[counter] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  double total_cpu = 0.0;
  for (const double s : cpu_seconds) total_cpu += s;
  const double mean_cpu_per_iteration = total_cpu / threads / static_cast<double>(state.iterations());
  if (mean_cpu_per_iteration > 0) state.counters[std::string(counter) + "_cpu"] = ops * 1e-9 / mean_cpu_per_iteration;
}

void BM_fp32_fma_peak(benchmark::State& state) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("this CPU lacks AVX-512");
    return;
  }
  run_peak(state, &fma_chains, 2.0 * 16, "GFLOP/s");
}

void BM_int8_vnni_peak(benchmark::State& state) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512vnni")) {
    state.SkipWithError("this CPU lacks AVX-512 VNNI");
    return;
  }
  run_peak(state, &vnni_chains, 2.0 * 64, "GOP/s");
}

BENCHMARK(BM_fp32_fma_peak)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_int8_vnni_peak)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
