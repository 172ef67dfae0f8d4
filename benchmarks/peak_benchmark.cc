// This machine's arithmetic peaks at each ISA level, the ceilings the encoder and GEMM benchmarks read against
// (scripts/bench-compare divides by the fp32 FMA peak of the ISA level in use), on 1 and 2 threads:
//
//   benchmark                  level         one step (register-only)                ops per step (2 per mul-add)
//   BM_fp32_fma_peak_avx2      avx2          vfmadd231ps ymm                          2 x 8 flops
//   BM_int8_peak_avx2          avx2          vpmaddubsw + vpmaddwd (ones) + vpaddd ymm  2 x 32 (u8 x s8)
//   BM_int16_peak_avx2         avx2          vpmaddwd + vpaddd ymm                    2 x 16 (s16 x s16)
//   BM_int8_peak_avx_vnni      avx_vnni      {vex} vpdpbusd ymm                       2 x 32
//   BM_fp32_fma_peak_avx512    avx512        vfmadd231ps zmm                          2 x 16 flops
//   BM_int8_peak_avx512        avx512        vpmaddubsw + vpmaddwd (ones) + vpaddd zmm  2 x 64
//   BM_int16_peak_avx512       avx512        vpmaddwd + vpaddd zmm (AVX-512BW)        2 x 32
//   BM_int8_peak_avx512_vnni   avx512_vnni   vpdpbusd zmm                             2 x 64
//   BM_bf16_peak_avx512_bf16   avx512_bf16   vdpbf16ps zmm                            2 x 32 flops
//
// A peak runs only where its level is in use: brisk::cpu_isa() (the CPU's best level, capped by BRISK_ISA) is at or
// above it (and, for avx_vnni, the CPU has AVX-VNNI); otherwise the benchmark is skipped with an error that says
// why, so that no figure is ever computed on a level the library would not run. The level in use, the CPU and the
// name of the fp32 peak that bench-compare divides by are in the JSON context (brisk_isa, brisk_cpu,
// brisk_fp32_peak).
//
// Each thread runs register-only chains on independent accumulators, more of them than latency x throughput on
// current cores (FMA: 4-5 cycles x 2 per cycle), so nothing but the execution ports limits it. The int8 and int16
// steps write a temporary per step (renamed, so the steps of one accumulator overlap); only vpaddd carries from
// one iteration to the next. The rates are wall-clock (comparable with the other benchmarks' GOP/s) and per
// thread-CPU-second (what the cores do while they run). The kernels carry their own target attributes, so this
// file needs no ISA flags.
//
//   brisk_peak_benchmark --benchmark_min_time=0.2
//   BRISK_ISA=avx2 brisk_peak_benchmark         # the AVX2 peaks only, as an AVX2-only CPU runs
#include <benchmark/benchmark.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "brisk/core/cpu_features.h"

namespace {

using brisk::CpuIsa;

constexpr int64_t kIterations = 1 << 20;  // loop iterations per thread and benchmark iteration (a few ms)

// The loops are inline assembly: with intrinsics, GCC 12 copies the accumulators between registers and the stack
// inside the loop, which measures its register allocator rather than the execution ports. Operands are broadcast
// from three 32-bit values: ymm13-15 (AVX2) or zmm29-31 (AVX-512).
// clang-format off
#define BRISK_STR(x) #x
#define BRISK_Y(n) "%%ymm" BRISK_STR(n)
#define BRISK_Z(n) "%%zmm" BRISK_STR(n)

// op src2, src1, acc on accumulator n.
#define BRISK_ACC_Y(op, n) op " %%ymm15, %%ymm14, " BRISK_Y(n) "\n\t"
#define BRISK_ACC_Z(op, n) op " %%zmm31, %%zmm30, " BRISK_Z(n) "\n\t"
#define BRISK_ACC12(M, op) \
  M(op, 0) M(op, 1) M(op, 2) M(op, 3) M(op, 4) M(op, 5) M(op, 6) M(op, 7) M(op, 8) M(op, 9) M(op, 10) M(op, 11)
#define BRISK_ACC24(M, op) BRISK_ACC12(M, op) \
  M(op, 12) M(op, 13) M(op, 14) M(op, 15) M(op, 16) M(op, 17) M(op, 18) M(op, 19) M(op, 20) M(op, 21) M(op, 22) M(op, 23)

// int8 step: t = pairwise u8 x s8 (int16); t = pairwise t x 1 (int32); acc += t.
#define BRISK_I8_Y(acc, t)                                  \
  "vpmaddubsw %%ymm14, %%ymm13, " BRISK_Y(t) "\n\t"         \
  "vpmaddwd %%ymm15, " BRISK_Y(t) ", " BRISK_Y(t) "\n\t"    \
  "vpaddd " BRISK_Y(t) ", " BRISK_Y(acc) ", " BRISK_Y(acc) "\n\t"
#define BRISK_I8_Z(acc, t)                                  \
  "vpmaddubsw %%zmm30, %%zmm29, " BRISK_Z(t) "\n\t"         \
  "vpmaddwd %%zmm31, " BRISK_Z(t) ", " BRISK_Z(t) "\n\t"    \
  "vpaddd " BRISK_Z(t) ", " BRISK_Z(acc) ", " BRISK_Z(acc) "\n\t"
// int16 step: t = pairwise s16 x s16 (int32); acc += t.
#define BRISK_I16_Y(acc, t)                                 \
  "vpmaddwd %%ymm15, %%ymm14, " BRISK_Y(t) "\n\t"           \
  "vpaddd " BRISK_Y(t) ", " BRISK_Y(acc) ", " BRISK_Y(acc) "\n\t"
#define BRISK_I16_Z(acc, t)                                 \
  "vpmaddwd %%zmm31, %%zmm30, " BRISK_Z(t) "\n\t"           \
  "vpaddd " BRISK_Z(t) ", " BRISK_Z(acc) ", " BRISK_Z(acc) "\n\t"
// 12 steps on 6 accumulators (AVX2: ymm0-5, temporaries ymm6-11) or 12 (AVX-512: zmm0-11, temporaries zmm12-23).
#define BRISK_STEPS12_Y(S) \
  S(0, 6) S(1, 7) S(2, 8) S(3, 9) S(4, 10) S(5, 11) S(0, 6) S(1, 7) S(2, 8) S(3, 9) S(4, 10) S(5, 11)
#define BRISK_STEPS12_Z(S) \
  S(0, 12) S(1, 13) S(2, 14) S(3, 15) S(4, 16) S(5, 17) S(6, 18) S(7, 19) S(8, 20) S(9, 21) S(10, 22) S(11, 23)
// clang-format on

// Zeroed accumulators (the int32 ones wrap harmlessly; fp32: acc += 1e-3 x 1e-3 stays a small normal number).
#define BRISK_ZERO_Y                                                                                               \
  "vpxor %%xmm0, %%xmm0, %%xmm0\n\tvmovdqa %%ymm0, %%ymm1\n\tvmovdqa %%ymm0, %%ymm2\n\tvmovdqa %%ymm0, %%ymm3\n\t" \
  "vmovdqa %%ymm0, %%ymm4\n\tvmovdqa %%ymm0, %%ymm5\n\tvmovdqa %%ymm0, %%ymm6\n\tvmovdqa %%ymm0, %%ymm7\n\t"       \
  "vmovdqa %%ymm0, %%ymm8\n\tvmovdqa %%ymm0, %%ymm9\n\tvmovdqa %%ymm0, %%ymm10\n\tvmovdqa %%ymm0, %%ymm11\n\t"
#define BRISK_MOV_Z(op, n) "vmovdqa64 %%zmm0, %%zmm" BRISK_STR(n) "\n\t"
#define BRISK_ZERO_Z "vpxord %%zmm0, %%zmm0, %%zmm0\n\t" BRISK_ACC24(BRISK_MOV_Z, )
#define BRISK_OPERANDS_Y                                                              \
  "vmovd %k[a], %%xmm13\n\tvpbroadcastd %%xmm13, %%ymm13\n\tvmovd %k[b], %%xmm14\n\t" \
  "vpbroadcastd %%xmm14, %%ymm14\n\tvmovd %k[c], %%xmm15\n\tvpbroadcastd %%xmm15, %%ymm15\n\t"
#define BRISK_OPERANDS_Z "vpbroadcastd %k[a], %%zmm29\n\tvpbroadcastd %k[b], %%zmm30\n\tvpbroadcastd %k[c], %%zmm31\n\t"

#define BRISK_CLOBBERS_Y                                                                                              \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", \
      "xmm14", "xmm15", "cc"
#define BRISK_CLOBBERS_Z                                                                                               \
  BRISK_CLOBBERS_Y, "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", \
      "xmm27", "xmm28", "xmm29", "xmm30", "xmm31"

// Runs `iterations` loop iterations of `body` after `setup`; a, b, c are the broadcast operands.
#define BRISK_PEAK_LOOP(setup, body, clobbers, a_, b_, c_, iterations)      \
  do {                                                                      \
    int64_t n = (iterations);                                               \
    const uint32_t a = (a_), b = (b_), c = (c_);                            \
    asm volatile(setup "1:\n\t" body "dec %[n]\n\tjnz 1b\n\tvzeroupper\n\t" \
                 : [n] "+r"(n)                                              \
                 : [a] "r"(a), [b] "r"(b), [c] "r"(c)                       \
                 : clobbers);                                               \
  } while (0)

constexpr uint32_t kFp32Milli = 0x3a83126fu;  // 1e-3f
constexpr uint32_t kBf16Milli = 0x3a833a83u;  // two bf16 1e-3 (0x3a83)
constexpr uint32_t kBytes3 = 0x03030303u;     // four u8/s8 3s
constexpr uint32_t kWords3 = 0x00030003u;     // two int16 3s
constexpr uint32_t kWords1 = 0x00010001u;     // two int16 1s: vpmaddwd with it adds int16 pairs into int32

__attribute__((target("avx2,fma"))) int fp32_fma_avx2(int64_t iterations) {
  BRISK_PEAK_LOOP(BRISK_ZERO_Y BRISK_OPERANDS_Y, BRISK_ACC12(BRISK_ACC_Y, "vfmadd231ps"), BRISK_CLOBBERS_Y, 0,
                  kFp32Milli, kFp32Milli, iterations);
  return 0;
}

__attribute__((target("avx2"))) int int8_avx2(int64_t iterations) {
  BRISK_PEAK_LOOP(BRISK_ZERO_Y BRISK_OPERANDS_Y, BRISK_STEPS12_Y(BRISK_I8_Y), BRISK_CLOBBERS_Y, kBytes3, kBytes3,
                  kWords1, iterations);
  return 0;
}

__attribute__((target("avx2"))) int int16_avx2(int64_t iterations) {
  BRISK_PEAK_LOOP(BRISK_ZERO_Y BRISK_OPERANDS_Y, BRISK_STEPS12_Y(BRISK_I16_Y), BRISK_CLOBBERS_Y, 0, kWords3, kWords3,
                  iterations);
  return 0;
}

__attribute__((target("avx2,avxvnni"))) int int8_avx_vnni(int64_t iterations) {
  BRISK_PEAK_LOOP(BRISK_ZERO_Y BRISK_OPERANDS_Y, BRISK_ACC12(BRISK_ACC_Y, "%{vex%} vpdpbusd"), BRISK_CLOBBERS_Y, 0,
                  kBytes3, kBytes3, iterations);
  return 0;
}

__attribute__((target("avx512f"))) int fp32_fma_avx512(int64_t iterations) {
  BRISK_PEAK_LOOP(BRISK_ZERO_Z BRISK_OPERANDS_Z, BRISK_ACC24(BRISK_ACC_Z, "vfmadd231ps"), BRISK_CLOBBERS_Z, 0,
                  kFp32Milli, kFp32Milli, iterations);
  return 0;
}

__attribute__((target("avx512f,avx512bw"))) int int8_avx512(int64_t iterations) {
  BRISK_PEAK_LOOP(BRISK_ZERO_Z BRISK_OPERANDS_Z, BRISK_STEPS12_Z(BRISK_I8_Z), BRISK_CLOBBERS_Z, kBytes3, kBytes3,
                  kWords1, iterations);
  return 0;
}

__attribute__((target("avx512f,avx512bw"))) int int16_avx512(int64_t iterations) {
  BRISK_PEAK_LOOP(BRISK_ZERO_Z BRISK_OPERANDS_Z, BRISK_STEPS12_Z(BRISK_I16_Z), BRISK_CLOBBERS_Z, 0, kWords3, kWords3,
                  iterations);
  return 0;
}

__attribute__((target("avx512f,avx512vnni"))) int int8_avx512_vnni(int64_t iterations) {
  BRISK_PEAK_LOOP(BRISK_ZERO_Z BRISK_OPERANDS_Z, BRISK_ACC24(BRISK_ACC_Z, "vpdpbusd"), BRISK_CLOBBERS_Z, 0, kBytes3,
                  kBytes3, iterations);
  return 0;
}

__attribute__((target("avx512f,avx512bf16"))) int bf16_avx512_bf16(int64_t iterations) {
  BRISK_PEAK_LOOP(BRISK_ZERO_Z BRISK_OPERANDS_Z, BRISK_ACC24(BRISK_ACC_Z, "vdpbf16ps"), BRISK_CLOBBERS_Z, 0, kBf16Milli,
                  kBf16Milli, iterations);
  return 0;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Whether `level` is in use (see the top); otherwise skips the benchmark, saying why.
bool level_in_use(benchmark::State& state, CpuIsa level) {
  const CpuIsa in_use = brisk::cpu_isa();
  if (in_use >= level && (level != CpuIsa::kAvxVnni || brisk::cpu_supports(CpuIsa::kAvxVnni))) return true;
  const std::string name = brisk::cpu_isa_name(level);
  state.SkipWithError((brisk::cpu_supports(level)
                           ? "the ISA level in use is " + std::string(brisk::cpu_isa_name(in_use)) +
                                 " (BRISK_ISA caps it), below " + name
                           : "this CPU lacks " + name + " (its level in use: " + brisk::cpu_isa_name(in_use) + ")")
                          .c_str());
  return false;
}

// Runs `chains(kIterations)` on `threads` threads per benchmark iteration. Counters, for ops_per_loop x the loop
// iterations run: `counter` per wall-clock second, and `counter`_cpu per second of the threads' own CPU time times
// the thread count: what the threads reach while running, which a loaded machine's preemption does not lower (the
// wall-clock rate is the one to compare with other programs' wall-clock rates).
void run_peak(benchmark::State& state, CpuIsa level, int (*chains)(int64_t), double ops_per_loop, const char* counter) {
  if (!level_in_use(state, level)) return;
  const int threads = static_cast<int>(state.range(0));
  std::vector<int> results(static_cast<size_t>(threads));
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
  const double ops = ops_per_loop * static_cast<double>(kIterations) * threads;
  state.counters[counter] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  double total_cpu = 0.0;
  for (const double s : cpu_seconds) total_cpu += s;
  const double mean_cpu_per_iteration = total_cpu / threads / static_cast<double>(state.iterations());
  if (mean_cpu_per_iteration > 0) state.counters[std::string(counter) + "_cpu"] = ops * 1e-9 / mean_cpu_per_iteration;
  state.SetLabel(brisk::cpu_isa_name(level));
}

// ops per loop iteration: instructions (or steps) per iteration x 2 x multiply-adds per instruction.
void BM_fp32_fma_peak_avx2(benchmark::State& s) { run_peak(s, CpuIsa::kAvx2, &fp32_fma_avx2, 12 * 2 * 8, "GFLOP/s"); }
void BM_int8_peak_avx2(benchmark::State& s) { run_peak(s, CpuIsa::kAvx2, &int8_avx2, 12 * 2 * 32, "GOP/s"); }
void BM_int16_peak_avx2(benchmark::State& s) { run_peak(s, CpuIsa::kAvx2, &int16_avx2, 12 * 2 * 16, "GOP/s"); }
void BM_int8_peak_avx_vnni(benchmark::State& s) { run_peak(s, CpuIsa::kAvxVnni, &int8_avx_vnni, 12 * 2 * 32, "GOP/s"); }
void BM_fp32_fma_peak_avx512(benchmark::State& s) {
  run_peak(s, CpuIsa::kAvx512, &fp32_fma_avx512, 24 * 2 * 16, "GFLOP/s");
}
void BM_int8_peak_avx512(benchmark::State& s) { run_peak(s, CpuIsa::kAvx512, &int8_avx512, 12 * 2 * 64, "GOP/s"); }
void BM_int16_peak_avx512(benchmark::State& s) { run_peak(s, CpuIsa::kAvx512, &int16_avx512, 12 * 2 * 32, "GOP/s"); }
void BM_int8_peak_avx512_vnni(benchmark::State& s) {
  run_peak(s, CpuIsa::kAvx512Vnni, &int8_avx512_vnni, 24 * 2 * 64, "GOP/s");
}
void BM_bf16_peak_avx512_bf16(benchmark::State& s) {
  run_peak(s, CpuIsa::kAvx512Bf16, &bf16_avx512_bf16, 24 * 2 * 32, "GFLOP/s");
}

#define BRISK_PEAK(fn) BENCHMARK(fn)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()
BRISK_PEAK(BM_fp32_fma_peak_avx2);
BRISK_PEAK(BM_int8_peak_avx2);
BRISK_PEAK(BM_int16_peak_avx2);
BRISK_PEAK(BM_int8_peak_avx_vnni);
BRISK_PEAK(BM_fp32_fma_peak_avx512);
BRISK_PEAK(BM_int8_peak_avx512);
BRISK_PEAK(BM_int16_peak_avx512);
BRISK_PEAK(BM_int8_peak_avx512_vnni);
BRISK_PEAK(BM_bf16_peak_avx512_bf16);

// The fp32 peak that fractions of "the peak of the ISA level in use" divide by; empty at the scalar level.
const char* fp32_peak_in_use() {
  const CpuIsa isa = brisk::cpu_isa();
  if (isa >= CpuIsa::kAvx512) return "BM_fp32_fma_peak_avx512";
  if (isa >= CpuIsa::kAvx2) return "BM_fp32_fma_peak_avx2";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (const std::string error = brisk::cpu_isa_env_error(); !error.empty()) {
    std::fprintf(stderr, "brisk_peak_benchmark: %s\n", error.c_str());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("brisk_isa", brisk::cpu_isa_name(brisk::cpu_isa()));
  benchmark::AddCustomContext("brisk_isa_detected", brisk::cpu_isa_name(brisk::detected_cpu_isa()));
  benchmark::AddCustomContext("brisk_cpu", brisk::cpu_model_description());
  benchmark::AddCustomContext("brisk_fp32_peak", fp32_peak_in_use());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
