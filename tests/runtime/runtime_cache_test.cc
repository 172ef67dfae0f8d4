// The runtime's caches with the real MiniLM model: the token cache in front of the tokenizer, the result cache
// in front of the batcher (hits, normal forms, tags, expiry, stats and metrics) and bad cache options.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "runtime/runtime_test_util.h"
#include "test_util.h"

namespace {

using brisk::testing::embed_one;
using brisk::testing::make_runtime;
using namespace std::chrono_literals;
using Embedding = brisk::StatusOr<std::vector<float>>;

brisk::RuntimeOptions options() { return brisk::testing::runtime_options(); }

nlohmann::json result_stats(const brisk::Runtime& rt) { return nlohmann::json::parse(rt.cache_stats_json())["result"]; }
nlohmann::json token_stats(const brisk::Runtime& rt) { return nlohmann::json::parse(rt.cache_stats_json())["token"]; }

}  // namespace

TEST_CASE("a repeated text is served from the result cache without a forward pass", "[runtime][cache]") {
  auto rt = make_runtime(options());
  const std::vector<float> first = embed_one(*rt, "How do I reset my PIN?");
  const uint64_t batches = rt->batch_stats().batches;
  CHECK(result_stats(*rt)["misses"] == 1);
  CHECK(result_stats(*rt)["hits"] == 0);

  const std::vector<float> again = embed_one(*rt, "How do I reset my PIN?");
  CHECK(again == first);
  // The model lower-cases and splits on spaces, so these have the same token ids and share the entry.
  const std::vector<float> variant = embed_one(*rt, "  how do i RESET my   pin ?");
  CHECK(variant == first);
  CHECK(result_stats(*rt)["hits"] == 2);
  CHECK(rt->batch_stats().batches == batches);

  // A different text is a miss and runs the model.
  const std::vector<float> other = embed_one(*rt, "What are your opening hours?");
  CHECK(brisk::testing::cosine(other.data(), first.data(), first.size()) < 0.9);
  CHECK(rt->batch_stats().batches == batches + 1);
}

TEST_CASE("a batch mixing hits and misses keeps every row in place", "[runtime][cache]") {
  auto rt = make_runtime(options());
  std::vector<std::string_view> texts = {"lost card", "opening hours", "lost card", "wire transfer fees", "lost card"};
  auto cold = make_runtime([] {
    auto o = options();
    o.cache.result_cache_bytes = 0;
    return o;
  }());
  auto reference = cold->embed(texts);
  REQUIRE(reference.ok());
  REQUIRE(rt->embed(std::span<const std::string_view>(texts.data() + 1, 1)).ok());  // "opening hours" cached
  auto mixed = rt->embed(texts);
  REQUIRE(mixed.ok());
  const size_t dim = static_cast<size_t>(rt->embedding_dim());
  for (size_t i = 0; i < texts.size(); ++i) {
    INFO("row " << i);
    CHECK(brisk::testing::cosine(mixed->data() + i * dim, reference->data() + i * dim, dim) > 0.99999);
  }
  CHECK(result_stats(*rt)["hits"] == 1);
  CHECK(nlohmann::json::parse(cold->cache_stats_json())["result"].is_null());
}

TEST_CASE("the token cache spares the tokenizer repeated texts", "[runtime][cache]") {
  brisk::RuntimeOptions opts = options();
  opts.cache.result_cache_bytes = 0;  // every text reaches the tokenizer path
  auto rt = make_runtime(opts);
  for (int i = 0; i < 5; ++i) embed_one(*rt, "where is my parcel?");
  CHECK(token_stats(*rt)["misses"] == 1);
  CHECK(token_stats(*rt)["hits"] == 4);
  const auto stats = nlohmann::json::parse(rt->stats_json());
  CHECK(stats["tokenize_ms"]["count"] == 1);  // the tokenizer ran once

  // A text over 1 KiB bypasses the token cache, so a stream of huge texts cannot fill memory through it.
  std::string long_text;
  while (long_text.size() <= 1024) long_text += "a long question about fees ";
  embed_one(*rt, long_text);
  embed_one(*rt, long_text);
  CHECK(token_stats(*rt)["entries"] == 1);
  CHECK(nlohmann::json::parse(rt->stats_json())["tokenize_ms"]["count"] == 3);

  opts.cache.token_cache_entries = 0;
  auto uncached = make_runtime(opts);
  for (int i = 0; i < 3; ++i) embed_one(*uncached, "where is my parcel?");
  CHECK(nlohmann::json::parse(uncached->stats_json())["tokenize_ms"]["count"] == 3);
  CHECK(nlohmann::json::parse(uncached->cache_stats_json())["token"].is_null());
}

TEST_CASE("a submit that hits the result cache completes before submit returns", "[runtime][cache]") {
  auto rt = make_runtime(options());
  const std::vector<float> expected = embed_one(*rt, "card declined abroad");
  bool called = false;
  Embedding got = absl::UnknownError("not called");
  auto id = rt->submit("card declined abroad", {}, [&](uint64_t, Embedding e) {
    called = true;
    got = std::move(e);
  });
  REQUIRE(id.ok());
  CHECK(called);
  REQUIRE(got.ok());
  CHECK(*got == expected);
  CHECK((*id >> 63) == 1);  // never a batcher id
  CHECK(absl::IsNotFound(rt->cancel(*id)));

  // A hit refuses what a miss refuses, and then never calls back.
  called = false;
  auto refused =
      rt->submit("card declined abroad", {.priority = 7, .timeout = {}}, [&](uint64_t, Embedding) { called = true; });
  CHECK(absl::IsInvalidArgument(refused.status()));
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("priority"));
  CHECK_FALSE(called);
}

TEST_CASE("invalidating a tag drops the results that carry it", "[runtime][cache]") {
  auto rt = make_runtime(options());
  std::promise<Embedding> done;
  brisk::EmbedRequestOptions tagged;
  tagged.cache_tags = {"faq:7"};
  REQUIRE(rt->submit("how do I close my account?", tagged, [&](uint64_t, Embedding e) {
              done.set_value(std::move(e));
            }).ok());
  REQUIRE(done.get_future().get().ok());
  embed_one(*rt, "untagged question");

  auto removed = rt->cache_invalidate_tag("faq:7");
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  embed_one(*rt, "how do I close my account?");  // recomputed
  embed_one(*rt, "untagged question");           // still cached
  CHECK(result_stats(*rt)["hits"] == 1);

  // Every result carries the model's tag.
  removed = rt->cache_invalidate_tag("model:" + rt->cache_model_id());
  REQUIRE(removed.ok());
  CHECK(*removed == 2);
  CHECK(result_stats(*rt)["entries"] == 0);
  CHECK(absl::IsInvalidArgument(rt->cache_invalidate_tag("").status()));
}

TEST_CASE("cached results expire after result_ttl", "[runtime][cache]") {
  brisk::RuntimeOptions opts = options();
  opts.cache.result_ttl = 1ms;
  auto rt = make_runtime(opts);
  embed_one(*rt, "overdraft fees");
  std::this_thread::sleep_for(50ms);  // far past the TTL: the entry must not be served
  embed_one(*rt, "overdraft fees");
  CHECK(result_stats(*rt)["hits"] == 0);
  CHECK(result_stats(*rt)["misses"] == 2);
}

TEST_CASE("cache hits and misses appear in the runtime's stats and metrics", "[runtime][cache]") {
  auto rt = make_runtime(options());
  embed_one(*rt, "exchange rates");
  embed_one(*rt, "exchange rates");
  const auto stats = nlohmann::json::parse(rt->stats_json());
  CHECK(stats["cache"]["result"]["hits"] == 1);
  CHECK(stats["cache"]["result"]["misses"] == 1);
  CHECK(stats["cache"]["result"]["hit_rate"] == Approx(0.5));
  CHECK(stats["cache"]["model_id"] == rt->cache_model_id());
  const std::string prom = rt->metrics_prometheus();
  CHECK_THAT(prom, Catch::Contains("brisk_cache_hits_total{model=\"all-MiniLM-L6-v2\",cache=\"result\"} 1"));
  CHECK_THAT(prom, Catch::Contains("brisk_cache_misses_total{model=\"all-MiniLM-L6-v2\",cache=\"result\"} 1"));
  CHECK_THAT(prom, Catch::Contains("brisk_cache_hits_total{model=\"all-MiniLM-L6-v2\",cache=\"token\"}"));
}

TEST_CASE("bad cache options are refused with the field named", "[runtime][cache]") {
  brisk::RuntimeOptions opts = options();
  opts.cache.result_ttl = -1s;
  auto rt = brisk::Runtime::create(opts);
  REQUIRE_FALSE(rt.ok());
  CHECK_THAT(std::string(rt.status().message()), Catch::Contains("result_ttl"));

  opts = options();
  opts.cache.result_cache_bytes = 0;
  opts.cache.redis.emplace().allow_unsigned = true;
  rt = brisk::Runtime::create(opts);
  REQUIRE_FALSE(rt.ok());
  CHECK_THAT(std::string(rt.status().message()), Catch::Contains("result_cache_bytes"));
}
