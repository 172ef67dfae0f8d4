// TieredCache over a real redis-server: L2 hits backfill L1, single-flight loads write L2, invalidations (keys
// and tags) cross instances, bad values planted with raw RESP are counted misses, namespaces keep models and
// tenants apart, bad options are named, and a server that is down at create is survived and rejoined.
#include "brisk/cache/tiered_cache.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test_util.h"

#if defined(BRISK_HAVE_REDIS)
#include "cache/redis_server.h"
#endif

using brisk::Duration;
using brisk::StatusOr;
using brisk::cache::encode_envelope;
using brisk::cache::FloatVectorCodec;
using brisk::cache::PutOptions;
using brisk::cache::RedisOptions;
using brisk::cache::StringCodec;
using brisk::cache::TieredCache;
using brisk::cache::TieredCacheOptions;
using brisk::testing::wait_until;
using namespace std::chrono_literals;

namespace {

using StringCache = TieredCache<std::string, StringCodec>;
using VectorCache = TieredCache<std::vector<float>, FloatVectorCodec>;

// port 0: L1 only. Timeouts are lenient: these tests check behaviour, not the bound on blocking (the failure
// test does), and a loaded 2-core machine can delay a loopback connect past the default 50 ms.
template <typename V>
TieredCacheOptions<V> options_for(int port, const std::string& model = "minilm") {
  TieredCacheOptions<V> o;
  o.l1.max_entries = 1000;
  o.model = model;
  o.default_ttl = 60s;
  if (port != 0) {
    RedisOptions r;
    r.port = port;
    r.connect_timeout = 500ms;
    r.command_timeout = 500ms;
    o.l2 = r;
  }
  return o;
}

std::unique_ptr<StringCache> make_string_cache(int port, const std::string& model = "minilm") {
  auto c = StringCache::create(options_for<std::string>(port, model));
  REQUIRE(c.ok());
  // create() waits for the subscription only connect_timeout + command_timeout; a loaded machine may need more.
  if (port != 0) REQUIRE(wait_until([&] { return (*c)->stats().redis.subscribed; }));
  return std::move(*c);
}

// The key a cache's entry has in Redis (key_prefix "brisk"). Built by append: g++ 12 warns falsely
// (-Wrestrict) on "literal" + std::string&&.
template <typename C>
std::string stored_key(const C& cache, std::string_view tenant, std::string_view key) {
  std::string s = "brisk:";
  s.append(cache.redis_key(tenant, key));
  return s;
}

StringCache::Loader constant(std::string v, std::atomic<int>* calls = nullptr) {
  return [v, calls](std::string_view, std::string_view) -> StatusOr<std::string> {
    if (calls != nullptr) calls->fetch_add(1);
    return v;
  };
}

}  // namespace

TEST_CASE("tiered cache without l2 is an L1 cache", "[cache][tiered]") {
  auto c = make_string_cache(0);
  CHECK_FALSE(c->get("t", "k").has_value());
  c->put("t", "k", "v");
  CHECK(c->get("t", "k") == std::optional<std::string>("v"));
  std::atomic<int> calls{0};
  CHECK(*c->get_or_load("t", "j", constant("w", &calls)) == "w");
  CHECK(*c->get_or_load("t", "j", constant("x", &calls)) == "w");
  CHECK(calls == 1);
  CHECK(c->invalidate("t", "k").l1_removed == 1);
  CHECK(c->redis() == nullptr);
  CHECK(c->flush(1s));
  auto s = c->stats();
  CHECK(s.l2_hits + s.l2_misses + s.l2_errors == 0);
}

TEST_CASE("tiered cache options are validated, naming the field", "[cache][tiered]") {
  auto expect_bad = [](TieredCacheOptions<std::string> o, const std::string& field) {
    auto c = StringCache::create(o);
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().message().find(field) != std::string_view::npos);
  };
  const int none = 0;
  auto o = options_for<std::string>(none);
  o.l2 = RedisOptions{};
  o.model = "";
  expect_bad(o, "model");
  o = options_for<std::string>(none);
  o.l2 = RedisOptions{};
  o.default_ttl = 0s;
  expect_bad(o, "default_ttl");
  o = options_for<std::string>(none);
  o.l2 = RedisOptions{};
  o.l2->port = -1;
  expect_bad(o, "l2: RedisOptions.port");
  o = options_for<std::string>(none);
  o.l1.max_entries = 0;
  expect_bad(o, "max_entries");
  o = options_for<std::string>(none);
  o.l2 = RedisOptions{};
  o.write_behind_capacity = 0;
  expect_bad(o, "write_behind_capacity");
}

#if defined(BRISK_HAVE_REDIS)

using brisk::testing::RedisServer;

TEST_CASE("tiered cache L2 hit backfills L1 with TTL and tags", "[cache][tiered]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto a = make_string_cache(server.port());
  auto b = make_string_cache(server.port());
  a->put("t1", "hello", "world", PutOptions{.ttl = 30s, .tags = {"kb"}});
  REQUIRE(a->flush(5s));
  CHECK(a->stats().write_behind.written == 1);

  CHECK(b->get("t1", "hello") == std::optional<std::string>("world"));
  auto s = b->stats();
  CHECK(s.l2_hits == 1);
  CHECK(s.backfills == 1);
  CHECK(b->l1().contains(StringCache::l1_key("t1", "hello")));
  CHECK(b->get("t1", "hello") == std::optional<std::string>("world"));
  CHECK(b->stats().l2_hits == 1);  // the second read came from L1
  // The backfilled copy carries the writer's tag: a local tag invalidation finds it.
  CHECK(b->l1().invalidate_tag("kb") == 1);
  CHECK_FALSE(b->get("t1", "missing").has_value());
  CHECK(b->stats().l2_misses == 1);
}

TEST_CASE("tiered cache get_or_load: single flight, L2 first, then load and write L2", "[cache][tiered]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto a = make_string_cache(server.port());
  auto b = make_string_cache(server.port());
  std::atomic<int> calls{0};
  auto slow = [&](std::string_view tenant, std::string_view key) -> StatusOr<std::string> {
    calls.fetch_add(1);
    std::this_thread::sleep_for(50ms);
    return std::string(tenant) + "/" + std::string(key);
  };
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      auto v = a->get_or_load("t", "q", slow);
      if (!v.ok() || *v != "t/q") wrong.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(calls == 1);
  REQUIRE(a->flush(5s));
  CHECK(server.raw({"EXISTS", stored_key(*a, "t", "q")}) == "1");

  // Another instance finds it in L2: its loader is not called.
  CHECK(*b->get_or_load("t", "q", slow) == "t/q");
  CHECK(calls == 1);
  CHECK(b->stats().l2_hits == 1);
  CHECK(b->stats().backfills == 1);

  // A loader error reaches the caller and nothing is stored anywhere.
  auto failing = [](std::string_view, std::string_view) -> StatusOr<std::string> {
    return absl::NotFoundError("no answer");
  };
  CHECK(b->get_or_load("t", "bad", failing).status().code() == absl::StatusCode::kNotFound);
  REQUIRE(b->flush(5s));
  CHECK(server.raw({"EXISTS", stored_key(*b, "t", "bad")}) == "0");
}

TEST_CASE("tiered cache invalidation by one instance drops the other's L1 entry", "[cache][tiered]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto a = make_string_cache(server.port());
  auto b = make_string_cache(server.port());
  a->put("t", "k", "v1");
  REQUIRE(a->flush(5s));
  REQUIRE(b->get("t", "k") == std::optional<std::string>("v1"));  // now in b's L1
  const std::string l1k = StringCache::l1_key("t", "k");
  REQUIRE(b->l1().contains(l1k));

  auto r = a->invalidate("t", "k");
  CHECK(r.l1_removed == 1);
  CHECK(r.l2_status.ok());
  CHECK(wait_until([&] { return !b->l1().contains(l1k); }));
  CHECK(b->stats().remote_invalidations >= 1);
  CHECK_FALSE(b->get("t", "k").has_value());
  CHECK(a->stats().remote_invalidations == 0);  // its own message is not applied twice

  // A queued write cannot resurrect an invalidated key.
  for (int i = 0; i < 20; ++i) a->put("t", absl::StrCat("k", i), "x");
  a->put("t", "k", "v2");
  a->invalidate("t", "k");
  REQUIRE(a->flush(5s));
  CHECK(server.raw({"EXISTS", stored_key(*a, "t", "k")}) == "0");
}

TEST_CASE("tiered cache get that read Redis before an invalidation does not leave the old value in L1",
          "[cache][tiered]") {
  RedisServer server;
  REQUIRE(server.ok());
  // The L1 weigher runs inside the backfill's put: it holds the reader there, after its Redis read, while the
  // value is invalidated (or replaced), then lets it go on.
  std::atomic<bool> hold{false};
  std::atomic<bool> held{false}, release{false};
  auto o = options_for<std::string>(server.port());
  o.l1.max_entries = 0;
  o.l1.max_weight = 1 << 20;
  o.l1.weigher = [&](const std::string&, const std::string&) -> uint64_t {
    if (hold.exchange(false)) {
      held = true;
      while (!release) std::this_thread::yield();
    }
    return 1;
  };
  auto made = StringCache::create(o);
  REQUIRE(made.ok());
  auto& c = *made;
  REQUIRE(wait_until([&] { return c->stats().redis.subscribed; }));
  const std::string l1k = StringCache::l1_key("t", "q");

  const auto race = [&](const PutOptions& put_options, const std::function<void()>& change) {
    c->put("t", "q", "answer-v1", put_options);
    REQUIRE(c->flush(5s));
    c->l1().invalidate_all();  // L1 misses, Redis has it (another instance wrote it, or L1 evicted it)
    held = false;
    release = false;
    hold = true;
    std::optional<std::string> concurrent;
    std::thread reader([&] { concurrent = c->get("t", "q"); });
    REQUIRE(wait_until([&] { return held.load(); }));  // the reader has read answer-v1 from Redis
    change();
    release = true;
    reader.join();
    CHECK(concurrent == std::optional<std::string>("answer-v1"));  // it began before the change
  };

  SECTION("invalidate") {
    race({}, [&] { REQUIRE(c->invalidate("t", "q").l2_status.ok()); });
    CHECK_FALSE(c->l1().contains(l1k));
    CHECK_FALSE(c->get("t", "q").has_value());
  }
  SECTION("invalidate_tag") {
    race({.tags = {"kb-v1"}}, [&] { REQUIRE(c->invalidate_tag("kb-v1").l2_status.ok()); });
    CHECK_FALSE(c->l1().contains(l1k));
  }
  SECTION("put of a new value") {
    race({}, [&] { c->put("t", "q", "answer-v2"); });
    REQUIRE(c->flush(5s));
    CHECK(c->get("t", "q") == std::optional<std::string>("answer-v2"));
  }
}

TEST_CASE("tiered cache tags: invalidate_tag removes across L1, Redis and other instances", "[cache][tiered]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto a = make_string_cache(server.port());
  auto b = make_string_cache(server.port());
  auto other_model = make_string_cache(server.port(), "other");
  const PutOptions kb{.ttl = 0s, .tags = {"kb-v1"}};
  a->put("t1", "x", "1", kb);
  a->put("t2", "y", "2", kb);
  a->put("t1", "z", "3");  // untagged
  other_model->put("t1", "x", "4", kb);
  REQUIRE(a->flush(5s));
  REQUIRE(other_model->flush(5s));
  REQUIRE(b->get("t1", "x").has_value());                         // backfilled with the envelope's tags
  REQUIRE(*b->get_or_load("t2", "y", constant("never")) == "2");  // backfilled with the caller's (no) tags
  REQUIRE(b->get("t1", "z").has_value());
  REQUIRE(b->l1().size() == 3);

  auto r = a->invalidate_tag("kb-v1");
  CHECK(r.l2_status.ok());
  CHECK(r.l1_removed == 2);
  CHECK(r.l2_removed == 3);                                // tags are global: the other model's entry too
  CHECK(wait_until([&] { return b->l1().size() == 1; }));  // both tagged copies dropped, z kept
  CHECK(b->l1().contains(StringCache::l1_key("t1", "z")));
  CHECK(wait_until([&] { return other_model->l1().size() == 0; }));
  CHECK_FALSE(b->get("t1", "x").has_value());
  CHECK_FALSE(b->get("t2", "y").has_value());
  CHECK(server.raw({"EXISTS", stored_key(*a, "t1", "x")}) == "0");
}

TEST_CASE("tiered cache treats corrupt, foreign and wrong-version values as counted misses", "[cache][tiered]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto c = VectorCache::create(options_for<std::vector<float>>(server.port()));
  REQUIRE(c.ok());
  VectorCache& cache = **c;
  const std::vector<float> good = {1.f, 2.f, 3.f};
  const std::string payload = FloatVectorCodec::encode(good);
  auto planted = [&](std::string_view key) { return stored_key(cache, "t", key); };
  const std::string valid = encode_envelope(FloatVectorCodec::kTypeId, planted("k2"), {}, payload);
  std::string wrong_version = valid;
  wrong_version[4] = 9;
  std::string corrupted = valid;
  corrupted[valid.size() - 2] ^= 0x01;
  // Value i is planted at key "k<i>"; the comment says how the cache must count it.
  const std::vector<std::string> bad_values = {
      "plain text from another program",                                                 // format
      wrong_version,                                                                     // format
      corrupted,                                                                         // corrupt
      valid.substr(0, valid.size() - 3),                                                 // corrupt: truncated
      encode_envelope(StringCodec::kTypeId, planted("k4"), {}, payload),                 // format: codec
      encode_envelope(FloatVectorCodec::kTypeId, planted("k5"), {}, payload.substr(1)),  // corrupt: 11 bytes
      "",                                                                                // format
      valid,                                                                             // wrong key: k2's
  };
  for (size_t i = 0; i < bad_values.size(); ++i) {
    const std::string key = absl::StrCat("k", i);
    REQUIRE(server.raw({"SET", stored_key(cache, "t", key), bad_values[i]}) == "OK");
    CHECK_FALSE(cache.get("t", key).has_value());
  }
  auto s = cache.stats();
  CHECK(s.l2_decode_errors == bad_values.size());
  CHECK(s.l2_rejected_format == 4);
  CHECK(s.l2_rejected_corrupt == 3);
  CHECK(s.l2_rejected_wrong_key == 1);
  CHECK(s.l2_rejected_unauthenticated == 0);
  CHECK(s.l2_misses == bad_values.size());
  CHECK(s.l2_hits == 0);
  CHECK(cache.l1().size() == 0);

  // get_or_load computes past a bad value and replaces it with a good one.
  std::atomic<int> calls{0};
  auto load = [&](std::string_view, std::string_view) -> StatusOr<std::vector<float>> {
    calls.fetch_add(1);
    return good;
  };
  CHECK(*cache.get_or_load("t", "k1", load) == good);
  CHECK(calls == 1);
  REQUIRE(cache.flush(5s));
  auto fresh = VectorCache::create(options_for<std::vector<float>>(server.port()));
  REQUIRE(fresh.ok());
  CHECK((*fresh)->get("t", "k1") == std::optional<std::vector<float>>(good));
  CHECK((*fresh)->stats().l2_decode_errors == 0);
}

TEST_CASE("tiered cache with a signing key refuses planted unsigned values and values moved between keys",
          "[cache][tiered][auth]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto signed_options = [&](std::string secret) {
    TieredCacheOptions<std::string> o = options_for<std::string>(server.port());
    o.l2->signing_key = std::move(secret);
    return o;
  };
  auto writer = StringCache::create(signed_options("shared-secret"));
  REQUIRE(writer.ok());
  (*writer)->put("t", "q1", "answer one");
  (*writer)->put("t", "q2", "answer two");
  REQUIRE((*writer)->flush(5s));
  // An attacker with write access to Redis: copies q1's valid, signed value over q2, and plants an unsigned
  // value that is a well-formed envelope for q3's key.
  const std::optional<std::string> q1 = server.raw({"GET", stored_key(**writer, "t", "q1")});
  REQUIRE(q1.has_value());
  REQUIRE(server.raw({"SET", stored_key(**writer, "t", "q2"), *q1}) == "OK");
  const std::string unsigned_value =
      encode_envelope(StringCodec::kTypeId, stored_key(**writer, "t", "q3"), {}, StringCodec::encode("planted"));
  REQUIRE(server.raw({"SET", stored_key(**writer, "t", "q3"), unsigned_value}) == "OK");

  auto reader = StringCache::create(signed_options("shared-secret"));
  REQUIRE(reader.ok());
  CHECK((*reader)->get("t", "q1") == std::optional<std::string>("answer one"));
  CHECK_FALSE((*reader)->get("t", "q2").has_value());
  CHECK_FALSE((*reader)->get("t", "q3").has_value());
  auto s = (*reader)->stats();
  CHECK(s.l2_hits == 1);
  CHECK(s.l2_misses == 2);
  CHECK(s.l2_rejected_wrong_key == 1);
  CHECK(s.l2_rejected_unauthenticated == 1);
  CHECK(s.l2_decode_errors == 2);

  // Another secret: even the genuine value is refused.
  auto stranger = StringCache::create(signed_options("another-secret"));
  REQUIRE(stranger.ok());
  CHECK_FALSE((*stranger)->get("t", "q1").has_value());
  CHECK((*stranger)->stats().l2_rejected_unauthenticated == 1);
}

TEST_CASE("tiered cache namespaces keys per model and tenant", "[cache][tiered]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto m1 = make_string_cache(server.port(), "m1");
  auto m2 = make_string_cache(server.port(), "m2");
  auto m1_again = make_string_cache(server.port(), "m1");
  m1->put("tenant-a", "q", "a's answer");
  m1->put("a:b", "c", "tenant a:b");  // must not meet tenant "a", key "b:c"
  m1->put("x%3Ay", "k", "percent");   // must not meet tenant "x:y"
  REQUIRE(m1->flush(5s));
  CHECK_FALSE(m1_again->get("tenant-b", "q").has_value());
  CHECK_FALSE(m2->get("tenant-a", "q").has_value());
  CHECK(m1_again->get("tenant-a", "q") == std::optional<std::string>("a's answer"));
  CHECK_FALSE(m1_again->get("a", "b:c").has_value());
  CHECK(m1_again->get("a:b", "c") == std::optional<std::string>("tenant a:b"));
  CHECK_FALSE(m1_again->get("x:y", "k").has_value());
  CHECK(m1_again->get("x%3Ay", "k") == std::optional<std::string>("percent"));
  CHECK(m1->redis_key("a:b", "c") == "m1:a%3Ab:c");
  CHECK(server.raw({"EXISTS", "brisk:m1:tenant-a:q"}) == "1");
}

TEST_CASE("tiered cache with the server down at create works from L1 and recovers", "[cache][tiered]") {
  RedisServer server;
  REQUIRE(server.ok());
  server.kill();
  auto o = options_for<std::string>(server.port());
  o.l2->breaker.open_duration = 100ms;
  auto c = StringCache::create(o);
  REQUIRE(c.ok());
  StringCache& cache = **c;
  std::atomic<int> calls{0};
  for (int i = 0; i < 10; ++i) {
    auto v = cache.get_or_load("t", absl::StrCat("k", i % 3), constant("v", &calls));
    REQUIRE(v.ok());
    CHECK(*v == "v");
  }
  CHECK(calls == 3);
  cache.put("t", "p", "q");
  CHECK(cache.get("t", "p") == std::optional<std::string>("q"));
  auto r = cache.invalidate("t", "p");
  CHECK(r.l1_removed == 1);
  CHECK_FALSE(r.l2_status.ok());
  CHECK(cache.stats().l2_errors >= 1);

  REQUIRE(server.restart());
  // Writes reach Redis again once the breaker lets a probe through.
  CHECK(wait_until([&] {
    cache.put("t", "after", "restart");
    cache.flush(1s);
    return server.raw({"EXISTS", stored_key(cache, "t", "after")}) == "1";
  }));
  auto other = make_string_cache(server.port());
  CHECK(other->get("t", "after") == std::optional<std::string>("restart"));
  // The subscriber came back and cleared L1 (invalidations may have been missed while it was away).
  CHECK(wait_until([&] { return cache.stats().redis.subscribed; }));
  CHECK(wait_until([&] { return !cache.l1().contains(StringCache::l1_key("t", "k0")); }));
}

#else  // a library built without hiredis: the Redis tier says so, the L1 works

TEST_CASE("tiered cache with l2 in a build without Redis fails create with UNIMPLEMENTED", "[cache][tiered]") {
  auto o = options_for<std::string>(6379);
  auto c = StringCache::create(o);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(c.status().message().find("hiredis") != std::string_view::npos);
}

#endif  // BRISK_HAVE_REDIS
