// `brisk plan`: how many replicas meet a P99 SLO at a request rate (brisk/batch/capacity.h), and the measurement of
// the batch service-time curve it plans from.
//
//   brisk plan --rate 400 --slo-p99-ms 50 --bench curve.json [--json]
//   brisk plan --model DIR --measure-out curve.json [--seq 16] [--max-batch 32] [--iters 7] [--threads 2]
//   brisk plan --rate 400 --slo-p99-ms 50                     # measures the default model's curve first (quick)
//
// Prints the fleet each model needs (exact M/M/c, the field report's approximation, the batching simulation and
// the simulation without batching), then a row per fleet size with every model's utilisation, waits and P99, and
// the check run (the simulator run as M/M/c beside Erlang C). --json prints the same as one object.
//
// The curve: for each round (warm-up rounds first, untimed), one embed() call of b synthetic texts of exactly --seq
// tokens for every b from 1 to --max-batch, interleaved so that machine noise spreads over every size; batch_ms[b]
// is the median over the rounds, made non-decreasing by batch::non_decreasing_fit (on a noisy machine a larger batch
// can measure faster, which no batch is); jitter_cv is 1.4826 x the median of |time / median - 1| over all samples (a
// robust standard deviation: a shared machine's rare preempted samples would otherwise dominate it).
//
// Not thread-safe: parse and run on one thread.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "model_flags.h"

namespace brisk::cli {

struct PlanFlags {
  double rate = 0;
  double slo_p99_ms = 0;
  std::string bench;        // a curve file; "": measure
  std::string measure_out;  // write the measured curve here
  int seq = 16;
  int max_batch = 32;
  int iters = 7;
  int warmup = 2;
  size_t requests = 200'000;  // simulated requests per fleet size
  uint64_t seed = 1;
  int max_replicas = 4096;
  bool json_output = false;
  ModelFlags model;

  // Set by add_to, for validate(): whether the user gave them.
  CLI::Option* rate_option = nullptr;
  CLI::Option* slo_option = nullptr;
  CLI::Option* bench_option = nullptr;
  CLI::Option* max_batch_option = nullptr;

  void add_to(CLI::App& cmd);
};

// Returns the process exit code: 0 ok, 1 an error (a bad curve file, an SLO no fleet meets), 2 bad flags.
int run_plan(PlanFlags& flags);

}  // namespace brisk::cli
