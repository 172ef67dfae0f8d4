// The load generator's parts: the real MiniLM encoder behind a Batcher, request sources (FAQ questions tokenized
// at submit, or synthetic token-id lists), seeded Poisson schedules, an open-loop and a closed-loop driver, and
// the summaries the experiments print as markdown tables. Used by benchmarks/load_generator.cc only.
//
// Thread safety: a Model and a Source are read-only after construction and may be shared by any threads; each
// driver call owns its batcher and its records.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "brisk/batch/batcher.h"
#include "brisk/core/status.h"
#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/tokenizer.h"
#include "brisk/runtime/load_test.h"

namespace brisk::load {

using brisk::Duration;
using brisk::TimePoint;
using SteadyTime = std::chrono::steady_clock;

inline double to_ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The encoder and its tokenizer, loaded like Runtime::create does; every batch runs with `threads` threads.
struct Model {
  BertConfig config;
  std::unique_ptr<WordPieceTokenizer> tokenizer;
  std::unique_ptr<BertEncoder> encoder;
  Pooling pooling = Pooling::kMean;
  int max_seq_len = 128;
  int threads = 2;
};
StatusOr<std::unique_ptr<Model>> load_model(const std::string& dir, int threads);

// What the batcher carries: token ids (cost = their count) and when the request was scheduled to arrive.
struct Request {
  std::vector<int32_t> ids;
  TimePoint scheduled;
};
using Result = float;  // the first component of the embedding: enough to keep the work observable
using LoadBatcher = batch::Batcher<Request, Result>;

// kPacked: brisk's padding-free encoder. kPadded: a model of a padded backend; every sequence of a batch is
// padded with [PAD] to the batch's longest one before the encoder runs, so padding costs real compute.
enum class Backend { kPacked, kPadded };
batch::BatchFunctions<Request, Result> make_functions(const Model& model, Backend backend);

// Where request token ids come from: texts tokenized at submit, or fixed token-id lists.
struct Source {
  std::string name;
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> sequences;  // used when texts is empty
  const Model* model = nullptr;

  size_t items() const { return texts.empty() ? sequences.size() : texts.size(); }
  std::vector<int32_t> ids(size_t item) const;
  double mean_tokens() const;
};
StatusOr<Source> questions_source(const Model& model, const std::string& path);
// `n` sequences, each [CLS] random ids [SEP] of `short_len` tokens with probability short_share, else long_len.
Source mixed_length_source(const Model& model, size_t n, int short_len, int long_len, double short_share,
                           uint64_t seed);

// Seeds and Poisson schedules: the library's open-loop load generator (brisk/runtime/load_test.h), shared with
// `brisk tune`.
using brisk::load_test::Arrival;
using brisk::load_test::mix_seed;
using brisk::load_test::poisson_schedule;
using brisk::load_test::Stream;

enum class Outcome : uint8_t { kPending, kCompleted, kRejected, kExpired, kFailed };
struct Record {
  Outcome outcome = Outcome::kPending;
  uint8_t stream = 0;
  int64_t latency_ns = 0;   // completion - scheduled arrival
  int64_t submit_ns = 0;    // the submit() call alone
  int64_t lateness_ns = 0;  // how late the generator submitted against the schedule
};

// Per-stream summary of one open-loop cell.
struct Summary {
  double duration_s = 0, offered_rate = 0;
  size_t offered = 0, completed = 0, good = 0, rejected = 0, expired = 0, failed = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
  double rejected_submit_p50_us = 0, rejected_submit_p99_us = 0, accepted_submit_p50_us = 0;
  double generator_late_p99_ms = 0;
  double goodput() const { return duration_s > 0 ? good / duration_s : 0; }
  double completed_rate() const { return duration_s > 0 ? completed / duration_s : 0; }
  double pct(size_t n) const { return offered ? 100.0 * n / offered : 0; }
};

struct CellResult {
  std::vector<Summary> streams;  // one per stream
  Summary all;
  batch::BatcherStats stats;
  double mean_batch() const { return stats.batches ? double(stats.completed) / stats.batches : 0; }
};

// Open loop: a generator thread submits each arrival at its scheduled time (never waiting for completions),
// tokenizing at submit; with Stream.deadline > 0 the deadline is scheduled arrival + deadline. `slo` decides
// what counts as good (completed within it); per stream when slo_per_stream is given.
CellResult run_open_loop(const Source& source, const batch::BatchPolicy& policy, Backend backend,
                         const std::vector<Stream>& streams, double duration_s, uint64_t seed,
                         const std::vector<Duration>& slo_per_stream);

// Closed loop: `window` requests always outstanding (a new one as soon as one completes), no deadlines.
struct ClosedResult {
  double throughput = 0;  // completed per second in the measured window
  double mean_batch = 0, mean_tokens = 0;
  double p50_ms = 0, p99_ms = 0;
  uint64_t tokens = 0, padded_tokens = 0, completed = 0;
  uint64_t batched = 0;  // requests in the batches of the measured window (BatcherStats difference)
};
ClosedResult run_closed_loop(const Source& source, const batch::BatchPolicy& policy, Backend backend, size_t window,
                             double warmup_s, double duration_s, uint64_t seed);

// Markdown goes to stdout and, when a file is open, to it too.
class Report {
 public:
  explicit Report(const std::string& path);
  void write(const std::string& text);
  bool file_ok() const { return path_.empty() || file_.good(); }

 private:
  std::string path_;
  std::ofstream file_;
};

}  // namespace brisk::load

namespace brisk::load {

struct Options {
  std::string model_dir;
  std::string questions;  // examples/faq_assistant/questions.txt
  std::string out;        // also write the tables here ("" : stdout only)
  std::string experiments = "a,b,c,d";
  double duration_s = 5;  // per cell
  uint64_t seed = 1;
  int threads = 2;  // encoder threads per batch
  Duration slo = std::chrono::milliseconds(100);
  int search_steps = 4;  // bisection steps of the throughput-at-SLO search
  std::string command_line;
};

// Experiment e (capacity_check.cc): brisk plan's simulation against the open loop at 80% load.
void run_capacity_check(const Options& options, const Source& questions, Report& report);

// Runs the selected experiments; 0 on success.
int run_experiments(const Options& options);

}  // namespace brisk::load
