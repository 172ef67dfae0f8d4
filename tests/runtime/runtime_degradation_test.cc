// Degradation: a request the model's queue refuses for overload is answered by RuntimeOptions::fallback (the real
// MiniLM, checked against Hugging Face's embeddings in tests/data/golden_minilm.json), a rate-limited one is not;
// with allow_stale, a request the model fails is answered by a result that expired less than stale_ttl ago; a
// single-flight follower that the model refuses once its leader is gone degrades the same way; and every answer
// names its path, in the callback, the stats and Prometheus.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "test_util.h"

namespace {

using brisk::AnswerPath;
using brisk::Runtime;

// A host backend the test controls: rows of 384 copies of the sequence's token count; run() blocks while the gate
// is closed and fails while `failing` is set.
class ControlledBackend final : public brisk::Backend {
 public:
  ControlledBackend() {
    info_.name = "controlled";
    info_.output_dim = 384;
  }
  const brisk::BackendInfo& info() const override { return info_; }
  brisk::Status run(const brisk::PackedSequences& batch, std::span<float> out) const override {
    {
      std::unique_lock lock(mu_);
      runs_++;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
      if (failing_) return absl::InternalError("the controlled backend is failing");
    }
    for (int64_t i = 0; i < batch.size(); ++i) {
      std::fill_n(out.begin() + i * 384, 384, static_cast<float>(batch.length(i)));
    }
    return absl::OkStatus();
  }
  size_t estimate_activation_bytes(const brisk::BatchShape&) const override { return 0; }

  void set_open(bool open) const {
    std::lock_guard lock(mu_);
    open_ = open;
    cv_.notify_all();
  }
  void set_failing(bool failing) const {
    std::lock_guard lock(mu_);
    failing_ = failing;
  }
  void wait_runs(int n) const {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return runs_ >= n; });
  }

 private:
  brisk::BackendInfo info_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable int runs_ = 0;
  mutable bool open_ = true;
  mutable bool failing_ = false;
};

struct Answer {
  brisk::StatusOr<std::vector<float>> embedding = absl::UnknownError("not answered");
  AnswerPath path = AnswerPath::kModel;
  uint64_t id = 0;  // the id the callback got
};

// Submits `text` and returns a future of its answer, or the submit's error; *submitted gets the submit's id.
brisk::StatusOr<std::future<Answer>> submit(const Runtime& rt, std::string_view text,
                                            const brisk::EmbedRequestOptions& options = {},
                                            uint64_t* submitted = nullptr) {
  auto promise = std::make_shared<std::promise<Answer>>();
  std::future<Answer> future = promise->get_future();
  auto id = rt.submit(text, options, [promise](uint64_t id, brisk::StatusOr<std::vector<float>> e, AnswerPath path) {
    promise->set_value(Answer{std::move(e), path, id});
  });
  if (!id.ok()) return id.status();
  if (submitted != nullptr) *submitted = *id;
  return future;
}

brisk::RuntimeOptions controlled_options() {
  brisk::RuntimeOptions o = brisk::testing::runtime_options();  // the MiniLM tokenizer
  o.max_seq_len = 512;  // the golden embeddings are transformers' truncation at 512
  o.cache.result_cache_bytes = 0;
  return o;
}

std::unique_ptr<Runtime> create(const brisk::RuntimeOptions& o, const ControlledBackend*& backend) {
  auto owned = std::make_unique<ControlledBackend>();
  backend = owned.get();
  auto rt = Runtime::create(o, std::move(owned));
  INFO(rt.status());
  REQUIRE(rt.ok());
  return std::move(*rt);
}

struct Golden {
  std::string text;
  std::vector<float> embedding;
};

Golden golden_item(size_t i) {
  std::ifstream in(brisk::testing::test_data_dir() / "golden_minilm.json");
  REQUIRE(in.good());
  const nlohmann::json item = nlohmann::json::parse(in).at("items").at(i);
  return {item.at("text").get<std::string>(), item.at("embedding").get<std::vector<float>>()};
}

uint64_t answers(const Runtime& rt, const char* path) {
  return nlohmann::json::parse(rt.stats_json()).at("answers").at(path).get<uint64_t>();
}

}  // namespace

TEST_CASE("degradation: a request the full queue refuses is answered by the fallback model") {
  brisk::RuntimeOptions o = controlled_options();
  o.batching.max_queue_size = 1;
  o.fallback = brisk::FallbackOptions{.model_dir = brisk::testing::model_dir().string(),
                                      .classification_head = {},
                                      .num_threads = brisk::testing::compute_threads()};
  const ControlledBackend* backend = nullptr;
  auto rt = create(o, backend);
  CHECK(rt->info().fallback == o.fallback->model_dir);

  backend->set_open(false);
  auto running = submit(*rt, "the first question");  // taken by the executor, which then blocks
  REQUIRE(running.ok());
  backend->wait_runs(1);
  auto queued = submit(*rt, "the second question");  // fills the queue
  REQUIRE(queued.ok());

  const Golden golden = golden_item(3);
  auto rerouted = submit(*rt, golden.text);  // the queue is full: the fallback answers
  REQUIRE(rerouted.ok());
  Answer fallback_answer = rerouted->get();
  REQUIRE(fallback_answer.embedding.ok());
  CHECK(fallback_answer.path == AnswerPath::kFallback);
  REQUIRE(fallback_answer.embedding->size() == golden.embedding.size());
  CHECK(brisk::testing::cosine(fallback_answer.embedding->data(), golden.embedding.data(), golden.embedding.size()) >
        0.9999);

  backend->set_open(true);
  for (auto* f : {&*running, &*queued}) {
    Answer a = f->get();
    REQUIRE(a.embedding.ok());
    CHECK(a.path == AnswerPath::kModel);
    CHECK(a.embedding->at(0) > 2.0f);  // the controlled backend's row: the token count
  }
  CHECK(answers(*rt, "fallback") == 1);
  CHECK(answers(*rt, "model") == 2);
  const std::string prom = rt->metrics_prometheus();
  CHECK_THAT(prom, Catch::Contains("path=\"fallback\"} 1"));
  CHECK_THAT(prom, Catch::Contains("brisk_runtime_answers_total"));
}

TEST_CASE("degradation: a rate-limited request is refused, not rerouted to the fallback") {
  brisk::RuntimeOptions o = controlled_options();
  o.batching.levels[0].rate_limit = 0.001;  // one token, refilled every 1000 s
  o.batching.levels[0].burst = 1;
  o.fallback = brisk::FallbackOptions{.model_dir = brisk::testing::model_dir().string(),
                                      .classification_head = {},
                                      .num_threads = brisk::testing::compute_threads()};
  const ControlledBackend* backend = nullptr;
  auto rt = create(o, backend);
  auto first = submit(*rt, "within the quota");
  REQUIRE(first.ok());
  CHECK(first->get().path == AnswerPath::kModel);
  auto second = submit(*rt, "over the quota");
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(brisk::batch::is_rate_limited(second.status()));
  CHECK(answers(*rt, "fallback") == 0);
}

TEST_CASE("degradation: with allow_stale an expired result answers when the model fails, until invalidated") {
  brisk::RuntimeOptions o = controlled_options();
  o.cache.result_cache_bytes = 1 << 20;
  o.cache.result_ttl = std::chrono::milliseconds(50);
  o.cache.stale_ttl = std::chrono::minutes(10);
  const ControlledBackend* backend = nullptr;
  auto rt = create(o, backend);

  auto fresh = submit(*rt, "where is my card", {.cache_tags = {"faq:card"}});
  REQUIRE(fresh.ok());
  Answer model = fresh->get();
  REQUIRE(model.embedding.ok());
  CHECK(model.path == AnswerPath::kModel);
  auto cached = submit(*rt, "where is my card");
  REQUIRE(cached.ok());
  CHECK(cached->get().path == AnswerPath::kCache);

  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // past result_ttl
  backend->set_failing(true);
  auto strict = submit(*rt, "where is my card");
  REQUIRE(strict.ok());
  Answer failed = strict->get();
  CHECK(failed.embedding.status().code() == absl::StatusCode::kInternal);

  auto lenient = submit(*rt, "where is my card", {.allow_stale = true});
  REQUIRE(lenient.ok());
  Answer stale = lenient->get();
  REQUIRE(stale.embedding.ok());
  CHECK(stale.path == AnswerPath::kStaleCache);
  CHECK(*stale.embedding == *model.embedding);
  CHECK(answers(*rt, "stale") == 1);
  CHECK_THAT(rt->metrics_prometheus(), Catch::Contains("path=\"stale\"} 1"));

  auto unknown = submit(*rt, "a text never answered", {.allow_stale = true});  // nothing stale to give
  REQUIRE(unknown.ok());
  CHECK(unknown->get().embedding.status().code() == absl::StatusCode::kInternal);

  // Withdrawn knowledge is not served stale.
  REQUIRE(rt->cache_invalidate_tag("faq:card").ok());
  auto withdrawn = submit(*rt, "where is my card", {.allow_stale = true});
  REQUIRE(withdrawn.ok());
  CHECK(withdrawn->get().embedding.status().code() == absl::StatusCode::kInternal);
}

TEST_CASE("degradation: a fallback that cannot answer the same task, and bad stale options, are refused") {
  auto bad = [&](brisk::RuntimeOptions o, const char* what) {
    auto rt = Runtime::create(o, std::make_unique<ControlledBackend>());
    REQUIRE_FALSE(rt.ok());
    CHECK_THAT(std::string(rt.status().message()), Catch::Contains(what));
  };
  brisk::RuntimeOptions o = controlled_options();
  o.fallback = brisk::FallbackOptions{};
  bad(o, "fallback.model_dir is empty");
  // A classification model cannot stand in for an embedding model.
  o.fallback = brisk::FallbackOptions{.model_dir = (brisk::testing::test_data_dir() / "tasks/bert_cls").string(),
                                      .classification_head = {}};
  bad(o, "expected embedding");
  o.fallback = brisk::FallbackOptions{.model_dir = "/nonexistent/model", .classification_head = {}};
  bad(o, "RuntimeOptions::fallback: model directory '/nonexistent/model' does not exist");

  brisk::RuntimeOptions s = controlled_options();
  s.cache.result_cache_bytes = 1 << 20;
  s.cache.stale_ttl = std::chrono::nanoseconds(-1);
  bad(s, "stale_ttl is negative");
  s.cache.stale_ttl = std::chrono::minutes(1);
  s.cache.result_ttl = std::chrono::nanoseconds(0);
  bad(s, "expected both > 0");
  s.cache.result_ttl = std::chrono::minutes(1);
  s.cache.redis = brisk::cache::RedisOptions{};
  s.cache.redis->allow_unsigned = true;
  bad(s, "stale_ttl is set with a Redis tier");
}

TEST_CASE("degradation: with no fallback, a submit the full queue refuses is answered stale at once when allowed") {
  brisk::RuntimeOptions o = controlled_options();
  o.batching.max_queue_size = 1;
  o.cache.result_cache_bytes = 1 << 20;
  o.cache.result_ttl = std::chrono::milliseconds(50);
  o.cache.stale_ttl = std::chrono::minutes(10);
  const ControlledBackend* backend = nullptr;
  auto rt = create(o, backend);
  auto first = submit(*rt, "cancel my card");
  REQUIRE(first.ok());
  Answer model = first->get();
  REQUIRE(model.embedding.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // past result_ttl

  backend->set_open(false);
  auto running = submit(*rt, "the executor is busy with this");
  REQUIRE(running.ok());
  backend->wait_runs(2);
  auto queued = submit(*rt, "and this one fills the queue");
  REQUIRE(queued.ok());
  auto refused = submit(*rt, "cancel my card");  // the queue is full
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kResourceExhausted);
  auto stale = submit(*rt, "cancel my card", {.allow_stale = true});
  REQUIRE(stale.ok());
  REQUIRE(stale->wait_for(std::chrono::seconds(0)) == std::future_status::ready);  // answered before submit returned
  Answer answer = stale->get();
  REQUIRE(answer.embedding.ok());
  CHECK(answer.path == AnswerPath::kStaleCache);
  CHECK(*answer.embedding == *model.embedding);
  backend->set_open(true);
  CHECK(running->get().embedding.ok());
  CHECK(queued->get().embedding.ok());
}

TEST_CASE("degradation: a follower of a cancelled leader that the full queue refuses is answered by the fallback") {
  // Single flight: the follower joined the running leader and its submit returned OK. The leader is cancelled; run
  // on its own, the follower finds the queue full, and the fallback model answers it under its own id, as it
  // answers a submit the full queue refuses (before, its callback got RESOURCE_EXHAUSTED).
  brisk::RuntimeOptions o = controlled_options();
  o.batching.max_queue_size = 2;
  o.batching.max_batch_size = 1;
  o.batching.preferred_batch_multiple = 1;
  o.batching.max_queue_delay = std::chrono::milliseconds(0);
  o.batching.reject_predicted_late = false;
  o.fallback = brisk::FallbackOptions{.model_dir = brisk::testing::model_dir().string(),
                                      .classification_head = {},
                                      .num_threads = brisk::testing::compute_threads()};
  const ControlledBackend* backend = nullptr;
  auto rt = create(o, backend);
  const Golden golden = golden_item(3);

  backend->set_open(false);
  uint64_t leader_id = 0, follower_id = 0;
  auto leader = submit(*rt, golden.text, {}, &leader_id);
  REQUIRE(leader.ok());
  backend->wait_runs(1);  // the leader's batch runs, blocked
  auto follower = submit(*rt, golden.text, {}, &follower_id);
  REQUIRE(follower.ok());
  REQUIRE(follower_id != leader_id);
  auto a = submit(*rt, "the first question");
  auto b = submit(*rt, "the second question");  // the queue is full
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(rt->cancel(leader_id).ok());
  backend->set_open(true);  // the leader's batch ends: the leader is cancelled, the follower runs on its own

  CHECK(leader->get().embedding.status().code() == absl::StatusCode::kCancelled);
  Answer answer = follower->get();
  REQUIRE(answer.embedding.ok());
  CHECK(answer.path == AnswerPath::kFallback);
  CHECK(answer.id == follower_id);
  REQUIRE(answer.embedding->size() == golden.embedding.size());
  CHECK(brisk::testing::cosine(answer.embedding->data(), golden.embedding.data(), golden.embedding.size()) > 0.9999);
  for (auto* f : {&*a, &*b}) {
    Answer queued = f->get();
    REQUIRE(queued.embedding.ok());
    CHECK(queued.path == AnswerPath::kModel);
  }
  CHECK(answers(*rt, "fallback") == 1);
}
