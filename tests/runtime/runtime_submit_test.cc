// Runtime::submit through the batcher with the real MiniLM model: results match embed(), every outcome
// (deadline, cancel, overload, shutdown with requests pending) completes exactly once, the memory budget's check
// agrees between submit and the executor whatever the submitting thread's thread count, and the stats agree.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "brisk/core/parallel.h"
#include "brisk/runtime/runtime.h"
#include "runtime/native_backend.h"
#include "runtime/runtime_test_util.h"
#include "test_util.h"

namespace {

using brisk::testing::make_runtime;
using namespace std::chrono_literals;
using Embedding = brisk::StatusOr<std::vector<float>>;

brisk::RuntimeOptions options() {
  brisk::RuntimeOptions opts = brisk::testing::runtime_options();
  opts.cache.result_cache_bytes = 0;  // repeated texts must reach the batcher (runtime_cache_test.cc covers hits)
  return opts;
}

// Options whose batcher holds requests queued (a long queue delay, batches far larger than the test fills).
brisk::RuntimeOptions holding_options() {
  brisk::RuntimeOptions opts = options();
  opts.batching.max_batch_size = 64;
  opts.batching.max_queue_delay = 60s;
  return opts;
}

// A future-backed callback.
struct Pending {
  std::shared_ptr<std::promise<Embedding>> promise = std::make_shared<std::promise<Embedding>>();
  std::future<Embedding> future = promise->get_future();
  brisk::EmbeddingCallback callback() {
    return [p = promise](uint64_t, Embedding e) { p->set_value(std::move(e)); };
  }
};

}  // namespace

TEST_CASE("submit from many threads gives the embeddings embed() gives", "[runtime][batch]") {
  auto rt = make_runtime(options());
  const std::vector<std::string> texts = {"how do I reset my card PIN?",
                                          "lost card",
                                          "what are your opening hours",
                                          "Überweisung ins Ausland",
                                          "我的卡被锁了",
                                          "",
                                          "a much longer question about "
                                          "the fees for sending money abroad to a savings account in another bank"};
  std::vector<std::string_view> views(texts.begin(), texts.end());
  auto reference = rt->embed(views);
  REQUIRE(reference.ok());
  const size_t dim = static_cast<size_t>(rt->embedding_dim());
  const brisk::batch::BatcherStats before = rt->batch_stats();  // embed() runs through the batcher as well
  CHECK(before.completed == texts.size());

  constexpr int kThreads = 4, kRounds = 6;
  std::vector<std::thread> producers;
  std::atomic<int> worst_bad{0};
  std::mutex mu;
  double worst_cosine = 1.0;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      std::vector<Pending> pending(texts.size() * kRounds);
      for (size_t i = 0; i < pending.size(); ++i) {
        auto id = rt->submit(texts[(i + t) % texts.size()], {}, pending[i].callback());
        if (!id.ok() || *id == 0) worst_bad++;
      }
      for (size_t i = 0; i < pending.size(); ++i) {
        Embedding e = pending[i].future.get();
        if (!e.ok() || e->size() != dim) {
          worst_bad++;
          continue;
        }
        const double c = brisk::testing::cosine(e->data(), reference->data() + ((i + t) % texts.size()) * dim, dim);
        std::lock_guard lock(mu);
        worst_cosine = std::min(worst_cosine, c);
      }
    });
  }
  for (auto& p : producers) p.join();
  CHECK(worst_bad == 0);
  CHECK(worst_cosine >= 0.99999);

  const brisk::batch::BatcherStats s = rt->batch_stats();
  // Single flight: a text already in flight answers its repeats without going through the batcher again.
  const uint64_t joined = nlohmann::json::parse(rt->stats_json())["single_flight_joined"].get<uint64_t>();
  CHECK(s.completed - before.completed + joined == kThreads * kRounds * texts.size());
  CHECK(s.submitted == s.completed);
  CHECK(s.batches >= 1);
  CHECK(s.batches <= s.completed);
}

TEST_CASE("submit rejects bad input at once and never calls back", "[runtime][batch]") {
  auto rt = make_runtime(options());
  std::atomic<int> calls{0};
  auto counting = [&calls](uint64_t, Embedding) { calls++; };

  auto bad_utf8 = rt->submit(std::string("caf\xC3", 4), {}, counting);
  REQUIRE_FALSE(bad_utf8.ok());
  CHECK(bad_utf8.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad_utf8.status().message().find("UTF-8") != std::string_view::npos);

  auto no_callback = rt->submit("hello", {}, brisk::EmbeddingCallback());
  REQUIRE_FALSE(no_callback.ok());
  CHECK(no_callback.status().message().find("callback") != std::string_view::npos);

  auto negative = rt->submit("hello", {.priority = 0, .timeout = -5ms}, counting);
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().message().find("timeout is negative") != std::string_view::npos);

  for (int priority : {-1, 3, 1000}) {
    auto unknown = rt->submit("hello", {.priority = priority}, counting);
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.status().message().find("priority " + std::to_string(priority) + " is out of range") !=
          std::string_view::npos);
  }
  CHECK(calls == 0);
}

TEST_CASE("a text costing more than a whole batch is rejected at submit", "[runtime][batch]") {
  brisk::RuntimeOptions opts = options();
  opts.batching.max_batch_tokens = 16;
  auto rt = make_runtime(opts);
  auto big = rt->submit(
      "this question has quite a few more than sixteen word piece tokens once it is tokenized "
      "by the MiniLM vocabulary",
      {}, [](uint64_t, Embedding) { FAIL("called back"); });
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(big.status().message().find("max_batch_tokens 16") != std::string_view::npos);
  Pending small;
  REQUIRE(rt->submit("hi", {}, small.callback()).ok());
  CHECK(small.future.get().ok());
}

TEST_CASE("whether a text fits the memory budget does not depend on the submitting thread's thread count",
          "[runtime][batch]") {
  // The CPU estimate counts a score matrix per compute thread. A text that fits with one thread's but not with the
  // runtime's two is refused at submit from every thread: before, a thread under ScopedNumThreads(1) got it
  // admitted, and the executor, estimating with its own count, never ran it. With room for two it runs.
  brisk::RuntimeOptions opts = options();
  opts.num_threads = 2;
  std::string text;
  for (int i = 0; i < 400; ++i) text += "word" + std::to_string(i) + " ";
  size_t one = 0, two = 0;
  {
    auto probe = make_runtime(opts);
    const auto counted = probe->count_tokens(text);  // before truncation
    REQUIRE(counted.ok());
    const size_t tokens = static_cast<size_t>(probe->info().max_seq_len);
    REQUIRE(*counted > tokens);
    const brisk::BatchShape alone{1, tokens, tokens};
    one = brisk::estimate_activation_bytes(probe->info(), opts, alone, 1);
    two = brisk::estimate_activation_bytes(probe->info(), opts, alone, 2);
  }
  REQUIRE(one < two);
  opts.batching.memory_headroom = 1.0;
  // The passes run on one thread (a budget of 1: no OpenMP team, whose barriers ThreadSanitizer cannot see), while the
  // runtime's configured count, which the estimate uses, stays 2.
  brisk::set_compute_budget(1);
  struct RestoreBudget {
    ~RestoreBudget() { brisk::set_compute_budget(0); }
  } restore;
  std::atomic<int> calls{0};
  SECTION("room for one thread's scores: refused from every thread") {
    opts.batching.memory_budget_bytes = (one + two) / 2;
    auto rt = make_runtime(opts);
    for (int threads : {1, 2, 4}) {
      INFO("ScopedNumThreads " << threads);
      brisk::ScopedNumThreads scope(threads);
      auto id = rt->submit(text, {}, [&](uint64_t, Embedding) { calls.fetch_add(1); });
      CHECK(id.status().code() == absl::StatusCode::kInvalidArgument);
      CHECK(id.status().message().find("batch memory limit of") != std::string_view::npos);
    }
  }
  SECTION("room for two: runs from every thread") {
    opts.batching.memory_budget_bytes = two;
    auto rt = make_runtime(opts);
    for (int threads : {1, 4}) {
      INFO("ScopedNumThreads " << threads);
      Pending p;
      {
        brisk::ScopedNumThreads scope(threads);
        REQUIRE(rt->submit(text, {}, p.callback()).ok());
      }
      REQUIRE(p.future.wait_for(60s) == std::future_status::ready);
      CHECK(p.future.get().ok());
    }
  }
  CHECK(calls.load() == 0);
}

TEST_CASE("cancel, deadline and overload outcomes through the runtime", "[runtime][batch]") {
  brisk::RuntimeOptions opts = holding_options();
  opts.batching.max_queue_size = 3;
  auto rt = make_runtime(opts);

  Pending cancelled, expiring, kept;
  auto id = rt->submit("cancel me", {}, cancelled.callback());
  REQUIRE(id.ok());
  REQUIRE(rt->cancel(*id).ok());
  REQUIRE(cancelled.future.wait_for(0s) == std::future_status::ready);  // queued: completed inside cancel()
  CHECK(cancelled.future.get().status().code() == absl::StatusCode::kCancelled);
  CHECK(rt->cancel(*id).code() == absl::StatusCode::kNotFound);
  CHECK(rt->cancel(987654321).code() == absl::StatusCode::kNotFound);

  REQUIRE(rt->submit("expire me", {.priority = 1, .timeout = 30ms}, expiring.callback()).ok());
  REQUIRE(expiring.future.wait_for(10s) == std::future_status::ready);  // the deadline timer, not the batch
  CHECK(expiring.future.get().status().code() == absl::StatusCode::kDeadlineExceeded);

  REQUIRE(rt->submit("one", {}, kept.callback()).ok());
  std::vector<Pending> more(2);
  REQUIRE(rt->submit("two", {}, more[0].callback()).ok());
  REQUIRE(rt->submit("three", {}, more[1].callback()).ok());
  auto full = rt->submit("four", {}, [](uint64_t, Embedding) { FAIL("called back"); });
  REQUIRE_FALSE(full.ok());
  CHECK(full.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(full.status().message().find("max_queue_size 3") != std::string_view::npos);

  const auto stats = nlohmann::json::parse(rt->stats_json());
  CHECK(stats["batcher"]["cancelled"] == 1);
  CHECK(stats["batcher"]["expired"] == 1);
  CHECK(stats["batcher"]["rejected"]["overloaded"] == 1);
  CHECK(stats["batcher"]["queued"] == 3);
  CHECK(stats["tokenize_ms"]["count"].get<int>() >= 6);

  rt.reset();  // shutdown with three requests queued: each completes before the destructor returns
  for (Pending* p : {&kept, &more[0], &more[1]}) {
    REQUIRE(p->future.wait_for(0s) == std::future_status::ready);
    CHECK(p->future.get().status().code() == absl::StatusCode::kUnavailable);
  }
}

TEST_CASE("metrics_prometheus exposes the batcher and tokenizer families", "[runtime][batch]") {
  auto rt = make_runtime(options());
  Pending p;
  REQUIRE(rt->submit("how do I close my account", {}, p.callback()).ok());
  REQUIRE(p.future.get().ok());
  const std::string text = rt->metrics_prometheus();
  CHECK(text.find("# TYPE brisk_batcher_requests_total counter") != std::string::npos);
  CHECK(text.find("brisk_batcher_requests_total{model=\"all-MiniLM-L6-v2\",outcome=\"completed\"} 1") !=
        std::string::npos);
  CHECK(text.find("# TYPE brisk_batcher_latency_seconds summary") != std::string::npos);
  CHECK(text.find("brisk_runtime_tokenize_seconds_count{model=\"all-MiniLM-L6-v2\"} 1") != std::string::npos);
  CHECK(text.find("brisk_batcher_level_queued{model=\"all-MiniLM-L6-v2\",priority=\"bulk\"} 0") != std::string::npos);
}

TEST_CASE("bad batching options are rejected at create", "[runtime][batch]") {
  brisk::RuntimeOptions opts = options();
  opts.batching.max_batch_size = 0;
  auto rt = brisk::Runtime::create(opts);
  REQUIRE_FALSE(rt.ok());
  CHECK(rt.status().message().find("RuntimeOptions::batching: BatchPolicy.max_batch_size is 0") !=
        std::string_view::npos);
}
