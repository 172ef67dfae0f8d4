// Many keys in one Redis round trip, against a real redis-server on loopback: RedisTier::get_many and
// get_many_with_ttl (one MGET, counted with the server's own INFO commandstats) and TieredCache::get_many (L1
// first, one MGET for the L1 misses, backfill with the Redis TTL, per-key envelope and HMAC checks), an empty
// key list that makes no call, and a server killed in the middle of the call.
#include <catch2/catch.hpp>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk/cache/redis_tier.h"
#include "brisk/cache/tiered_cache.h"
#include "test_util.h"

#if defined(BRISK_HAVE_REDIS)

#include "cache/redis_server.h"

using brisk::ManualClock;
using brisk::cache::CircuitBreaker;
using brisk::cache::encode_envelope;
using brisk::cache::FloatVectorCodec;
using brisk::cache::PutOptions;
using brisk::cache::RedisOptions;
using brisk::cache::RedisTier;
using brisk::cache::StringCodec;
using brisk::cache::TieredCache;
using brisk::cache::TieredCacheOptions;
using brisk::testing::RedisServer;
using brisk::testing::wait_until;
using namespace std::chrono_literals;

namespace {

using StringCache = TieredCache<std::string, StringCodec>;
using VectorCache = TieredCache<std::vector<float>, FloatVectorCodec>;

// Lenient timeouts: these tests check behaviour, not the bound on blocking.
RedisOptions redis_options(const RedisServer& server) {
  RedisOptions o;
  o.port = server.port();
  o.connect_timeout = 500ms;
  o.command_timeout = 500ms;
  return o;
}

template <typename V>
TieredCacheOptions<V> tiered_options(const RedisServer& server) {
  TieredCacheOptions<V> o;
  o.l1.max_entries = 1000;
  o.model = "minilm";
  o.default_ttl = 60s;
  o.l2 = redis_options(server);
  return o;
}

std::unique_ptr<StringCache> make_string_cache(TieredCacheOptions<std::string> o) {
  auto c = StringCache::create(std::move(o));
  REQUIRE(c.ok());
  REQUIRE(wait_until([&] { return (*c)->stats().redis.subscribed; }));
  return std::move(*c);
}

// How many times the server ran `command` since the last CONFIG RESETSTAT (INFO commandstats: the server's own
// count, whatever the client says about itself).
uint64_t server_calls(const RedisServer& server, const std::string& command) {
  const std::optional<std::string> info = server.raw({"INFO", "commandstats"});
  REQUIRE(info.has_value());
  const std::string field = "cmdstat_" + command + ":calls=";
  const size_t at = info->find(field);
  if (at == std::string::npos) return 0;
  return std::stoull(info->substr(at + field.size()));
}

void reset_server_stats(const RedisServer& server) { REQUIRE(server.raw({"CONFIG", "RESETSTAT"}) == "OK"); }

std::vector<std::string> key_list(int n, const std::string& prefix = "k") {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back(absl::StrCat(prefix, i));
  return keys;
}

}  // namespace

TEST_CASE("redis tier get_many reads many keys with one MGET", "[cache][redis][many]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto tier = RedisTier::create(redis_options(server));
  REQUIRE(tier.ok());
  RedisTier& r = **tier;
  const std::vector<std::string> keys = key_list(12);
  // Even keys hold a value (one binary, one empty); odd keys are absent, except k5 which holds a set.
  for (size_t i = 0; i < keys.size(); i += 2) REQUIRE(r.set(keys[i], absl::StrCat("v", i), 30s).ok());
  const std::string binary("a\0b\r\nc", 6);
  REQUIRE(r.set("k2", binary, 30s).ok());
  REQUIRE(r.set("k4", "", 0s).ok());
  REQUIRE(server.raw({"SADD", "brisk:k5", "member"}) == "1");

  reset_server_stats(server);
  const uint64_t commands_before = r.stats().commands;
  auto got = r.get_many(keys);
  REQUIRE(got.ok());
  REQUIRE(got->size() == keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    INFO(keys[i]);
    if (i == 2) {
      CHECK((*got)[i] == std::optional<std::string>(binary));
    } else if (i == 4) {
      CHECK((*got)[i] == std::optional<std::string>(""));
    } else if (i % 2 == 0) {
      CHECK((*got)[i] == std::optional<std::string>(absl::StrCat("v", i)));
    } else {
      CHECK_FALSE((*got)[i].has_value());  // absent, or (k5) not a string
    }
  }
  CHECK(server_calls(server, "mget") == 1);
  CHECK(server_calls(server, "get") == 0);
  CHECK(r.stats().commands == commands_before + 1);

  // With TTLs: the same MGET plus one PTTL per key, in the same round trip.
  reset_server_stats(server);
  auto with_ttl = r.get_many_with_ttl(keys);
  REQUIRE(with_ttl.ok());
  REQUIRE(with_ttl->size() == keys.size());
  REQUIRE((*with_ttl)[0].has_value());
  CHECK((*with_ttl)[0]->bytes == "v0");
  CHECK((*with_ttl)[0]->ttl > 25s);
  CHECK((*with_ttl)[0]->ttl <= 30s);
  REQUIRE((*with_ttl)[4].has_value());
  CHECK((*with_ttl)[4]->ttl == brisk::Duration(0));  // no expiry
  CHECK_FALSE((*with_ttl)[1].has_value());
  CHECK_FALSE((*with_ttl)[5].has_value());
  CHECK(server_calls(server, "mget") == 1);
  CHECK(server_calls(server, "pttl") == keys.size());
  CHECK(server_calls(server, "get") == 0);
  CHECK(r.stats().commands == commands_before + 2);
  CHECK(r.stats().errors == 0);
}

TEST_CASE("redis tier and tiered cache get_many of no keys make no call", "[cache][redis][many]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto tier = RedisTier::create(redis_options(server));
  REQUIRE(tier.ok());
  const uint64_t before = (*tier)->stats().commands;
  auto none = (*tier)->get_many({});
  REQUIRE(none.ok());
  CHECK(none->empty());
  auto none_ttl = (*tier)->get_many_with_ttl({});
  REQUIRE(none_ttl.ok());
  CHECK(none_ttl->empty());
  CHECK((*tier)->stats().commands == before);
  CHECK((*tier)->stats().connects == 0);  // not even a connection was made

  auto cache = make_string_cache(tiered_options<std::string>(server));
  reset_server_stats(server);
  const uint64_t cache_before = cache->stats().redis.commands;
  CHECK(cache->get_many("t", {}).empty());
  // Every key in L1: no Redis call either.
  cache->put("t", "a", "1");
  cache->put("t", "b", "2");
  REQUIRE(cache->flush(5s));
  reset_server_stats(server);
  const uint64_t after_puts = cache->stats().redis.commands;
  const std::vector<std::string> keys = {"a", "b", "a"};
  auto got = cache->get_many("t", keys);
  CHECK(got == std::vector<std::optional<std::string>>{"1", "2", "1"});
  CHECK(cache->stats().redis.commands == after_puts);
  CHECK(server_calls(server, "mget") == 0);
  CHECK(cache->stats().l1.hits == 3);
  CHECK(cache_before <= after_puts);
}

TEST_CASE("tiered cache get_many: L1 first, one MGET for the misses, backfill with the Redis TTL",
          "[cache][tiered][many]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto writer = make_string_cache(tiered_options<std::string>(server));
  const std::vector<std::string> keys = key_list(20);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i % 4 == 3) continue;  // k3, k7, ... are nowhere
    writer->put("t", keys[i], absl::StrCat("value ", i), PutOptions{.ttl = 30s, .tags = {"kb"}});
  }
  REQUIRE(writer->flush(5s));

  TieredCacheOptions<std::string> o = tiered_options<std::string>(server);
  auto clock = std::make_shared<ManualClock>();
  o.l1.clock = clock;
  auto reader = make_string_cache(o);
  reader->put("t", "k0", "value 0");  // already in the reader's L1
  REQUIRE(reader->flush(5s));
  reset_server_stats(server);
  const auto before = reader->stats();
  auto got = reader->get_many("t", keys);
  REQUIRE(got.size() == keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    INFO(keys[i]);
    if (i % 4 == 3) {
      CHECK_FALSE(got[i].has_value());
    } else {
      CHECK(got[i] == std::optional<std::string>(absl::StrCat("value ", i)));
    }
  }
  CHECK(server_calls(server, "mget") == 1);  // one MGET for the 19 keys L1 did not have
  CHECK(server_calls(server, "get") == 0);
  CHECK(server_calls(server, "pttl") == keys.size() - 1);
  auto s = reader->stats();
  CHECK(s.redis.commands == before.redis.commands + 1);  // one round trip
  CHECK(s.l1.hits == before.l1.hits + 1);
  CHECK(s.l1.misses == before.l1.misses + keys.size() - 1);
  CHECK(s.l2_hits == before.l2_hits + 14);
  CHECK(s.l2_misses == before.l2_misses + 5);
  CHECK(s.backfills == before.backfills + 14);
  CHECK(s.l2_errors == 0);

  // Backfilled: a second get_many is all L1.
  reset_server_stats(server);
  CHECK(reader->get_many("t", {keys.begin(), keys.begin() + 3}) ==
        std::vector<std::optional<std::string>>{"value 0", "value 1", "value 2"});
  CHECK(server_calls(server, "mget") == 0);
  // The copies carry the writer's tags (k0 was put locally, untagged).
  CHECK(reader->l1().invalidate_tag("kb") == 14);
  reset_server_stats(server);
  got = reader->get_many("t", keys);
  CHECK(got[1] == std::optional<std::string>("value 1"));
  CHECK(server_calls(server, "mget") == 1);
  CHECK(reader->stats().backfills == before.backfills + 28);
  // L1 keeps the copies no longer than Redis does (30 s), not default_ttl (60 s).
  CHECK(reader->l1().contains(StringCache::l1_key("t", "k1")));
  clock->advance(31s);
  CHECK_FALSE(reader->l1().contains(StringCache::l1_key("t", "k1")));
  CHECK(reader->l1().contains(StringCache::l1_key("t", "k0")));  // put locally: L1 has no expiry here
}

TEST_CASE("tiered cache get_many: a corrupt, foreign or unsigned value is a miss for its key only",
          "[cache][tiered][many]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto signed_options = [&](std::string secret) {
    TieredCacheOptions<std::vector<float>> o = tiered_options<std::vector<float>>(server);
    o.l2->signing_key = std::move(secret);
    return o;
  };
  auto writer = VectorCache::create(signed_options("secret"));
  REQUIRE(writer.ok());
  const std::vector<std::string> keys = key_list(6);
  for (size_t i = 0; i < keys.size(); ++i) (*writer)->put("t", keys[i], {float(i), 0.5f, -1.f});
  REQUIRE((*writer)->flush(5s));
  auto stored = [&](const std::string& key) { return "brisk:" + (*writer)->redis_key("t", key); };
  // k1: garbage; k3: a well-formed but unsigned envelope for k3; k4: k0's genuine value copied over it.
  REQUIRE(server.raw({"SET", stored("k1"), "not an envelope"}) == "OK");
  const std::string unsigned_value =
      encode_envelope(FloatVectorCodec::kTypeId, stored("k3"), {}, FloatVectorCodec::encode({9.f, 9.f, 9.f}));
  REQUIRE(server.raw({"SET", stored("k3"), unsigned_value}) == "OK");
  const std::optional<std::string> k0 = server.raw({"GET", stored("k0")});
  REQUIRE(k0.has_value());
  REQUIRE(server.raw({"SET", stored("k4"), *k0}) == "OK");

  auto reader = VectorCache::create(signed_options("secret"));
  REQUIRE(reader.ok());
  reset_server_stats(server);
  auto got = (*reader)->get_many("t", keys);
  REQUIRE(got.size() == keys.size());
  for (size_t i : {0, 2, 5}) CHECK(got[i] == std::optional<std::vector<float>>({float(i), 0.5f, -1.f}));
  for (size_t i : {1, 3, 4}) CHECK_FALSE(got[i].has_value());
  CHECK(server_calls(server, "mget") == 1);
  auto s = (*reader)->stats();
  CHECK(s.l2_hits == 3);
  CHECK(s.l2_misses == 3);
  CHECK(s.l2_rejected_format == 1);
  CHECK(s.l2_rejected_unauthenticated == 1);
  CHECK(s.l2_rejected_wrong_key == 1);
  CHECK(s.l2_decode_errors == 3);
  CHECK(s.backfills == 3);
  CHECK((*reader)->l1().size() == 3);  // only the good values were backfilled
  CHECK(s.l2_errors == 0);
}

TEST_CASE("redis get_many with the server killed mid-call: misses and counted errors", "[cache][tiered][many]") {
  RedisServer server;
  REQUIRE(server.ok());
  TieredCacheOptions<std::string> o = tiered_options<std::string>(server);
  o.l2->command_timeout = 5s;  // the kill, not the timeout, ends the call
  o.l2->breaker.failure_threshold = 2;
  o.l2->breaker.open_duration = 60s;
  auto cache = make_string_cache(o);
  const std::vector<std::string> keys = key_list(8);
  for (const std::string& k : keys) cache->put("t", k, "v" + k);
  REQUIRE(cache->flush(5s));
  cache->l1().invalidate_all();  // every key must come from Redis
  cache->l1().put(StringCache::l1_key("t", "local"), "here");
  std::vector<std::string> asked = keys;
  asked.push_back("local");

  server.pause();  // the MGET is sent and waits for a reply that never comes...
  std::vector<std::optional<std::string>> got;
  std::thread caller([&] { got = cache->get_many("t", asked); });
  std::this_thread::sleep_for(300ms);
  server.kill();  // ...until the server dies under it
  caller.join();
  REQUIRE(got.size() == asked.size());
  for (size_t i = 0; i < keys.size(); ++i) CHECK_FALSE(got[i].has_value());
  CHECK(got.back() == std::optional<std::string>("here"));  // L1 still answers
  auto s = cache->stats();
  CHECK(s.l2_errors == 1);            // one failed call...
  CHECK(s.l2_misses == keys.size());  // ...a miss for each key it carried
  CHECK(s.l2_hits == 0);
  CHECK(s.redis.errors >= 1);
  CHECK(s.redis.timeouts == 0);

  // The dead server: connect refused; the breaker opens and then get_many fails fast without a call.
  (void)cache->get_many("t", keys);
  CHECK(cache->stats().redis.breaker_state == CircuitBreaker::State::kOpen);
  const uint64_t short_before = cache->stats().redis.short_circuited;
  got = cache->get_many("t", asked);
  CHECK(got.back() == std::optional<std::string>("here"));
  CHECK_FALSE(got.front().has_value());
  s = cache->stats();
  CHECK(s.redis.short_circuited == short_before + 1);
  CHECK(s.l2_errors == 3);
  CHECK(s.l2_misses == 3 * keys.size());

  // The tier alone: the same failure is an UNAVAILABLE status, never a crash.
  auto tier = RedisTier::create(redis_options(server));
  REQUIRE(tier.ok());
  auto failed = (*tier)->get_many(keys);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == absl::StatusCode::kUnavailable);
  CHECK((*tier)->stats().errors == 1);
}

#endif  // BRISK_HAVE_REDIS
