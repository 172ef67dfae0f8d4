// RuntimeCaches::lookup_many (lib/runtime/runtime_cache.h), without a model: results stored under token ids come
// back in order, one Redis MGET serves all the L1 misses (counted by the server itself), stats match those of
// as many lookup() calls, a planted value of the wrong length is dropped, and no result cache gives misses. Results
// computed at another precision go by another name in Redis (runtime_shared_model).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/runtime_cache.h"
#include "test_util.h"

#if defined(BRISK_HAVE_REDIS)
#include "cache/redis_server.h"
#endif

namespace {

using namespace std::chrono_literals;
using Row = std::optional<std::vector<float>>;
constexpr size_t kDim = 4;

std::vector<float> embedding_of(int32_t seed) { return {float(seed), 1.f, 2.f, -float(seed)}; }

std::unique_ptr<brisk::RuntimeCaches> make(const brisk::RuntimeCacheOptions& o, std::string model_id = "m-1") {
  auto c = brisk::RuntimeCaches::create(o, std::move(model_id), kDim);
  REQUIRE(c.ok());
  return std::move(*c);
}

nlohmann::json stats(const brisk::RuntimeCaches& c) { return nlohmann::json::parse(c.stats_json()); }

}  // namespace

TEST_CASE("runtime caches lookup_many answers like lookup, in order", "[runtime][cache][many]") {
  auto caches = make({});
  const std::vector<std::vector<int32_t>> ids = {{101, 7, 102}, {101, 8, 102}, {101, 9, 102}, {101, 7, 7, 102}};
  caches->store(ids[0], embedding_of(0));
  caches->store(ids[2], embedding_of(2));
  std::vector<std::span<const int32_t>> spans(ids.begin(), ids.end());
  spans.push_back(ids[0]);  // asked twice
  const std::vector<Row> got = caches->lookup_many(spans);
  REQUIRE(got.size() == 5);
  CHECK(got[0] == Row(embedding_of(0)));
  CHECK_FALSE(got[1].has_value());
  CHECK(got[2] == Row(embedding_of(2)));
  CHECK_FALSE(got[3].has_value());
  CHECK(got[4] == Row(embedding_of(0)));
  CHECK(stats(*caches)["result"]["hits"] == 3);
  CHECK(stats(*caches)["result"]["misses"] == 2);

  // The same as five lookup() calls, counted the same way.
  auto single = make({});
  single->store(ids[0], embedding_of(0));
  single->store(ids[2], embedding_of(2));
  for (size_t i = 0; i < spans.size(); ++i) CHECK(single->lookup(spans[i]) == got[i]);
  CHECK(stats(*single)["result"] == stats(*caches)["result"]);

  CHECK(caches->lookup_many({}).empty());

  brisk::RuntimeCacheOptions off;
  off.result_cache_bytes = 0;
  auto none = make(off);
  none->store(ids[0], embedding_of(0));
  CHECK(none->lookup_many(spans) == std::vector<Row>(5));
}

TEST_CASE("results computed at another precision go by another name in a shared tier", "[runtime][cache]") {
  brisk::ModelInfo info;  // float32 activations, float self-attention: the model's own arithmetic
  CHECK(brisk::runtime_shared_model("minilm-1f2e-mean-n", info) == "minilm-1f2e-mean-n");
  info.activation_dtype = brisk::DType::kF16;
  CHECK(brisk::runtime_shared_model("minilm-1f2e-mean-n", info) == "minilm-1f2e-mean-n-f16");
  info.activation_dtype = brisk::DType::kBF16;
  info.int8_attention_layers = 6;
  CHECK(brisk::runtime_shared_model("minilm-1f2e-mean-n", info) == "minilm-1f2e-mean-n-bf16-int8attn");
  info.activation_dtype = brisk::DType::kF32;
  CHECK(brisk::runtime_shared_model("m", info) == "m-int8attn");
}

#if defined(BRISK_HAVE_REDIS)

namespace {

brisk::RuntimeCacheOptions with_redis(int port) {
  brisk::RuntimeCacheOptions o;
  o.redis.emplace();
  o.redis->port = port;
  o.redis->connect_timeout = 500ms;
  o.redis->command_timeout = 500ms;
  return o;
}

}  // namespace

TEST_CASE("runtime caches lookup_many makes one Redis MGET for all the L1 misses", "[runtime][cache][many][redis]") {
  brisk::testing::RedisServer server;
  REQUIRE(server.ok());
  const brisk::RuntimeCacheOptions o = with_redis(server.port());
  auto writer = make(o);
  std::vector<std::vector<int32_t>> ids;
  for (int32_t i = 0; i < 16; ++i) ids.push_back({101, 2000 + i, 102});
  for (int32_t i = 0; i < 16; ++i) {
    if (i % 4 != 3) writer->store(ids[size_t(i)], embedding_of(i));
  }
  // Write-behind: wait until Redis has every value.
  REQUIRE(brisk::testing::wait_until([&] { return stats(*writer)["redis"]["writes"]["written"] == 12; }));
  // Then a value of the wrong length over ids[1]'s (a foreign writer of the shared tier): stored through a
  // cache of the same model id with another dim, so that it is a well-formed envelope.
  auto foreign = brisk::RuntimeCaches::create(o, "m-1", kDim + 1);
  REQUIRE(foreign.ok());
  (*foreign)->store(ids[1], std::vector<float>(kDim + 1, 5.f));
  REQUIRE(brisk::testing::wait_until(
      [&] { return nlohmann::json::parse((*foreign)->stats_json())["redis"]["writes"]["written"] == 1; }));

  auto reader = make(o);
  reader->store(ids[0], embedding_of(0));  // in the reader's L1 already
  REQUIRE(server.raw({"CONFIG", "RESETSTAT"}) == "OK");
  std::vector<std::span<const int32_t>> spans(ids.begin(), ids.end());
  const std::vector<Row> got = reader->lookup_many(spans);
  REQUIRE(got.size() == ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    INFO(i);
    if (i % 4 == 3 || i == 1) {
      CHECK_FALSE(got[i].has_value());
    } else {
      CHECK(got[i] == Row(embedding_of(int32_t(i))));
    }
  }
  const std::optional<std::string> info = server.raw({"INFO", "commandstats"});
  REQUIRE(info.has_value());
  CHECK(info->find("cmdstat_mget:calls=1,") != std::string::npos);
  CHECK(info->find("cmdstat_get:") == std::string::npos);
  const nlohmann::json s = stats(*reader);
  CHECK(s["result"]["hits"] == 1);
  CHECK(s["result"]["misses"] == 15);
  CHECK(s["redis"]["hits"] == 11);  // ids[1]'s value decodes, then fails the length check
  CHECK(s["redis"]["misses"] == 4);
  CHECK(s["redis"]["wrong_length"] == 1);
  CHECK(s["redis"]["errors"] == 0);
  // The wrong-length value did not stay in L1: asking again goes back to Redis for it alone.
  REQUIRE(server.raw({"CONFIG", "RESETSTAT"}) == "OK");
  CHECK_FALSE(reader->lookup_many(std::span<const std::span<const int32_t>>(&spans[1], 1))[0].has_value());
  CHECK(stats(*reader)["redis"]["wrong_length"] == 2);
}

TEST_CASE("runtimes of one model at two precisions do not exchange results through Redis", "[runtime][cache][redis]") {
  brisk::testing::RedisServer server;
  REQUIRE(server.ok());
  const brisk::RuntimeCacheOptions o = with_redis(server.port());
  auto create = [&](std::string shared_model) {
    auto c = brisk::RuntimeCaches::create(o, "m-1", kDim, false, std::move(shared_model));
    REQUIRE(c.ok());
    return std::move(*c);
  };
  auto f32 = create("m-1");
  auto int8attn = create("m-1-int8attn");
  CHECK(stats(*int8attn)["redis"]["shared_model"] == "m-1-int8attn");
  CHECK(stats(*int8attn)["model_id"] == "m-1");  // the model is the same one
  const std::vector<int32_t> ids = {101, 2001, 102};
  int8attn->store(ids, embedding_of(1));
  REQUIRE(brisk::testing::wait_until([&] { return stats(*int8attn)["redis"]["writes"]["written"] == 1; }));
  CHECK_FALSE(f32->lookup(ids).has_value());  // Redis holds it, under the other precision's name
  CHECK(stats(*f32)["redis"]["misses"] == 1);
  CHECK(create("m-1-int8attn")->lookup(ids) == Row(embedding_of(1)));  // the same precision shares it
}

#endif  // BRISK_HAVE_REDIS

#if defined(BRISK_HAVE_REDIS)

// Issue 30: a value another process wrote to the shared tier (well-formed, checksummed, unsigned: a forgery needs
// no key) holding NaN, an infinity, or, for a model whose embeddings are unit-norm, the wrong norm, is never served:
// dropped, counted, and asked for again next time. Values of the right length and norm are served.
TEST_CASE("runtime caches never serve a poisoned shared value: NaN, infinity, wrong norm, wrong length",
          "[runtime][cache][redis]") {
  brisk::testing::RedisServer server;
  REQUIRE(server.ok());
  const brisk::RuntimeCacheOptions o = with_redis(server.port());
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> poisoned = {
      {std::nanf(""), 0.f, 0.f, 1.f}, {inf, 0.f, 0.f, 0.f}, {1e6f, 0.f, 0.f, 0.f}, {0.5f, 0.5f, 0.f, 0.f}};
  const std::vector<float> good = {0.6f, 0.8f, 0.f, 0.f};  // unit norm
  std::vector<std::vector<int32_t>> ids;
  for (int32_t i = 0; i < 6; ++i) ids.push_back({101, 3000 + i, 102});
  // The forger: a cache of the same model id that checks nothing it writes.
  auto forger = brisk::RuntimeCaches::create(o, "m-1", kDim);
  REQUIRE(forger.ok());
  for (size_t i = 0; i < poisoned.size(); ++i) (*forger)->store(ids[i], poisoned[i]);
  (*forger)->store(ids[4], good);
  auto longer = brisk::RuntimeCaches::create(o, "m-1", kDim + 1);  // and one of the wrong length
  REQUIRE(longer.ok());
  (*longer)->store(ids[5], std::vector<float>(kDim + 1, 0.5f));
  REQUIRE(brisk::testing::wait_until([&] {
    return nlohmann::json::parse((*forger)->stats_json())["redis"]["writes"]["written"] == 5 &&
           nlohmann::json::parse((*longer)->stats_json())["redis"]["writes"]["written"] == 1;
  }));

  auto reader = brisk::RuntimeCaches::create(o, "m-1", kDim, /*unit_norm=*/true);
  REQUIRE(reader.ok());
  const std::vector<std::span<const int32_t>> spans(ids.begin(), ids.end());
  const std::vector<Row> got = (*reader)->lookup_many(spans);
  for (size_t i = 0; i < 4; ++i) {
    INFO("poisoned value " << i);
    CHECK_FALSE(got[i].has_value());
  }
  CHECK(got[4] == Row(good));
  CHECK_FALSE(got[5].has_value());
  nlohmann::json s = stats(**reader);
  CHECK(s["redis"]["invalid_values"] == 4);
  CHECK(s["redis"]["wrong_length"] == 1);
  // Not kept in L1: each lookup goes back to Redis and is refused again.
  CHECK_FALSE((*reader)->lookup(ids[0]).has_value());
  CHECK(stats(**reader)["redis"]["invalid_values"] == 5);
  // Without the unit-norm requirement (logits, or embeddings not normalised) a finite value of any norm is served,
  // a non-finite one never.
  auto logits = brisk::RuntimeCaches::create(o, "m-1", kDim, /*unit_norm=*/false);
  REQUIRE(logits.ok());
  const std::vector<Row> raw = (*logits)->lookup_many(spans);
  CHECK_FALSE(raw[0].has_value());
  CHECK_FALSE(raw[1].has_value());
  CHECK(raw[2] == Row(poisoned[2]));
  CHECK(raw[3] == Row(poisoned[3]));
}

#endif  // BRISK_HAVE_REDIS
