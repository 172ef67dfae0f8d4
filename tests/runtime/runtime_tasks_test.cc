// Sequence classification and cross-encoder reranking against Hugging Face transformers' logits on tiny random
// models (tests/data/make_task_golden.py), alone and inside mixed-length batches, and the tasks' bad inputs; their
// submitted forms (submit_classify with raw_scores, submit_rerank) give the same numbers and honour deadlines,
// cancel(), overload refusals, the result cache and the fallback model.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <filesystem>

#include "brisk/core/allocator.h"
#include "brisk/model/classification_head.h"
#include "brisk/model/tokenizer.h"
#include "brisk/prune/structured.h"
#include "brisk/quant/model_file.h"
#include "brisk/runtime/runtime.h"
#include "runtime_test_util.h"
#include "test_util.h"

namespace {

using brisk::Runtime;
using brisk::RuntimeOptions;
using nlohmann::json;

constexpr float kTolerance = 1e-4f;

std::string task_dir(const std::string& model) { return (brisk::testing::test_data_dir() / "tasks" / model).string(); }

json golden(const std::string& model) {
  std::ifstream in(task_dir(model) + "/golden.json");
  REQUIRE(in.good());
  return json::parse(in);
}

RuntimeOptions task_options(const std::string& model, int max_seq_len) {
  RuntimeOptions o;
  o.model_dir = task_dir(model);
  o.max_seq_len = max_seq_len;
  o.num_threads = brisk::testing::compute_threads();
  o.cache.result_cache_bytes = 0;  // every answer from the model
  return o;
}

void require_close(std::span<const float> got, const json& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::abs(got[i] - want[i].get<float>()) <= kTolerance);
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

using namespace std::chrono_literals;

// A submitted request's answer: its result and the path that answered, through a future.
template <typename T>
struct Awaited {
  using Got = std::pair<brisk::StatusOr<T>, brisk::AnswerPath>;
  std::shared_ptr<std::promise<Got>> promise = std::make_shared<std::promise<Got>>();
  std::future<Got> future = promise->get_future();
  auto callback() {
    return [p = promise](uint64_t, brisk::StatusOr<T> r, brisk::AnswerPath path) {
      p->set_value({std::move(r), path});
    };
  }
  Got get() {
    REQUIRE(future.wait_for(30s) == std::future_status::ready);
    return future.get();
  }
};
using Score = Awaited<float>;
using Labels = Awaited<std::vector<brisk::LabelScore>>;

// A batcher that holds what is queued (a minute's queue delay, batches far larger than a test fills), with room for
// three requests: what a test submits stays queued, uncomputed, until it is cancelled, expires or is refused.
RuntimeOptions holding(RuntimeOptions o) {
  o.batching.max_batch_size = 64;
  o.batching.max_queue_delay = 60s;
  o.batching.max_queue_size = 3;
  return o;
}

}  // namespace

TEST_CASE("tasks: classification logits equal transformers', alone and in one mixed-length batch") {
  for (const std::string model : {"bert_cls", "bert_multilabel", "distilbert_cls", "distilbert_multilabel"}) {
    INFO(model);
    const json g = golden(model);
    auto rt = brisk::testing::make_runtime(task_options(model, g["max_length"].get<int>()));
    REQUIRE(rt->info().task == "classification");
    REQUIRE(rt->embedding_dim() == 0);
    std::vector<std::string> texts;
    for (const json& item : g["single"]) texts.push_back(item["text"].get<std::string>());
    std::vector<std::string_view> views(texts.begin(), texts.end());
    const size_t labels = g["single"][0]["logits"].size();
    REQUIRE(rt->info().labels.size() == labels);

    auto tok = brisk::WordPieceTokenizer::from_model_dir(task_dir(model));
    REQUIRE(tok.ok());
    for (size_t i = 0; i < texts.size(); ++i) {
      auto ids = tok->encode(texts[i], g["max_length"].get<int>());
      REQUIRE(ids.ok());
      REQUIRE(*ids == g["single"][i]["ids"].get<std::vector<int32_t>>());
      auto alone = rt->logits(std::span(views).subspan(i, 1));
      REQUIRE(alone.ok());
      require_close(*alone, g["single"][i]["logits"], "alone: " + texts[i]);
    }
    auto batch = rt->logits(views);
    REQUIRE(batch.ok());
    for (size_t i = 0; i < texts.size(); ++i) {
      require_close(std::span<const float>(*batch).subspan(i * labels, labels), g["single"][i]["logits"],
                    "in a batch: " + texts[i]);
    }
    REQUIRE(rt->forward_passes() == texts.size() + 1);

    // Probabilities: a softmax over the labels, or a sigmoid per label for multi-label models.
    auto top = rt->classify(views, static_cast<int>(labels));
    REQUIRE(top.ok());
    const bool multi = model.find("multilabel") != std::string::npos;
    REQUIRE(rt->info().multi_label == multi);
    for (size_t i = 0; i < texts.size(); ++i) {
      const json& want = g["single"][i]["logits"];
      std::vector<float> p(labels);
      float sum = 0;
      for (size_t k = 0; k < labels; ++k)
        sum += (p[k] = multi ? sigmoid(want[k].get<float>()) : std::exp(want[k].get<float>()));
      if (!multi)
        for (float& v : p) v /= sum;
      const auto& got = (*top)[i];
      REQUIRE(got.size() == labels);
      for (size_t k = 0; k < labels; ++k) {
        REQUIRE(got[k].label == rt->info().labels[static_cast<size_t>(got[k].id)]);
        REQUIRE(std::abs(got[k].score - p[static_cast<size_t>(got[k].id)]) <= 1e-4f);
        if (k > 0) REQUIRE(got[k - 1].score >= got[k].score);
      }
    }
  }
}

TEST_CASE("tasks: labels come from config.json's id2label") {
  auto rt = brisk::testing::make_runtime(task_options("bert_cls", 24));
  REQUIRE(rt->info().labels == std::vector<std::string>{"billing", "card_lost", "greeting"});
  std::vector<std::string_view> texts = {"my card is lost"};
  auto top = rt->classify(texts, 1);
  REQUIRE(top.ok());
  REQUIRE((*top)[0].size() == 1);
}

TEST_CASE("tasks: cross-encoder pairs equal transformers' token ids and logits, and rerank sorts them") {
  const json g = golden("cross_encoder");
  const int max_len = g["max_length"].get<int>();
  auto rt = brisk::testing::make_runtime(task_options("cross_encoder", max_len));
  auto tok = brisk::WordPieceTokenizer::from_model_dir(task_dir("cross_encoder"));
  REQUIRE(tok.ok());
  std::vector<std::string> passages;
  for (const json& pair : g["pairs"]) passages.push_back(pair["passage"].get<std::string>());
  std::vector<std::string_view> all(passages.begin(), passages.end());
  for (size_t i = 0; i < g["pairs"].size(); ++i) {
    const json& pair = g["pairs"][i];
    const std::string query = pair["query"].get<std::string>();
    INFO(query << " | " << passages[i]);
    auto encoded = tok->encode_pair(query, passages[i], max_len);
    REQUIRE(encoded.ok());
    REQUIRE(encoded->ids == pair["ids"].get<std::vector<int32_t>>());
    REQUIRE(encoded->token_type_ids() == pair["token_type_ids"].get<std::vector<int32_t>>());

    brisk::RerankOptions raw;
    raw.raw_scores = true;
    auto alone = rt->rerank(query, std::span(all).subspan(i, 1), raw);
    REQUIRE(alone.ok());
    REQUIRE(std::abs((*alone)[0].score - pair["logits"][0].get<float>()) <= kTolerance);
    // The same pair among every other passage: one mixed-length batch, sorted by score.
    auto ranked = rt->rerank(query, all, raw);
    REQUIRE(ranked.ok());
    REQUIRE(ranked->size() == all.size());
    bool found = false;
    for (size_t k = 0; k < ranked->size(); ++k) {
      if (k > 0) REQUIRE((*ranked)[k - 1].score >= (*ranked)[k].score);
      if ((*ranked)[k].index == i) {
        found = true;
        REQUIRE(std::abs((*ranked)[k].score - pair["logits"][0].get<float>()) <= kTolerance);
      }
    }
    REQUIRE(found);
    auto scored = rt->rerank(query, std::span(all).subspan(i, 1));
    REQUIRE(scored.ok());
    REQUIRE(std::abs((*scored)[0].score - sigmoid(pair["logits"][0].get<float>())) <= 1e-5f);
  }
}

TEST_CASE("tasks: a pair and a single text with the same ids do not share a cache entry") {
  RuntimeOptions o = task_options("cross_encoder", 24);
  o.cache.result_cache_bytes = 1 << 20;
  auto cached = brisk::testing::make_runtime(o);
  auto fresh = brisk::testing::make_runtime(task_options("cross_encoder", 24));
  brisk::RerankOptions raw;
  raw.raw_scores = true;
  std::vector<std::string_view> passage = {"lost card"};
  REQUIRE(cached->rerank("my pin", passage, raw).ok());
  // "[SEP]" written in a text is the special token: the same ids as the pair, with token types all 0.
  std::vector<std::string_view> single = {"my pin [SEP] lost card"};
  auto from_cache = cached->logits(single);
  auto from_model = fresh->logits(single);
  REQUIRE(from_cache.ok());
  REQUIRE(from_model.ok());
  REQUIRE((*from_cache)[0] == Approx((*from_model)[0]).margin(1e-6));
  auto pair = cached->rerank("my pin", passage, raw);
  REQUIRE(pair.ok());
  REQUIRE(std::abs((*pair)[0].score - (*from_model)[0]) > 1e-4f);  // token types matter: not served the single's
}

TEST_CASE("tasks: bad input gets a clear error") {
  auto cls = brisk::testing::make_runtime(task_options("bert_cls", 24));
  std::vector<std::string_view> texts = {"hello"};
  SECTION("top_k out of range") {
    for (int k : {0, -1, 4}) {
      auto r = cls->classify(texts, k);
      REQUIRE(r.status().code() == absl::StatusCode::kInvalidArgument);
      REQUIRE_THAT(std::string(r.status().message()),
                   Catch::Contains("top_k is") && Catch::Contains("expected 1 to 3"));
    }
  }
  SECTION("embed on a classification model") {
    auto r = cls->embed(texts);
    REQUIRE(r.status().code() == absl::StatusCode::kFailedPrecondition);
    REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("classification model"));
  }
  SECTION("rerank needs one label") {
    auto r = cls->rerank("q", texts);
    REQUIRE(r.status().code() == absl::StatusCode::kFailedPrecondition);
    REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("has 3 labels"));
  }
  SECTION("classify on an embedding model") {
    RuntimeOptions o;
    o.model_dir = brisk::default_model_dir();  // all-MiniLM-L6-v2, an embedding model
    auto emb = brisk::testing::make_runtime(o);
    auto r = emb->classify(texts, 1);
    REQUIRE(r.status().code() == absl::StatusCode::kFailedPrecondition);
    REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("no classification head"));
    REQUIRE(emb->rerank("q", texts).status().code() == absl::StatusCode::kFailedPrecondition);
  }
  SECTION("rerank with no passages, and with 10,000 (batched, not refused)") {
    auto ce = brisk::testing::make_runtime(task_options("cross_encoder", 24));
    auto none = ce->rerank("q", {});
    REQUIRE(none.status().code() == absl::StatusCode::kInvalidArgument);
    REQUIRE_THAT(std::string(none.status().message()), Catch::Contains("passages is empty"));
    std::vector<std::string> many;
    for (int i = 0; i < 10000; ++i) many.push_back("card number " + std::to_string(i % 97) + " lost");
    std::vector<std::string_view> views(many.begin(), many.end());
    auto ranked = ce->rerank("lost card", views);
    REQUIRE(ranked.ok());
    REQUIRE(ranked->size() == 10000);
    REQUIRE(ce->forward_passes() >= 10000 / 32);
    brisk::RerankOptions top;
    top.top_k = 5;
    auto best = ce->rerank("lost card", views, top);
    REQUIRE(best.ok());
    REQUIRE(best->size() == 5);
    REQUIRE((*best)[0].score == (*ranked)[0].score);
  }
  SECTION("invalid UTF-8 names the passage") {
    auto ce = brisk::testing::make_runtime(task_options("cross_encoder", 24));
    std::vector<std::string_view> bad = {"fine", "bad \xff byte"};
    auto r = ce->rerank("q", bad);
    REQUIRE(r.status().code() == absl::StatusCode::kInvalidArgument);
    REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("passage 1"));
  }
}

TEST_CASE("tasks: submit_classify with raw_scores gives each label the logit that logits gives it and best first") {
  for (const std::string model : {"bert_cls", "bert_multilabel", "distilbert_cls"}) {
    INFO(model);
    const json g = golden(model);
    auto rt = brisk::testing::make_runtime(task_options(model, g["max_length"].get<int>()));
    const size_t labels = rt->info().labels.size();
    std::vector<Labels> all(g["single"].size()), probs(g["single"].size()), best(g["single"].size());
    std::vector<std::string> texts;
    for (const json& item : g["single"]) texts.push_back(item["text"].get<std::string>());
    // Every text submitted before any is awaited: they share forward passes (mixed lengths).
    for (size_t i = 0; i < texts.size(); ++i) {
      brisk::ClassifyRequestOptions o;
      o.top_k = static_cast<int>(labels);
      o.raw_scores = true;
      REQUIRE(rt->submit_classify(texts[i], o, all[i].callback()).ok());
      o.top_k = 1;
      REQUIRE(rt->submit_classify(texts[i], o, best[i].callback()).ok());
      o.raw_scores = false;
      o.top_k = static_cast<int>(labels);
      REQUIRE(rt->submit_classify(texts[i], o, probs[i].callback()).ok());
    }
    for (size_t i = 0; i < texts.size(); ++i) {
      INFO(texts[i]);
      const json& want = g["single"][i]["logits"];
      std::vector<std::string_view> one = {texts[i]};
      auto sync = rt->logits(one);
      REQUIRE(sync.ok());
      auto [got, path] = all[i].get();
      REQUIRE(got.ok());
      CHECK(path == brisk::AnswerPath::kModel);
      REQUIRE(got->size() == labels);
      for (size_t k = 0; k < labels; ++k) {
        const auto id = static_cast<size_t>((*got)[k].id);
        REQUIRE((*got)[k].label == rt->info().labels[id]);
        REQUIRE(std::abs((*got)[k].score - (*sync)[id]) <= kTolerance);
        REQUIRE(std::abs((*got)[k].score - want[id].get<float>()) <= kTolerance);
        if (k > 0) REQUIRE((*got)[k - 1].score >= (*got)[k].score);
      }
      auto [top, top_path] = best[i].get();
      REQUIRE(top.ok());
      REQUIRE(top->size() == 1);
      REQUIRE((*top)[0].id == (*got)[0].id);
      REQUIRE(std::abs((*top)[0].score - (*got)[0].score) <= kTolerance);
      // Without raw_scores the same request gives probabilities, which the logits here are not.
      auto [p, p_path] = probs[i].get();
      REQUIRE(p.ok());
      float sum = 0;
      bool differs = false;
      for (size_t k = 0; k < labels; ++k) {
        sum += (*p)[k].score;
        differs |= std::abs((*p)[k].score - (*got)[k].score) > 1e-3f;
      }
      if (!rt->info().multi_label) REQUIRE(std::abs(sum - 1.0f) <= 1e-4f);
      REQUIRE(differs);
    }
  }
}

TEST_CASE("tasks: submit_rerank gives the score that rerank gives each pair both raw and as a sigmoid") {
  const json g = golden("cross_encoder");
  const int max_len = g["max_length"].get<int>();
  auto rt = brisk::testing::make_runtime(task_options("cross_encoder", max_len));
  const size_t n = g["pairs"].size();
  REQUIRE(n >= 2);
  std::vector<Score> raw(n), scored(n);
  // All pairs in flight together: they share forward passes, with their mixed lengths and token types.
  for (size_t i = 0; i < n; ++i) {
    const json& pair = g["pairs"][i];
    const std::string query = pair["query"].get<std::string>(), passage = pair["passage"].get<std::string>();
    brisk::RerankRequestOptions o;
    o.raw_scores = true;
    REQUIRE(rt->submit_rerank(query, passage, o, raw[i].callback()).ok());
    o.raw_scores = false;
    REQUIRE(rt->submit_rerank(query, passage, o, scored[i].callback()).ok());
  }
  for (size_t i = 0; i < n; ++i) {
    const json& pair = g["pairs"][i];
    const std::string query = pair["query"].get<std::string>(), passage = pair["passage"].get<std::string>();
    INFO(query << " | " << passage);
    const float want = pair["logits"][0].get<float>();
    std::vector<std::string_view> one = {passage};
    brisk::RerankOptions raw_opts;
    raw_opts.raw_scores = true;
    auto sync_raw = rt->rerank(query, one, raw_opts);
    auto sync = rt->rerank(query, one);
    REQUIRE(sync_raw.ok());
    REQUIRE(sync.ok());
    auto [logit, path] = raw[i].get();
    REQUIRE(logit.ok());
    CHECK(path == brisk::AnswerPath::kModel);
    REQUIRE(std::abs(*logit - want) <= kTolerance);
    REQUIRE(std::abs(*logit - (*sync_raw)[0].score) <= kTolerance);
    auto [score, score_path] = scored[i].get();
    REQUIRE(score.ok());
    REQUIRE(std::abs(*score - sigmoid(want)) <= 1e-5f);
    REQUIRE(std::abs(*score - (*sync)[0].score) <= 1e-5f);
  }
  // The two-argument callback gets the same score.
  const json& first = g["pairs"][0];
  auto promise = std::make_shared<std::promise<brisk::StatusOr<float>>>();
  auto future = promise->get_future();
  REQUIRE(rt->submit_rerank(first["query"].get<std::string>(), first["passage"].get<std::string>(), {},
                            [promise](uint64_t, brisk::StatusOr<float> s) { promise->set_value(std::move(s)); })
              .ok());
  REQUIRE(future.wait_for(30s) == std::future_status::ready);
  auto plain = future.get();
  REQUIRE(plain.ok());
  REQUIRE(std::abs(*plain - sigmoid(first["logits"][0].get<float>())) <= 1e-5f);
}

TEST_CASE("tasks: submitted pairs and raw classifications cancelled or expired or refused are not computed") {
  SECTION("submit_rerank") {
    auto rt = brisk::testing::make_runtime(holding(task_options("cross_encoder", 24)));
    Score cancelled;
    auto id = rt->submit_rerank("lost card", "cancel me", {}, cancelled.callback());
    REQUIRE(id.ok());
    REQUIRE(rt->cancel(*id).ok());
    REQUIRE(cancelled.future.wait_for(0s) == std::future_status::ready);  // queued: completed inside cancel()
    CHECK(cancelled.get().first.status().code() == absl::StatusCode::kCancelled);
    CHECK(rt->cancel(*id).code() == absl::StatusCode::kNotFound);

    Score expiring;
    brisk::RerankRequestOptions soon;
    soon.timeout = 30ms;
    REQUIRE(rt->submit_rerank("lost card", "expire me", soon, expiring.callback()).ok());
    CHECK(expiring.get().first.status().code() == absl::StatusCode::kDeadlineExceeded);  // the timer, not a batch

    // A deadline already past by the time the batcher sees it: refused at submit, or answered DEADLINE_EXCEEDED.
    Score past;
    brisk::RerankRequestOptions now;
    now.timeout = 1ns;
    auto past_id = rt->submit_rerank("lost card", "too late", now, past.callback());
    if (past_id.ok()) {
      CHECK(past.get().first.status().code() == absl::StatusCode::kDeadlineExceeded);
    } else {
      CHECK(past_id.status().code() == absl::StatusCode::kDeadlineExceeded);
    }

    // Passages of distinct token ids (the tiny vocabulary makes most words [UNK]): no single flight, three queued.
    const std::vector<std::string> passages = {"reset your pin", "open the app", "call support"};
    std::vector<Score> kept(passages.size());
    for (size_t i = 0; i < kept.size(); ++i) {
      REQUIRE(rt->submit_rerank("lost card", passages[i], {}, kept[i].callback()).ok());
    }
    bool called = false;
    auto full = rt->submit_rerank("lost card", "refund payment", {},
                                  [&called](uint64_t, brisk::StatusOr<float>) { called = true; });
    REQUIRE_FALSE(full.ok());
    CHECK(full.status().code() == absl::StatusCode::kResourceExhausted);
    CHECK_THAT(std::string(full.status().message()), Catch::Contains("max_queue_size 3"));
    CHECK_FALSE(called);
    CHECK(rt->forward_passes() == 0);  // nothing cancelled, expired or refused was computed
    const json stats = json::parse(rt->stats_json());
    CHECK(stats["batcher"]["cancelled"] == 1);
    CHECK(stats["batcher"]["rejected"]["overloaded"] == 1);

    rt.reset();  // the three queued pairs complete, UNAVAILABLE, before the destructor returns
    for (Score& k : kept) {
      REQUIRE(k.future.wait_for(0s) == std::future_status::ready);
      CHECK(k.get().first.status().code() == absl::StatusCode::kUnavailable);
    }
  }
  SECTION("submit_classify with raw_scores") {
    auto rt = brisk::testing::make_runtime(holding(task_options("bert_cls", 24)));
    brisk::ClassifyRequestOptions o;
    o.raw_scores = true;
    Labels cancelled;
    auto id = rt->submit_classify("cancel me", o, cancelled.callback());
    REQUIRE(id.ok());
    REQUIRE(rt->cancel(*id).ok());
    CHECK(cancelled.get().first.status().code() == absl::StatusCode::kCancelled);

    Labels expiring;
    brisk::ClassifyRequestOptions soon = o;
    soon.timeout = 30ms;
    REQUIRE(rt->submit_classify("expire me", soon, expiring.callback()).ok());
    CHECK(expiring.get().first.status().code() == absl::StatusCode::kDeadlineExceeded);

    const std::vector<std::string> texts = {"hello", "lost card", "reset my pin"};
    std::vector<Labels> kept(texts.size());
    for (size_t i = 0; i < kept.size(); ++i) REQUIRE(rt->submit_classify(texts[i], o, kept[i].callback()).ok());
    auto full = rt->submit_classify(
        "refund payment", o, [](uint64_t, brisk::StatusOr<std::vector<brisk::LabelScore>>) { FAIL("called back"); });
    CHECK(full.status().code() == absl::StatusCode::kResourceExhausted);
    CHECK(rt->forward_passes() == 0);
    rt.reset();
    for (Labels& k : kept) CHECK(k.get().first.status().code() == absl::StatusCode::kUnavailable);
  }
}

TEST_CASE("tasks: a submitted pair is served from the result cache and by the fallback cross-encoder") {
  const json g = golden("cross_encoder");
  const json& pair = g["pairs"][1];
  const std::string query = pair["query"].get<std::string>(), passage = pair["passage"].get<std::string>();
  const float want = pair["logits"][0].get<float>();
  brisk::RerankRequestOptions raw;
  raw.raw_scores = true;
  SECTION("cache") {
    RuntimeOptions o = task_options("cross_encoder", 24);
    o.cache.result_cache_bytes = 1 << 20;
    auto rt = brisk::testing::make_runtime(o);
    Score first, again, as_sigmoid;
    REQUIRE(rt->submit_rerank(query, passage, raw, first.callback()).ok());
    auto [a, a_path] = first.get();
    REQUIRE(a.ok());
    CHECK(a_path == brisk::AnswerPath::kModel);
    REQUIRE(rt->submit_rerank(query, passage, raw, again.callback()).ok());
    auto [b, b_path] = again.get();
    REQUIRE(b.ok());
    CHECK(b_path == brisk::AnswerPath::kCache);
    CHECK(*b == *a);
    REQUIRE(rt->submit_rerank(query, passage, {}, as_sigmoid.callback()).ok());  // the cache holds the logit
    auto [c, c_path] = as_sigmoid.get();
    REQUIRE(c.ok());
    CHECK(c_path == brisk::AnswerPath::kCache);
    CHECK(std::abs(*c - sigmoid(*a)) <= 1e-6f);
    CHECK(rt->forward_passes() == 1);
  }
  SECTION("fallback") {
    RuntimeOptions o = holding(task_options("cross_encoder", 24));
    o.batching.max_queue_size = 1;
    o.fallback.emplace();
    o.fallback->model_dir = task_dir("cross_encoder");
    auto rt = brisk::testing::make_runtime(o);
    Score queued, rerouted;
    REQUIRE(rt->submit_rerank(query, "held in the primary's queue", raw, queued.callback()).ok());
    REQUIRE(rt->submit_rerank(query, passage, raw, rerouted.callback()).ok());
    auto [score, path] = rerouted.get();
    REQUIRE(score.ok());
    CHECK(path == brisk::AnswerPath::kFallback);
    // transformers' logit of the pair: the fallback was given its token types, not a single text's.
    CHECK(std::abs(*score - want) <= kTolerance);
    CHECK(rt->forward_passes() == 0);
  }
}

TEST_CASE("tasks: submit_rerank refuses bad input at once and never calls back") {
  auto never = [](uint64_t, brisk::StatusOr<float>) { FAIL("called back"); };
  auto cls = brisk::testing::make_runtime(task_options("bert_cls", 24));
  auto r = cls->submit_rerank("q", "p", {}, never);
  REQUIRE(r.status().code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE_THAT(std::string(r.status().message()),
               Catch::Contains("Runtime::submit_rerank") && Catch::Contains("has 3 labels; expected a cross-encoder"));

  auto ce = brisk::testing::make_runtime(task_options("cross_encoder", 24));
  r = ce->submit_rerank("q", "bad \xff byte", {}, never);
  REQUIRE(r.status().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("second text"));
  r = ce->submit_rerank("bad \xff", "fine", {}, never);
  REQUIRE(r.status().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("first text"));
  brisk::RerankRequestOptions bad;
  bad.priority = 7;
  r = ce->submit_rerank("q", "p", bad, never);
  REQUIRE(r.status().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("priority 7 is out of range"));
  r = ce->submit_rerank("q", "p", {}, brisk::RerankCallback{});
  REQUIRE(r.status().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("the callback is empty"));
  CHECK(ce->forward_passes() == 0);
}

TEST_CASE("tasks: a quantized model file and a pruned model directory keep the classification head") {
  const json g = golden("bert_cls");
  const std::string dir = task_dir("bert_cls");
  auto config = brisk::BertConfig::from_json_file(dir + "/config.json");
  REQUIRE(config.ok());
  auto tensors = brisk::read_weights_file(dir + "/model.safetensors");
  REQUIRE(tensors.ok());
  auto weights = brisk::EncoderWeights::from_tensors(*tensors, *config, "model.safetensors");
  REQUIRE(weights.ok());
  const brisk::NamedTensors head = brisk::sequence_classification_head_tensors(*tensors);
  REQUIRE(head.size() == 4);
  const auto tmp = std::filesystem::temp_directory_path() / ("brisk_tasks_" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);

  // Every layer left in f32: the file must answer exactly as the directory does.
  brisk::quant::QuantizedModel q;
  q.config = *config;
  auto files = brisk::quant::read_model_files(dir);
  REQUIRE(files.ok());
  q.model_files = *files;
  q.weights = *weights;
  q.head_tensors = head;
  const std::string file = (tmp / "bert_cls.safetensors").string();
  REQUIRE(brisk::quant::save_quantized_model(file, q).ok());

  brisk::prune::PrunedModel p{*config, *weights, head};
  const std::string pruned_dir = (tmp / "pruned").string();
  REQUIRE(brisk::prune::save_pruned_model(p, dir, pruned_dir).ok());

  for (const std::string& model : {file, pruned_dir}) {
    INFO(model);
    RuntimeOptions o = task_options("bert_cls", g["max_length"].get<int>());
    o.model_dir = model;
    auto rt = brisk::testing::make_runtime(o);
    REQUIRE(rt->info().labels == std::vector<std::string>{"billing", "card_lost", "greeting"});
    for (const json& item : g["single"]) {
      const std::string text = item["text"].get<std::string>();
      std::vector<std::string_view> one = {text};
      auto logits = rt->logits(one);
      REQUIRE(logits.ok());
      require_close(*logits, item["logits"], text);
    }
  }
  std::filesystem::remove_all(tmp);
}

TEST_CASE("tasks: on cuda:0 the classification head serves the GPU encoder's output", "[runtime][cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const json g = golden("bert_cls");
  for (const brisk::DType dtype : {brisk::DType::kF32, brisk::DType::kF16}) {
    RuntimeOptions o = task_options("bert_cls", g["max_length"].get<int>());
    o.device = brisk::Device::kCUDA;
    o.activation_dtype = dtype;
    auto rt = brisk::testing::make_runtime(o);
    const float tolerance = dtype == brisk::DType::kF32 ? 1e-4f : 2e-2f;
    for (const json& item : g["single"]) {
      const std::string text = item["text"].get<std::string>();
      std::vector<std::string_view> one = {text};
      auto logits = rt->logits(one);
      REQUIRE(logits.ok());
      for (size_t k = 0; k < logits->size(); ++k) {
        REQUIRE(std::abs((*logits)[k] - item["logits"][k].get<float>()) <= tolerance);
      }
    }
  }
}
