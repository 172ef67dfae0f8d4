// The runtime's result cache over a real Redis server shared by two runtimes (two processes' worth): an L2 hit
// spares the second runtime a forward pass, a tag invalidation reaches the other runtime's L1, and when Redis
// is killed both keep answering from L1 and the model, then use Redis again once it is back.
#include <catch2/catch.hpp>

#ifdef BRISK_HAVE_REDIS

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "cache/redis_server.h"
#include "runtime/runtime_test_util.h"
#include "test_util.h"

namespace {

using brisk::testing::embed_one;
using namespace std::chrono_literals;

brisk::RuntimeOptions options_with_redis(int redis_port) {
  brisk::RuntimeOptions opts = brisk::testing::runtime_options();
  brisk::cache::RedisOptions& redis = opts.cache.redis.emplace();
  redis.port = redis_port;
  redis.allow_unsigned = true;  // the signed tier has its own test below
  redis.command_timeout = 50ms;
  redis.breaker.open_duration = 100ms;
  return opts;
}

std::unique_ptr<brisk::Runtime> make_runtime(const brisk::RuntimeOptions& opts) {
  auto rt = brisk::Runtime::create(opts);
  REQUIRE(rt.ok());
  return std::move(*rt);
}

std::unique_ptr<brisk::Runtime> make_runtime(int redis_port) { return make_runtime(options_with_redis(redis_port)); }

nlohmann::json cache_stats(const brisk::Runtime& rt) { return nlohmann::json::parse(rt.cache_stats_json()); }

}  // namespace

TEST_CASE("two runtimes share results through Redis and see each other's invalidations", "[runtime][cache][redis]") {
  brisk::testing::RedisServer server;
  REQUIRE(server.ok());
  auto a = make_runtime(server.port());
  auto b = make_runtime(server.port());
  REQUIRE(a->cache_model_id() == b->cache_model_id());
  REQUIRE(brisk::testing::wait_until([&] { return cache_stats(*a)["redis"]["subscribed"] == true; }));
  REQUIRE(brisk::testing::wait_until([&] { return cache_stats(*b)["redis"]["subscribed"] == true; }));

  std::promise<brisk::StatusOr<std::vector<float>>> done;
  brisk::EmbedRequestOptions tagged;
  tagged.cache_tags = {"faq:12"};
  REQUIRE(a->submit("How do I dispute a card payment?", tagged, [&](uint64_t, brisk::StatusOr<std::vector<float>> e) {
             done.set_value(std::move(e));
           }).ok());
  auto computed = done.get_future().get();
  REQUIRE(computed.ok());
  const std::vector<float> from_a = *computed;
  REQUIRE(brisk::testing::wait_until([&] { return cache_stats(*a)["redis"]["writes"]["written"] == 1; }));

  const uint64_t b_batches = b->batch_stats().batches;
  CHECK(embed_one(*b, "How do I dispute a card payment?") == from_a);
  CHECK(b->batch_stats().batches == b_batches);  // no forward pass: the value came from Redis
  CHECK(cache_stats(*b)["redis"]["hits"] == 1);
  CHECK(cache_stats(*b)["result"]["entries"] == 1);  // backfilled into b's L1

  auto removed = a->cache_invalidate_tag("faq:12");
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  CHECK(brisk::testing::wait_until([&] { return cache_stats(*b)["result"]["entries"] == 0; }));  // via pub/sub
  CHECK(server.raw({"DBSIZE"}) == std::optional<std::string>("0"));  // value and tag set gone
}

TEST_CASE("a runtime keeps answering while Redis is killed and uses it again once it is back",
          "[runtime][cache][redis]") {
  brisk::testing::RedisServer server;
  REQUIRE(server.ok());
  auto rt = make_runtime(server.port());
  embed_one(*rt, "first question");
  REQUIRE(brisk::testing::wait_until([&] { return cache_stats(*rt)["redis"]["writes"]["written"] == 1; }));

  server.kill();
  const std::vector<std::string> texts = {"second question", "third question", "fourth question", "first question"};
  for (const std::string& text : texts) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<float> e = embed_one(*rt, text);  // never fails because of Redis
    CHECK(e.size() == static_cast<size_t>(rt->embedding_dim()));
    // Bounded by the Redis timeouts (50 ms connect + 50 ms command) plus a forward pass: a blocking bound, not a
    // speed target.
    CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  }
  CHECK(cache_stats(*rt)["result"]["hits"] == 1);  // "first question" from L1
  CHECK(cache_stats(*rt)["redis"]["errors"].get<int>() >= 1);

  REQUIRE(server.restart());
  // Once the breaker lets a probe through, new results reach Redis again.
  CHECK(brisk::testing::wait_until([&] {
    embed_one(*rt, "a question after the restart " + std::to_string(std::rand()));
    return server.raw({"DBSIZE"}).value_or("0") != "0";
  }));
}

TEST_CASE("runtimes authenticate to Redis, sign their results and refuse results moved between keys",
          "[runtime][cache][redis][auth]") {
  brisk::testing::RedisServer server({.password = "default-secret", .acl_user = "app", .acl_password = "app-pw"});
  REQUIRE(server.ok());
  brisk::RuntimeOptions opts = options_with_redis(server.port());
  opts.cache.redis->user = "app";
  opts.cache.redis->password = "app-pw";
  opts.cache.redis->signing_key = "shared-secret";
  auto a = make_runtime(opts);
  const std::vector<float> card = embed_one(*a, "How do I dispute a card payment?");
  const std::vector<float> hours = embed_one(*a, "When are you open?");
  REQUIRE(brisk::testing::wait_until([&] { return cache_stats(*a)["redis"]["writes"]["written"] == 2; }));
  CHECK(cache_stats(*a)["redis"]["auth_failures"] == 0);

  // An attacker who can write to Redis swaps the two results (item: values rotated between keys).
  std::vector<std::string> keys = server.keys("brisk:*");
  REQUIRE(keys.size() == 2);
  const std::optional<std::string> first = server.raw({"GET", keys[0]});
  const std::optional<std::string> second = server.raw({"GET", keys[1]});
  REQUIRE((first.has_value() && second.has_value()));
  REQUIRE(server.raw({"SET", keys[0], *second}) == "OK");
  REQUIRE(server.raw({"SET", keys[1], *first}) == "OK");

  auto b = make_runtime(opts);
  const uint64_t passes = b->forward_passes();
  CHECK(embed_one(*b, "How do I dispute a card payment?") == card);  // computed, not the planted answer
  CHECK(embed_one(*b, "When are you open?") == hours);
  CHECK(b->forward_passes() == passes + 2);
  const nlohmann::json stats = cache_stats(*b);
  CHECK(stats["redis"]["hits"] == 0);
  CHECK(stats["redis"]["rejected"]["wrong_key"] == 2);
  CHECK(stats["redis"]["decode_errors"] == 2);
  const std::string prometheus = b->metrics_prometheus();
  CHECK(prometheus.find("brisk_cache_l2_rejected_total{model=") != std::string::npos);
  CHECK(prometheus.find("reason=\"wrong_key\"} 2") != std::string::npos);
  CHECK(prometheus.find("reason=\"unauthenticated\"} 0") != std::string::npos);

  // Wrong credentials fail create() with PERMISSION_DENIED; TLS with UNIMPLEMENTED (no hiredis_ssl).
  brisk::RuntimeOptions wrong = opts;
  wrong.cache.redis->password = "guess";
  auto refused = brisk::Runtime::create(wrong);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK(std::string(refused.status().message()).find("RedisOptions.user \"app\"") != std::string::npos);
  brisk::RuntimeOptions tls = opts;
  tls.cache.redis->tls = true;
  auto no_tls = brisk::Runtime::create(tls);
  REQUIRE_FALSE(no_tls.ok());
  CHECK(no_tls.status().code() == absl::StatusCode::kUnimplemented);
}

// Issue 30: a Redis tier without a signing key is refused at create, naming the option that would allow it.
TEST_CASE("a Redis tier without a signing key is refused unless unsigned values are allowed", "[runtime][redis]") {
  brisk::RuntimeOptions opts = options_with_redis(1);  // nothing listens on port 1: create does not need a server
  opts.cache.redis->allow_unsigned = false;
  auto refused = brisk::Runtime::create(opts);
  REQUIRE_FALSE(refused.ok());
  CHECK(absl::IsInvalidArgument(refused.status()));
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("cache.redis.signing_key is empty"));
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("cache.redis.allow_unsigned = true"));
  opts.cache.redis->signing_key = "a shared secret";
  CHECK(brisk::Runtime::create(opts).ok());
  opts.cache.redis->signing_key.clear();
  opts.cache.redis->allow_unsigned = true;
  CHECK(brisk::Runtime::create(opts).ok());
}

#endif  // BRISK_HAVE_REDIS
