// faq_assistant: brisk's main demo. A retail-bank customer-service FAQ answered by semantic search.
//
// It loads a sentence-embedding model through brisk::Runtime, embeds every FAQ question (in batches) into an
// index, then answers a stream of user questions as a help desk would: embed the question, take the FAQ entry
// with the highest cosine similarity (a dot product, since the embeddings are L2-normalised), and print its
// answer; below --threshold it hands over to a human agent instead. The questions arrive from --clients
// concurrent users, each submitting its next question once the last is answered; Runtime::submit sends them
// through the dynamic batcher, which packs concurrent questions into shared forward passes (--clients 0: one
// at a time through Runtime::embed). Two caches spare work on repeated questions: the runtime's result cache
// (the same text, up to case and spacing, is not embedded twice) and a semantic cache of answers
// (brisk::cache::SemanticCache): a question close enough to one answered before, and not told apart by its
// false-hit guards (negation, numbers, entities), gets that answer without searching the FAQ. It ends with a
// report: FAQ indexing time, per-question latency P50/P95/P99, throughput, the batcher's and the caches'
// statistics.
//
//   faq_assistant                                  # faq.tsv and questions.txt from the source folder
//   faq_assistant --quiet --limit 100              # only the report, first 100 questions
//   faq_assistant --clients 16 --metrics           # 16 concurrent users, then the Prometheus metrics
//   faq_assistant --no-cache                       # every question embedded and searched
//   BRISK_REDIS_SIGNING_KEY=secret faq_assistant --redis 127.0.0.1:6379   # results shared through Redis, signed
//   faq_assistant --redis 127.0.0.1:6379 --redis-allow-unsigned           # ... unsigned (any writer can forge)
//   faq_assistant --faq my.tsv --questions q.txt --threshold 0.6 --model /models/all-MiniLM-L6-v2
//   faq_assistant --model minilm.int8.safetensors  # a file written by `brisk quantize`
//   faq_assistant --device cuda:0 --dtype f16      # on the first GPU (a build with BRISK_WITH_CUDA)
//
// FAQ file format: one entry per line, question<TAB>answer (UTF-8). Blank lines and lines starting with '#'
// are skipped. Questions file: one question per line, blank lines skipped.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "brisk/core/stats.h"
#include "brisk/cache/semantic_cache.h"
#include "brisk/core/device.h"
#include "brisk/core/status.h"
#include "brisk/kernels/vector_math.h"
#include "brisk/runtime/answer_cache.h"
#include "brisk/runtime/runtime.h"

#ifndef BRISK_FAQ_DIR
#define BRISK_FAQ_DIR "examples/faq_assistant"
#endif

namespace {

using brisk::Status;
using brisk::StatusOr;
using Clock = std::chrono::steady_clock;

struct FaqEntry {
  std::string question;
  std::string answer;
  int line = 0;  // 1-based line in the FAQ file, for error messages
};

struct Options {
  std::string model_dir;
  std::string faq_path = BRISK_FAQ_DIR "/faq.tsv";
  std::string questions_path = BRISK_FAQ_DIR "/questions.txt";
  double threshold = 0.5;
  bool quiet = false;
  int limit = 0;                      // 0: every question
  int threads = 0;                    // 0: the CPUs this process may use
  int index_batch = 32;               // FAQ questions per embed call while indexing
  int clients = 8;                    // concurrent users submitting through the batcher; 0: one at a time via embed()
  bool metrics = false;               // print the Prometheus metrics after the report
  bool cache = true;                  // the runtime's result cache and the semantic answer cache
  std::string redis;                  // HOST:PORT of a Redis server for the shared result tier; empty: none
  std::string semantic_verifier;      // a brisk fit-verifier file: the semantic cache's second opinion; empty: none
  bool redis_allow_unsigned = false;  // without BRISK_REDIS_SIGNING_KEY: accept unsigned shared values
  std::string device = "cpu";
  std::string dtype;              // "", "f32", "f16" or "bf16"; "": the device's default (f32 on cpu, f16 on cuda)
  brisk::DeviceSpec device_spec;  // parsed from `device` in main()
};

// The semantic cache's partition for this FAQ (one per customer in a multi-tenant service).
constexpr std::string_view kTenant = "bank";

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// ---------------------------------------------------------------------------------------------------------------
// Input files

StatusOr<std::vector<FaqEntry>> load_faq(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        fmt::format("cannot open the FAQ file '{}'; expected a UTF-8 text file with one question<TAB>answer per line "
                    "(pass --faq FILE)",
                    path));
  }
  std::vector<FaqEntry> faq;
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string_view line = raw;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty() || trim(line).front() == '#') continue;
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos) {
      return absl::InvalidArgumentError(fmt::format(
          "{}:{}: malformed FAQ line (no TAB): expected question<TAB>answer, got '{:.60}'", path, line_no, line));
    }
    if (line.find('\t', tab + 1) != std::string_view::npos) {
      return absl::InvalidArgumentError(fmt::format(
          "{}:{}: malformed FAQ line (more than one TAB): expected exactly one TAB between question and answer", path,
          line_no));
    }
    const std::string_view q = trim(line.substr(0, tab)), a = trim(line.substr(tab + 1));
    if (q.empty() || a.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: malformed FAQ line: the {} is empty; expected "
                      "question<TAB>answer, both non-empty",
                      path, line_no, q.empty() ? "question" : "answer"));
    }
    faq.push_back({std::string(q), std::string(a), line_no});
  }
  if (in.bad()) return absl::DataLossError(fmt::format("error while reading the FAQ file '{}'", path));
  if (faq.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("the FAQ file '{}' has no entries ({} lines read, all blank or comments); expected at least one "
                    "question<TAB>answer line",
                    path, line_no));
  }
  return faq;
}

StatusOr<std::vector<std::string>> load_questions(const std::string& path, int limit) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        fmt::format("cannot open the questions file '{}'; expected a UTF-8 text file with one question per line "
                    "(pass --questions FILE)",
                    path));
  }
  std::vector<std::string> questions;
  std::string raw;
  while (std::getline(in, raw) && (limit <= 0 || static_cast<int>(questions.size()) < limit)) {
    const std::string_view q = trim(raw);
    if (!q.empty()) questions.emplace_back(q);
  }
  if (in.bad()) return absl::DataLossError(fmt::format("error while reading the questions file '{}'", path));
  if (questions.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("the questions file '{}' has no questions; expected one question per line", path));
  }
  return questions;
}

// ---------------------------------------------------------------------------------------------------------------
// Index and search

// FAQ question embeddings, row-major faq.size() x dim.
struct FaqIndex {
  std::vector<float> embeddings;
  int dim = 0;
  double build_ms = 0;
};

StatusOr<FaqIndex> build_index(const brisk::Runtime& rt, const std::vector<FaqEntry>& faq, int batch) {
  FaqIndex index;
  index.dim = rt.embedding_dim();
  index.embeddings.resize(faq.size() * static_cast<size_t>(index.dim));
  const auto t0 = Clock::now();
  std::vector<std::string_view> texts;
  for (size_t begin = 0; begin < faq.size(); begin += static_cast<size_t>(batch)) {
    const size_t end = std::min(faq.size(), begin + static_cast<size_t>(batch));
    texts.clear();
    for (size_t i = begin; i < end; ++i) texts.push_back(faq[i].question);
    std::span<float> out(index.embeddings.data() + begin * static_cast<size_t>(index.dim),
                         (end - begin) * static_cast<size_t>(index.dim));
    if (Status s = rt.embed(texts, out); !s.ok()) {
      return absl::Status(s.code(), fmt::format("embedding FAQ questions of lines {}..{}: {}", faq[begin].line,
                                                faq[end - 1].line, std::string(s.message())));
    }
  }
  index.build_ms = ms_since(t0);
  return index;
}

struct Match {
  size_t entry = 0;
  float score = -2.0f;
  bool cached = false;  // from the semantic cache, without a search
};

// Exhaustive nearest neighbour by dot product; the FAQ is small (hundreds of rows), so a scan is the fastest.
Match nearest(const FaqIndex& index, std::span<const float> query) {
  Match best;
  const size_t n = index.embeddings.size() / static_cast<size_t>(index.dim);
  for (size_t i = 0; i < n; ++i) {
    const float score =
        brisk::kernels::dot(query.data(), index.embeddings.data() + i * static_cast<size_t>(index.dim), index.dim);
    if (score > best.score) best = {i, score, false};
  }
  return best;
}

// The FAQ entry that answers `question`: from the semantic cache when a question close to it was answered
// before, else by searching the FAQ, caching a confident answer tagged with its FAQ line so that an edit of
// that entry can drop it (invalidate_tag("faq:<line>")).
Match answer(const FaqIndex& index, const std::vector<FaqEntry>& faq, brisk::cache::SemanticCache* cache,
             std::string_view question, std::span<const float> embedding, double threshold) {
  if (cache != nullptr) {
    if (brisk::cache::SemanticLookup hit = cache->lookup(kTenant, question, embedding)) {
      const size_t entry = std::stoul(hit.answer);
      return {entry,
              brisk::kernels::dot(embedding.data(), index.embeddings.data() + entry * static_cast<size_t>(index.dim),
                                  index.dim),
              true};
    }
  }
  const Match m = nearest(index, embedding);
  if (cache != nullptr && m.score >= threshold) {
    // A failed insert only costs a later search.
    (void)cache->insert(kTenant, question, embedding, std::to_string(m.entry),
                        {.ttl = {}, .tags = {fmt::format("faq:{}", faq[m.entry].line)}});
  }
  return m;
}

// ---------------------------------------------------------------------------------------------------------------
// Report

void print_answer(size_t i, const std::string& question, const FaqEntry& entry, const Match& m, double threshold,
                  double ms) {
  fmt::print("[{}] Q: {}\n", i + 1, question);
  if (m.score >= threshold) {
    fmt::print("    matched ({:.3f}{}): {}\n", m.score, m.cached ? ", semantic cache" : "", entry.question);
    fmt::print("    A: {}\n", entry.answer);
  } else {
    fmt::print("    no confident match (best {:.3f} < {:.2f}: {})\n", m.score, threshold, entry.question);
    fmt::print("    A: Sorry, I don't know — connecting you to an agent.\n");
  }
  fmt::print("    ({:.2f} ms)\n\n", ms);
}

struct Answer {
  Match match;
  double ms = 0;  // submit (or embed) to answer, search included
};

// One question at a time through the synchronous embed().
// What answering needs besides the question.
struct Responder {
  const brisk::Runtime& rt;
  const FaqIndex& index;
  const std::vector<FaqEntry>& faq;
  brisk::cache::SemanticCache* cache;  // null: --no-cache
  double threshold;
  Match operator()(std::string_view question, std::span<const float> embedding) const {
    return answer(index, faq, cache, question, embedding, threshold);
  }
};

StatusOr<std::vector<Answer>> answer_one_at_a_time(const Responder& respond,
                                                   const std::vector<std::string>& questions) {
  const brisk::Runtime& rt = respond.rt;
  const FaqIndex& index = respond.index;
  std::vector<Answer> answers(questions.size());
  std::vector<float> query(static_cast<size_t>(index.dim));
  for (size_t i = 0; i < questions.size(); ++i) {
    const auto t0 = Clock::now();
    const std::string_view text = questions[i];
    if (Status s = rt.embed(std::span<const std::string_view>(&text, 1), query); !s.ok()) {
      return absl::Status(s.code(),
                          fmt::format("question {} ('{:.60}'): {}", i + 1, questions[i], std::string(s.message())));
    }
    answers[i] = {respond(questions[i], query), ms_since(t0)};
  }
  return answers;
}

// `clients` users, each taking the next question and submitting it through the batcher, waiting for the
// answer before taking another.
StatusOr<std::vector<Answer>> answer_concurrently(const Responder& respond, const std::vector<std::string>& questions,
                                                  int clients) {
  const brisk::Runtime& rt = respond.rt;
  std::vector<Answer> answers(questions.size());
  std::vector<Status> errors(questions.size());
  std::atomic<size_t> next{0};
  auto client = [&] {
    for (size_t i; (i = next++) < questions.size();) {
      const auto t0 = Clock::now();
      std::promise<StatusOr<std::vector<float>>> promise;
      auto future = promise.get_future();
      auto id = rt.submit(questions[i], {},
                          [&promise](uint64_t, StatusOr<std::vector<float>> e) { promise.set_value(std::move(e)); });
      StatusOr<std::vector<float>> embedding = id.ok() ? future.get() : StatusOr<std::vector<float>>(id.status());
      if (!embedding.ok()) {
        errors[i] = embedding.status();
        continue;
      }
      answers[i] = {respond(questions[i], *embedding), ms_since(t0)};
    }
  };
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) threads.emplace_back(client);
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < questions.size(); ++i) {
    if (!errors[i].ok()) {
      return absl::Status(errors[i].code(), fmt::format("question {} ('{:.60}'): {}", i + 1, questions[i],
                                                        std::string(errors[i].message())));
    }
  }
  return answers;
}

void print_batching_report(const brisk::Runtime& rt) {
  const brisk::batch::BatcherStats s = rt.batch_stats();
  fmt::print(
      "batching       {} batches, {:.1f} questions per batch (max {}), queue p50 {:.2f} ms p99 {:.2f} ms, "
      "forward pass p50 {:.2f} ms\n",
      s.batches, s.batch_size.mean(), s.batch_size.max(), s.queue_time.percentile(50) / 1e6,
      s.queue_time.percentile(99) / 1e6, s.compute_time.percentile(50) / 1e6);
}

void print_cache_report(const brisk::Runtime& rt, const brisk::cache::SemanticCache* cache) {
  if (cache == nullptr) {
    fmt::print("caches         off (--no-cache)\n");
    return;
  }
  const brisk::cache::SemanticCacheStats s = cache->stats();
  std::string vetoes;
  for (const auto& [guard, n] : s.rejections_by_guard)
    vetoes += fmt::format("{}{} {}", vetoes.empty() ? "" : ", ", guard, n);
  fmt::print(
      "semantic cache {} of {} questions answered without a search ({:.1f}%); {} entries; candidates vetoed "
      "by the guards: {}\n",
      s.hits, s.lookups, 100.0 * s.hit_rate(), s.entries, vetoes);
  if (s.verifier_calls > 0) {
    fmt::print(
        "verifier       {} candidates scored: {} accepted, {} refused, {} errors; P50 {:.1f} us, P99 {:.1f} us\n",
        s.verifier_calls, s.verifier_accepted, s.verifier_rejected, s.verifier_errors,
        s.verifier_latency_ns.percentile(50) / 1e3, s.verifier_latency_ns.percentile(99) / 1e3);
  }
  const nlohmann::json j = nlohmann::json::parse(rt.cache_stats_json());
  const nlohmann::json& r = j["result"];
  fmt::print("result cache   {} of {} texts not embedded again ({:.1f}%); {} entries, {:.1f} KiB{}\n",
             r["hits"].get<uint64_t>(), r["hits"].get<uint64_t>() + r["misses"].get<uint64_t>(),
             100.0 * r["hit_rate"].get<double>(), r["entries"].get<uint64_t>(), r["weight"].get<double>() / 1024,
             j["redis"].is_null()
                 ? ""
                 : fmt::format("; Redis: {} hits, {} errors, {} values refused", j["redis"]["hits"].get<uint64_t>(),
                               j["redis"]["errors"].get<uint64_t>(), j["redis"]["decode_errors"].get<uint64_t>()));
}

StatusOr<brisk::cache::RedisOptions> parse_redis(const std::string& address) {
  const size_t colon = address.rfind(':');
  brisk::cache::RedisOptions r;
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return absl::InvalidArgumentError(fmt::format("--redis '{}': expected HOST:PORT, e.g. 127.0.0.1:6379", address));
  }
  r.host = address.substr(0, colon);
  // The signing key comes from the environment, never the command line (where `ps` shows it to every user).
  if (const char* key = std::getenv("BRISK_REDIS_SIGNING_KEY"); key != nullptr) r.signing_key = key;
  try {
    r.port = std::stoi(address.substr(colon + 1));
  } catch (const std::exception&) {
    r.port = 0;
  }
  if (r.port < 1 || r.port > 65535) {
    return absl::InvalidArgumentError(fmt::format("--redis '{}': the port is not a number from 1 to 65535", address));
  }
  return r;
}

Status run(const Options& opt) {
  BRISK_ASSIGN_OR_RETURN(std::vector<FaqEntry> faq, load_faq(opt.faq_path));
  BRISK_ASSIGN_OR_RETURN(std::vector<std::string> questions, load_questions(opt.questions_path, opt.limit));

  brisk::RuntimeOptions ro;
  ro.model_dir = opt.model_dir;
  ro.num_threads = opt.threads;
  ro.normalize = true;  // cosine similarity = dot product
  ro.device = opt.device_spec.type;
  ro.device_index = opt.device_spec.index;
  if (opt.dtype == "f32") ro.activation_dtype = brisk::DType::kF32;
  if (opt.dtype == "f16") ro.activation_dtype = brisk::DType::kF16;
  if (opt.dtype == "bf16") ro.activation_dtype = brisk::DType::kBF16;
  if (!opt.cache) {
    ro.cache.result_cache_bytes = 0;
    ro.cache.token_cache_entries = 0;
  } else if (!opt.redis.empty()) {
    BRISK_ASSIGN_OR_RETURN(ro.cache.redis, parse_redis(opt.redis));
    ro.cache.redis->allow_unsigned = opt.redis_allow_unsigned;
  }
  const auto t_load = Clock::now();
  BRISK_ASSIGN_OR_RETURN(std::unique_ptr<brisk::Runtime> rt, brisk::Runtime::create(ro));
  const double load_ms = ms_since(t_load);
  const brisk::ModelInfo& info = rt->info();

  BRISK_ASSIGN_OR_RETURN(FaqIndex index, build_index(*rt, faq, opt.index_batch));
  std::unique_ptr<brisk::cache::SemanticCache> cache;
  if (opt.cache) {
    brisk::cache::SemanticCacheOptions so;
    so.dim = static_cast<size_t>(rt->embedding_dim());
    if (!opt.semantic_verifier.empty()) {
      // Fitted for this model (the file says which; another model's is refused), with its calibrated threshold.
      // Candidates from a lower cosine than the default threshold: the verifier recovers paraphrases.
      BRISK_ASSIGN_OR_RETURN(brisk::PairVerifier v,
                             brisk::PairVerifier::load(opt.semantic_verifier, rt->embedding_model_id()));
      brisk::use_pair_verifier(v, so);  // from cosine 0.5, at its threshold, in place of the guards
    }
    BRISK_ASSIGN_OR_RETURN(cache, brisk::cache::SemanticCache::create(so));
  }
  const Responder respond{*rt, index, faq, cache.get(), opt.threshold};
  if (!opt.quiet) {
    fmt::print("brisk FAQ assistant: {} FAQ entries from {}, {} questions from {}\n", faq.size(), opt.faq_path,
               questions.size(), opt.questions_path);
    fmt::print("model {} ({}, {} layers, dim {}), loaded in {:.0f} ms; index built in {:.1f} ms\n", info.model_dir,
               info.model_type, info.num_layers, rt->embedding_dim(), load_ms, index.build_ms);
    fmt::print("device {} ({} activations)\n\n", brisk::device_string(opt.device_spec),
               brisk::dtype_name(info.activation_dtype));
  }

  const auto t_all = Clock::now();
  BRISK_ASSIGN_OR_RETURN(std::vector<Answer> answers, opt.clients == 0
                                                          ? answer_one_at_a_time(respond, questions)
                                                          : answer_concurrently(respond, questions, opt.clients));
  const double total_ms = ms_since(t_all);
  std::vector<double> latency_ms;
  latency_ms.reserve(questions.size());
  size_t answered = 0;
  for (size_t i = 0; i < questions.size(); ++i) {
    const Answer& a = answers[i];
    latency_ms.push_back(a.ms);
    if (a.match.score >= opt.threshold) ++answered;
    if (!opt.quiet) print_answer(i, questions[i], faq[a.match.entry], a.match, opt.threshold, a.ms);
  }

  double mean = 0;
  for (double v : latency_ms) mean += v;
  mean /= static_cast<double>(latency_ms.size());
  fmt::print("== report ==\n");
  fmt::print("model          {} (threads: {}; device: {}, {})\n", info.model_dir,
             opt.threads == 0 ? "auto" : std::to_string(opt.threads), brisk::device_string(opt.device_spec),
             brisk::dtype_name(info.activation_dtype));
  fmt::print("FAQ indexing   {} entries in {:.1f} ms ({:.1f} entries/s, batches of {})\n", faq.size(), index.build_ms,
             faq.size() / (index.build_ms / 1e3), opt.index_batch);
  fmt::print("questions      {} answered, {} handed to an agent (threshold {:.2f}), {} in all\n", answered,
             questions.size() - answered, opt.threshold, questions.size());
  fmt::print(
      "latency        p50 {:.2f} ms  p95 {:.2f} ms  p99 {:.2f} ms  (mean {:.2f}, max {:.2f}; per question, "
      "embed + search)\n",
      brisk::percentile(latency_ms, 50), brisk::percentile(latency_ms, 95), brisk::percentile(latency_ms, 99), mean,
      *std::max_element(latency_ms.begin(), latency_ms.end()));
  fmt::print("throughput     {:.1f} questions/s ({} questions in {:.1f} ms, {})\n", questions.size() / (total_ms / 1e3),
             questions.size(), total_ms,
             opt.clients == 0 ? "one at a time" : fmt::format("{} concurrent clients", opt.clients));
  if (opt.clients > 0) print_batching_report(*rt);
  print_cache_report(*rt, cache.get());
  if (opt.metrics) fmt::print("\n{}", rt->metrics_prometheus());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  opt.model_dir = brisk::default_model_dir();
  CLI::App app{"brisk FAQ assistant: answers bank customer questions by semantic search over an FAQ", "faq_assistant"};
  app.failure_message(CLI::FailureMessage::help);
  app.add_option("--model", opt.model_dir, "Hugging Face model directory, or a quantized model file")
      ->capture_default_str();
  app.add_option("--faq", opt.faq_path, "FAQ file, one question<TAB>answer per line")->capture_default_str();
  app.add_option("--questions", opt.questions_path, "user questions, one per line")->capture_default_str();
  app.add_option("--threshold", opt.threshold, "minimum cosine similarity to answer; below it, hand to an agent")
      ->check(CLI::Range(-1.0, 1.0))
      ->capture_default_str();
  app.add_flag("--quiet", opt.quiet, "print only the report");
  app.add_option("--limit", opt.limit, "answer only the first N questions; 0 = all")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--threads", opt.threads, "compute threads; 0 = the CPUs this process may use")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--index-batch", opt.index_batch, "FAQ questions per embed call while indexing")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--clients", opt.clients,
                 "concurrent users submitting through the dynamic batcher; 0 = one question at a time")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_flag("--metrics", opt.metrics, "print the runtime's Prometheus metrics after the report");
  app.add_flag("--no-cache{false}", opt.cache,
               "no result cache and no semantic cache: embed and search every question");
  app.add_option("--redis", opt.redis,
                 "HOST:PORT of a Redis server that shares cached results between processes; the values are signed "
                 "with the secret in $BRISK_REDIS_SIGNING_KEY");
  app.add_flag("--redis-allow-unsigned", opt.redis_allow_unsigned,
               "with --redis and no $BRISK_REDIS_SIGNING_KEY: share unsigned values (anyone who can write to the "
               "server can forge them)");
  app.add_option("--semantic-verifier", opt.semantic_verifier,
                 "a verifier file from brisk fit-verifier: the semantic cache serves a cached answer only when it "
                 "accepts the pair");
  app.add_option("--device", opt.device, "where the encoder runs: cpu, cuda (GPU 0) or cuda:N")->capture_default_str();
  app.add_option("--dtype", opt.dtype, "activation dtype: f32, f16 or bf16 (default: f32 on cpu, f16 on cuda)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  StatusOr<brisk::DeviceSpec> device = brisk::parse_device(opt.device);
  if (!device.ok()) {
    fmt::print(stderr, "faq_assistant: error: --device '{}' is not a device; expected cpu, cuda or cuda:N\n",
               opt.device);
    return 2;
  }
  opt.device_spec = *device;
  if (opt.device_spec.type == brisk::Device::kCPU && !opt.dtype.empty() && opt.dtype != "f32") {
    fmt::print(stderr,
               "faq_assistant: error: --dtype {} is for cuda; expected f32 (the cpu's only activation dtype) or "
               "--device cuda\n",
               opt.dtype);
    return 2;
  }
  if (Status s = run(opt); !s.ok()) {
    fmt::print(stderr, "faq_assistant: error: {}\n", std::string(s.message()));
    return 1;
  }
  return 0;
}
