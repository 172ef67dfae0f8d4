// The load generator's drivers: model loading, request sources, Poisson schedules, open and closed loops.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <condition_variable>
#include <thread>

#include "brisk/core/parallel.h"
#include "brisk/model/loader.h"
#include "load/load.h"

namespace brisk::load {

namespace {

[[noreturn]] void die(const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "brisk_load_generator: %s: %s\n", what.c_str(), std::string(s.message()).c_str());
  std::exit(1);
}

using brisk::load_test::percentile;  // nearest rank

}  // namespace

StatusOr<std::unique_ptr<Model>> load_model(const std::string& dir, int threads) {
  auto model = std::make_unique<Model>();
  model->threads = threads;
  BRISK_ASSIGN_OR_RETURN(LoadedModel loaded, brisk::load_model(dir));
  model->config = loaded.config;
  model->pooling = loaded.pooling.mode;
  model->max_seq_len = loaded.max_seq_len;
  if (loaded.tokenizer.wordpiece() == nullptr) {  // the synthetic requests are BERT vocabulary ids
    return absl::InvalidArgumentError(absl::StrCat(dir, ": the load harness needs a WordPiece model; its tokenizer is ",
                                                   std::string(loaded.tokenizer.kind())));
  }
  model->tokenizer = std::make_unique<WordPieceTokenizer>(*loaded.tokenizer.wordpiece());
  EncoderWeights weights = std::move(loaded.weights);
  ScopedNumThreads scoped(threads);  // weights are packed for the thread count the batches run with
  BRISK_ASSIGN_OR_RETURN(model->encoder, BertEncoder::create(model->config, std::move(weights), Device::kCPU));
  return model;
}

batch::BatchFunctions<Request, Result> make_functions(const Model& model, Backend backend) {
  batch::BatchFunctions<Request, Result> fns;
  fns.cost = [](const Request& r) { return r.ids.size(); };
  fns.run = [&model, backend](const batch::BatchInfo& info, std::span<Request> in,
                              std::span<StatusOr<Result>> out) -> Status {
    ScopedNumThreads scoped(model.threads);
    PackedSequences packed;
    const size_t longest = info.shape.max_cost;
    std::vector<int32_t> padded;
    for (const Request& r : in) {
      if (backend == Backend::kPadded && r.ids.size() < longest) {
        padded.assign(r.ids.begin(), r.ids.end());
        padded.resize(longest, model.tokenizer->pad_id());
        packed.add(padded);
      } else {
        packed.add(r.ids);
      }
    }
    const size_t hidden = static_cast<size_t>(model.encoder->hidden_size());
    std::vector<float> embeddings(in.size() * hidden);
    BRISK_RETURN_IF_ERROR(model.encoder->embed(packed, model.pooling, /*normalize=*/true, embeddings.data()));
    for (size_t i = 0; i < in.size(); ++i) out[i] = embeddings[i * hidden];
    return absl::OkStatus();
  };
  return fns;
}

std::vector<int32_t> Source::ids(size_t item) const {
  if (texts.empty()) return sequences[item];
  auto ids = model->tokenizer->encode(texts[item], model->max_seq_len);
  if (!ids.ok()) die("tokenizing '" + texts[item] + "'", ids.status());
  return *std::move(ids);
}

double Source::mean_tokens() const {
  double sum = 0;
  for (size_t i = 0; i < items(); ++i) sum += static_cast<double>(ids(i).size());
  return items() ? sum / items() : 0;
}

StatusOr<Source> questions_source(const Model& model, const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot open " + path + "; expected one question per line");
  Source source;
  source.name = "FAQ questions";
  source.model = &model;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) source.texts.push_back(line);
  }
  if (source.texts.empty()) return absl::InvalidArgumentError(path + " holds no questions; expected one a line");
  return source;
}

Source mixed_length_source(const Model& model, size_t n, int short_len, int long_len, double short_share,
                           uint64_t seed) {
  Source source;
  source.name = "synthetic " + std::to_string(short_len) + "/" + std::to_string(long_len) + " tokens";
  source.model = &model;
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution is_short(short_share);
  std::uniform_int_distribution<int32_t> token(1000, 29000);  // ordinary word pieces of the BERT vocabulary
  for (size_t i = 0; i < n; ++i) {
    const int len = is_short(rng) ? short_len : long_len;
    std::vector<int32_t> ids{model.tokenizer->cls_id()};
    for (int t = 2; t < len; ++t) ids.push_back(token(rng));
    ids.push_back(model.tokenizer->sep_id());
    source.sequences.push_back(std::move(ids));
  }
  return source;
}

namespace {

Summary summarize(const std::vector<Record>& records, int stream, double duration_s, Duration slo) {
  Summary s;
  s.duration_s = duration_s;
  std::vector<int64_t> latencies, rejected_submit, accepted_submit, late;
  for (const Record& r : records) {
    if (stream >= 0 && r.stream != stream) continue;
    ++s.offered;
    late.push_back(r.lateness_ns);
    switch (r.outcome) {
      case Outcome::kCompleted:
        ++s.completed;
        latencies.push_back(r.latency_ns);
        if (r.latency_ns <= slo.count()) ++s.good;
        break;
      case Outcome::kRejected: ++s.rejected; break;
      case Outcome::kExpired: ++s.expired; break;
      case Outcome::kFailed:
      case Outcome::kPending: ++s.failed; break;
    }
    (r.outcome == Outcome::kRejected ? rejected_submit : accepted_submit).push_back(r.submit_ns);
  }
  for (auto* v : {&latencies, &rejected_submit, &accepted_submit, &late}) std::sort(v->begin(), v->end());
  s.offered_rate = duration_s > 0 ? s.offered / duration_s : 0;
  s.p50_ms = percentile(latencies, 50) / 1e6;
  s.p95_ms = percentile(latencies, 95) / 1e6;
  s.p99_ms = percentile(latencies, 99) / 1e6;
  s.max_ms = latencies.empty() ? 0 : latencies.back() / 1e6;
  s.rejected_submit_p50_us = percentile(rejected_submit, 50) / 1e3;
  s.rejected_submit_p99_us = percentile(rejected_submit, 99) / 1e3;
  s.accepted_submit_p50_us = percentile(accepted_submit, 50) / 1e3;
  s.generator_late_p99_ms = percentile(late, 99) / 1e6;
  return s;
}

}  // namespace

CellResult run_open_loop(const Source& source, const batch::BatchPolicy& policy, Backend backend,
                         const std::vector<Stream>& streams, double duration_s, uint64_t seed,
                         const std::vector<Duration>& slo_per_stream) {
  const std::vector<Arrival> schedule = poisson_schedule(streams, duration_s, source.items(), seed);
  std::vector<Record> records(schedule.size());
  auto created = LoadBatcher::create(policy, make_functions(*source.model, backend));
  if (!created.ok()) die("creating the batcher", created.status());
  LoadBatcher& batcher = **created;
  std::atomic<int64_t> outstanding{0};

  const TimePoint start = SteadyTime::now() + std::chrono::milliseconds(20);
  std::thread generator([&] {
    for (size_t k = 0; k < schedule.size(); ++k) {
      const Arrival& a = schedule[k];
      const Stream& stream = streams[a.stream];
      const TimePoint scheduled = start + a.at;
      std::this_thread::sleep_until(scheduled);  // open loop: returns at once when behind, never waits for work
      Record& rec = records[k];
      rec.stream = a.stream;
      batch::SubmitOptions options{.priority = stream.priority};
      if (stream.deadline > Duration::zero()) options.deadline = scheduled + stream.deadline;
      Request request{source.ids(a.item), scheduled};  // tokenized at submit
      outstanding.fetch_add(1, std::memory_order_relaxed);
      const TimePoint t0 = SteadyTime::now();
      rec.lateness_ns = (t0 - scheduled).count();
      auto id = batcher.submit(std::move(request), options,
                               [&rec, &outstanding, scheduled](batch::RequestId, StatusOr<Result> r) {
                                 rec.latency_ns = (SteadyTime::now() - scheduled).count();
                                 rec.outcome = r.ok()                                 ? Outcome::kCompleted
                                               : absl::IsDeadlineExceeded(r.status()) ? Outcome::kExpired
                                                                                      : Outcome::kFailed;
                                 outstanding.fetch_sub(1, std::memory_order_release);
                               });
      rec.submit_ns = (SteadyTime::now() - t0).count();
      if (!id.ok()) {
        rec.outcome = Outcome::kRejected;
        outstanding.fetch_sub(1, std::memory_order_release);
      }
    }
  });
  generator.join();
  while (outstanding.load(std::memory_order_acquire) > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  CellResult result;
  result.stats = batcher.stats();
  (void)batcher.shutdown(batch::ShutdownMode::kDrain);
  Duration max_slo{0};
  for (size_t s = 0; s < streams.size(); ++s) {
    const Duration slo = s < slo_per_stream.size() ? slo_per_stream[s] : slo_per_stream.back();
    max_slo = std::max(max_slo, slo);
    result.streams.push_back(summarize(records, static_cast<int>(s), duration_s, slo));
  }
  result.all = summarize(records, -1, duration_s, max_slo);
  return result;
}

ClosedResult run_closed_loop(const Source& source, const batch::BatchPolicy& policy, Backend backend, size_t window,
                             double warmup_s, double duration_s, uint64_t seed) {
  auto created = LoadBatcher::create(policy, make_functions(*source.model, backend));
  if (!created.ok()) die("creating the batcher", created.status());
  LoadBatcher& batcher = **created;
  // The window: a mutex and a condition variable (libstdc++'s counting_semaphore polls while it waits, which
  // steals a core from the encoder on a 2-core machine).
  std::mutex slots_mu;
  std::condition_variable slots_cv;
  size_t free_slots = window;
  std::atomic<uint64_t> done{0};
  std::atomic<bool> measuring{false}, stop{false};
  std::mutex latencies_mu;
  std::vector<int64_t> latencies;

  std::thread generator([&] {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<size_t> pick(0, source.items() - 1);
    while (!stop.load(std::memory_order_relaxed)) {
      {
        std::unique_lock lock(slots_mu);
        if (!slots_cv.wait_for(lock, std::chrono::milliseconds(10), [&] { return free_slots > 0; })) continue;
        --free_slots;
      }
      const TimePoint now = SteadyTime::now();
      auto id = batcher.submit(Request{source.ids(pick(rng)), now}, {}, [&, now](batch::RequestId, StatusOr<Result> r) {
        if (r.ok()) {
          done.fetch_add(1, std::memory_order_relaxed);
          if (measuring.load(std::memory_order_relaxed)) {
            std::lock_guard lock(latencies_mu);
            latencies.push_back((SteadyTime::now() - now).count());
          }
        }
        {
          std::lock_guard lock(slots_mu);
          ++free_slots;
        }
        slots_cv.notify_one();
      });
      if (!id.ok()) die("closed-loop submit", id.status());
    }
  });
  auto seconds = [](double s) { return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); };
  std::this_thread::sleep_for(seconds(warmup_s));
  const batch::BatcherStats s0 = batcher.stats();
  const uint64_t c0 = done.load();
  const TimePoint t0 = SteadyTime::now();
  measuring = true;
  std::this_thread::sleep_for(seconds(duration_s));
  const uint64_t c1 = done.load();
  const TimePoint t1 = SteadyTime::now();
  const batch::BatcherStats s1 = batcher.stats();
  measuring = false;
  stop = true;
  generator.join();
  (void)batcher.shutdown(batch::ShutdownMode::kDrain);

  ClosedResult r;
  r.completed = c1 - c0;
  r.throughput = r.completed / std::chrono::duration<double>(t1 - t0).count();
  const uint64_t batches = s1.batches - s0.batches;
  r.batched = s1.completed - s0.completed;
  r.mean_batch = batches ? double(r.batched) / batches : 0;
  r.tokens = s1.tokens - s0.tokens;
  r.padded_tokens = s1.padded_tokens - s0.padded_tokens;
  r.mean_tokens = s1.completed > s0.completed ? double(r.tokens) / (s1.completed - s0.completed) : 0;
  std::lock_guard lock(latencies_mu);
  std::sort(latencies.begin(), latencies.end());
  r.p50_ms = percentile(latencies, 50) / 1e6;
  r.p99_ms = percentile(latencies, 99) / 1e6;
  return r;
}

Report::Report(const std::string& path) : path_(path) {
  if (!path_.empty()) file_.open(path_, std::ios::out | std::ios::trunc);
}

void Report::write(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (file_.is_open()) {
    file_ << text;
    file_.flush();
  }
}

}  // namespace brisk::load
