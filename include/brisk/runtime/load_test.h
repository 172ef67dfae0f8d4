// An open-loop load generator for a Runtime: seeded Poisson arrivals submitted through Runtime::submit() (or
// submit_classify()) at their scheduled times, never waiting for completions, as real traffic arrives. It measures
// what a service owner cares about: P50/P99 of completed requests (scheduled arrival to callback), goodput (completed
// within the SLO per second) and refusals. `brisk tune` drives it; so do the benchmarks (benchmarks/load,
// benchmarks/torchscript_load.cc).
//
//   brisk::load_test::OpenLoopOptions o{.rate = 40, .duration_s = 5, .slo = std::chrono::milliseconds(50)};
//   BRISK_ASSIGN_OR_RETURN(brisk::load_test::OpenLoopResult r, brisk::load_test::run_open_loop(*rt, texts, o));
//   fmt::print("goodput {:.1f}/s, p99 {:.1f} ms, refused {}\n", r.goodput(), r.p99_ms, r.refused);
//
// Thread safety: run_open_loop() may run on any thread; it owns its generator thread and records, and waits for every
// request it submitted before it returns. Several may share one Runtime (their requests then compete).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "brisk/core/clock.h"
#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/runtime/runtime.h"

namespace brisk::load_test {

// splitmix64 over (seed, a, b, c): independent, reproducible seeds for streams and cells.
BRISK_API uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0);

// One Poisson stream: `rate` arrivals per second at one priority level.
struct Stream {
  double rate = 0;
  int priority = 0;
  Duration deadline{0};  // from the scheduled arrival; 0: the level's default_timeout (or none)
};
// One arrival: when (from the start), which source item, which stream.
struct Arrival {
  Duration at{0};
  uint32_t item = 0;
  uint8_t stream = 0;
};
// Per stream, exponential inter-arrival times at its rate over duration_s; the streams merged in time order. Each
// arrival picks one of `items` uniformly. The same seed gives the same schedule.
BRISK_API std::vector<Arrival> poisson_schedule(const std::vector<Stream>& streams, double duration_s, size_t items,
                                                uint64_t seed);

// Nearest-rank percentile (q in [0, 100]) of sorted values; 0 when empty.
BRISK_API int64_t percentile(const std::vector<int64_t>& sorted, double q);

// What a run has seen so far, for OpenLoopOptions::keep_going.
struct Progress {
  double elapsed_s = 0;
  size_t submitted = 0;  // arrivals so far (accepted or refused)
  size_t refused = 0;    // refused at submit
  size_t finished = 0;   // completed, expired or failed
  size_t late = 0;       // finished badly: completed past the SLO, expired or failed
};

struct OpenLoopOptions {
  double rate = 10;       // arrivals per second (Poisson)
  double duration_s = 5;  // of arrivals
  uint64_t seed = 1;
  Duration slo{std::chrono::milliseconds(100)};  // completed within it counts as good
  Duration timeout{0};                           // each request's deadline from its scheduled arrival; 0: none
  int priority = 0;
  // Append " #<arrival number>" to every text, so that no two requests share token ids: the result cache and single
  // flight would otherwise answer repeats without the model, and the run would measure the caches.
  bool unique_texts = true;
  bool classify = false;  // submit_classify (top 1) instead of submit
  // Asked every ~100 ms; false stops the arrivals (what was submitted still completes). Early stopping of a
  // hopeless candidate in `brisk tune`. Empty: run the whole schedule.
  std::function<bool(const Progress&)> keep_going;
};

struct OpenLoopResult {
  double duration_s = 0;  // of the arrivals that were submitted
  size_t offered = 0, completed = 0, good = 0, refused = 0, expired = 0, failed = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;  // completed requests
  double mean_batch = 0, mean_tokens = 0;                 // from the runtime's batch_stats over the run
  bool stopped_early = false;                             // keep_going said stop
  double goodput() const { return duration_s > 0 ? good / duration_s : 0; }
  // Refused at submit, expired or failed, of offered.
  double refused_share() const { return offered ? double(refused + expired + failed) / offered : 0; }
};

// Drives `runtime` with Poisson arrivals over `texts` (picked uniformly). INVALID_ARGUMENT for no texts or a rate or
// duration that is not positive; a submit error other than overload (RESOURCE_EXHAUSTED) ends the run with it.
BRISK_API StatusOr<OpenLoopResult> run_open_loop(const Runtime& runtime, std::span<const std::string> texts,
                                                 const OpenLoopOptions& options);

}  // namespace brisk::load_test
