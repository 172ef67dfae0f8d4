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

std::unique_ptr<brisk::Runtime> make_runtime(int redis_port) {
  brisk::RuntimeOptions opts = brisk::testing::runtime_options();
  brisk::cache::RedisOptions& redis = opts.cache.redis.emplace();
  redis.port = redis_port;
  redis.command_timeout = 50ms;
  redis.breaker.open_duration = 100ms;
  auto rt = brisk::Runtime::create(opts);
  REQUIRE(rt.ok());
  return std::move(*rt);
}

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
  CHECK(server.raw({"DBSIZE"}) == std::optional<std::string>("0"));             // value and tag set gone
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

#endif  // BRISK_HAVE_REDIS
