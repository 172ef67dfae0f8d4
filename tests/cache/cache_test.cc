// brisk::cache::Cache: options, get/put, expiry on a manual clock, weight bounds, tags, invalidation, warm-up,
// statistics and the removal callback. Policy tests are in cache_policy_test.cc, threads in
// cache_concurrency_test.cc.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk/cache/cache.h"
#include "brisk/core/clock.h"

using brisk::Duration;
using brisk::ManualClock;
using brisk::StatusOr;
using namespace brisk::cache;
using namespace std::chrono_literals;

namespace {

using StrCache = Cache<std::string, std::string>;

struct Removal {
  std::string key, value;
  RemovalCause cause;
};

CacheOptions<std::string, std::string> entries(size_t n, int shards = 1) {
  CacheOptions<std::string, std::string> o;
  o.max_entries = n;
  o.shards = shards;
  o.seed = 7;
  return o;
}

PutOptions with_ttl(Duration ttl) {
  PutOptions p;
  p.ttl = ttl;
  return p;
}

std::unique_ptr<StrCache> make(CacheOptions<std::string, std::string> o) {
  auto c = StrCache::create(std::move(o));
  REQUIRE(c.ok());
  return std::move(*c);
}

}  // namespace

TEST_CASE("Cache: bad options are rejected with the field named", "[cache][cache-core]") {
  auto expect_error = [](const CacheOptions<std::string, std::string>& o, const std::string& field) {
    const auto c = StrCache::create(o);
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(c.status().message()), Catch::Contains(field));
    CHECK_THAT(std::string(o.validate().message()), Catch::Contains("expected"));
  };
  CacheOptions<std::string, std::string> o;
  expect_error(o, "max_entries");  // neither bound
  o.max_entries = 10;
  o.max_weight = 10;
  expect_error(o, "max_weight");  // both bounds
  o = entries(10);
  o.weigher = [](const std::string&, const std::string& v) { return v.size(); };
  expect_error(o, "weigher");
  o = entries(10);
  o.expire_after_write = -1s;
  expect_error(o, "expire_after_write");
  o = entries(10);
  o.expire_after_access = -1ns;
  expect_error(o, "expire_after_access");
  o = entries(10);
  o.refresh_ahead_beta = -0.5;
  expect_error(o, "refresh_ahead_beta");
  o.refresh_ahead_beta = std::nan("");
  expect_error(o, "refresh_ahead_beta");
  o = entries(10, 3);
  expect_error(o, "shards");
  o = entries(10, 16);
  expect_error(o, "shards");
  o = entries(10, -1);
  expect_error(o, "shards");
  CHECK(entries(10, 8).validate().ok());

  auto cache = make(entries(10));
  const auto r = cache->get_or_load("k", StrCache::Loader{});
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("loader"));
}

TEST_CASE("Cache: automatic sharding keeps shards meaningful", "[cache][cache-core]") {
  CHECK(StrCache::automatic_shards(10) == 1);
  CHECK(StrCache::automatic_shards(127) == 1);
  CHECK(StrCache::automatic_shards(128) == 2);
  const size_t big = StrCache::automatic_shards(1'000'000);
  CHECK(big >= 4);
  CHECK(std::has_single_bit(big));
  auto small = make(entries(100, 0));
  CHECK(small->shard_count() == 1);
  auto large = make(entries(1'000'000, 0));
  CHECK(large->shard_count() == big);
  CHECK(large->stats().capacity == 1'000'000);  // the shares add up to the capacity
}

TEST_CASE("Cache: get, put, replace, invalidate, invalidate_all and stats", "[cache][cache-core]") {
  std::vector<Removal> removed;
  auto o = entries(100, 4);
  o.on_removal = [&](const std::string& k, const std::string& v, RemovalCause c) { removed.push_back({k, v, c}); };
  auto cache = make(o);
  CHECK_FALSE(cache->get("a"));
  cache->put("a", "1");
  cache->put("b", "2");
  REQUIRE(cache->get("a") == std::optional<std::string>("1"));
  cache->put("a", "1b");
  REQUIRE(removed.size() == 1);
  CHECK(removed[0].key == "a");
  CHECK(removed[0].value == "1");
  CHECK(removed[0].cause == RemovalCause::kReplaced);
  CHECK(cache->get("a") == std::optional<std::string>("1b"));
  CHECK(cache->size() == 2);

  CHECK(cache->invalidate("a"));
  CHECK_FALSE(cache->invalidate("a"));
  CHECK_FALSE(cache->get("a"));
  CHECK(removed.back().cause == RemovalCause::kExplicit);
  CHECK(removed.back().value == "1b");

  for (int i = 0; i < 10; ++i) cache->put(absl::StrCat("k", i), "v");
  CHECK(cache->size() == 11);
  removed.clear();
  cache->invalidate_all();
  CHECK(cache->size() == 0);
  CHECK(cache->weight() == 0);
  CHECK(removed.size() == 11);
  for (const auto& r : removed) CHECK(r.cause == RemovalCause::kExplicit);

  const CacheStats st = cache->stats();
  CHECK(st.hits == 2);
  CHECK(st.misses == 2);
  CHECK(st.hit_rate() == Approx(0.5));
  CHECK(st.invalidations == 12);
  CHECK(st.entries == 0);
  CHECK(st.shards == 4);
  CHECK(CacheStats{}.hit_rate() == 0.0);
}

TEST_CASE("Cache: expire_after_write, on a manual clock", "[cache][cache-core][expiry]") {
  auto clock = std::make_shared<ManualClock>();
  std::vector<Removal> removed;
  auto o = entries(100);
  o.clock = clock;
  o.expire_after_write = 10s;
  o.on_removal = [&](const std::string& k, const std::string& v, RemovalCause c) { removed.push_back({k, v, c}); };
  auto cache = make(o);
  cache->put("a", "1");
  clock->advance(10s - 1ns);
  CHECK(cache->get("a") == std::optional<std::string>("1"));  // reads do not extend a write deadline
  clock->advance(1ns);
  CHECK_FALSE(cache->get("a"));
  CHECK_FALSE(cache->contains("a"));
  REQUIRE(removed.size() == 1);
  CHECK(removed[0].cause == RemovalCause::kExpired);
  CHECK(cache->stats().expirations == 1);

  // Rewriting restarts the deadline.
  cache->put("b", "1");
  clock->advance(6s);
  cache->put("b", "2");
  clock->advance(6s);
  CHECK(cache->get("b") == std::optional<std::string>("2"));
}

TEST_CASE("Cache: expire_after_access extends on every read", "[cache][cache-core][expiry]") {
  auto clock = std::make_shared<ManualClock>();
  auto o = entries(100);
  o.clock = clock;
  o.expire_after_access = 5s;
  auto cache = make(o);
  cache->put("a", "1");
  cache->put("b", "1");
  for (int i = 0; i < 5; ++i) {
    clock->advance(4s);
    CHECK(cache->get("a"));  // each read pushes the deadline 5 s out
  }
  CHECK_FALSE(cache->contains("b"));  // b was not read for 20 s
  clock->advance(5s);
  CHECK_FALSE(cache->get("a"));
  CHECK(cache->stats().expirations == 2);
  CHECK(cache->size() == 0);
}

TEST_CASE("Cache: a per-entry ttl overrides expire_after_write", "[cache][cache-core][expiry]") {
  auto clock = std::make_shared<ManualClock>();
  auto o = entries(100);
  o.clock = clock;
  o.expire_after_write = 10s;
  auto cache = make(o);
  cache->put("short", "1", with_ttl(2s));
  cache->put("long", "1", with_ttl(30s));
  cache->put("default", "1");
  clock->advance(2s);
  CHECK_FALSE(cache->get("short"));
  CHECK(cache->get("default"));
  clock->advance(8s);
  CHECK_FALSE(cache->get("default"));
  CHECK(cache->get("long"));
  clock->advance(20s);
  CHECK_FALSE(cache->get("long"));
  CHECK(cache->stats().expirations == 3);

  // Without expire_after_write, only entries with a ttl expire.
  auto o2 = entries(100);
  o2.clock = clock;
  auto c2 = make(o2);
  c2->put("ttl", "1", with_ttl(1s));
  c2->put("forever", "1");
  clock->advance(1h);
  CHECK_FALSE(c2->get("ttl"));
  CHECK(c2->get("forever"));
}

TEST_CASE("Cache: a ttl of Duration::max() never expires instead of overflowing", "[cache][cache-core][expiry]") {
  auto clock = std::make_shared<ManualClock>();
  const Duration forever = Duration::max();
  SECTION("per-entry ttl") {
    auto o = entries(100);
    o.clock = clock;
    auto cache = make(o);
    cache->put("k", "v", with_ttl(forever));
    clock->advance(24h * 365);
    CHECK(cache->get("k") == std::optional<std::string>("v"));
    CHECK(cache->stats().expirations == 0);
  }
  SECTION("expire_after_write") {
    auto o = entries(100);
    o.clock = clock;
    o.expire_after_write = forever;
    auto cache = make(o);
    cache->put("k", "v");
    clock->advance(24h * 365);
    CHECK(cache->get("k") == std::optional<std::string>("v"));
  }
  SECTION("expire_after_access") {
    auto o = entries(100);
    o.clock = clock;
    o.expire_after_access = forever - 1s;
    auto cache = make(o);
    cache->put("k", "v");
    clock->advance(24h * 365);
    CHECK(cache->get("k") == std::optional<std::string>("v"));
    cache->put("k2", "v2");  // a write drains what has expired: nothing has
    CHECK(cache->size() == 2);
  }
}

TEST_CASE("Cache: expired entries are never returned and are reclaimed", "[cache][cache-core][expiry]") {
  auto clock = std::make_shared<ManualClock>();
  auto o = entries(1000, 4);
  o.clock = clock;
  auto cache = make(o);
  std::mt19937 rng(3);
  std::map<std::string, brisk::TimePoint> deadline;  // the model
  uint64_t expired_seen = 0;
  for (int step = 0; step < 3000; ++step) {
    const std::string key = absl::StrCat("k", rng() % 300);
    if (rng() % 2 == 0) {
      const Duration ttl = std::chrono::milliseconds(1 + rng() % 500);
      cache->put(key, "v", with_ttl(ttl));
      deadline[key] = clock->now() + ttl;
    } else {
      const bool live = deadline.count(key) && clock->now() < deadline[key];
      const bool got = cache->get(key).has_value();
      REQUIRE(got == live);
      if (deadline.count(key) && !live) ++expired_seen;
    }
    clock->advance(std::chrono::milliseconds(rng() % 3));
  }
  CHECK(expired_seen > 0);
  // cleanup() reclaims without any read of the keys.
  clock->advance(1s);
  cache->cleanup();
  CHECK(cache->size() == 0);
  const CacheStats st = cache->stats();
  CHECK(st.expirations > 0);
  CHECK(st.evictions == 0);

  // A write to a shard drains its expired entries too (one shard here).
  auto c1 = make([&] {
    auto x = entries(100);
    x.clock = clock;
    return x;
  }());
  for (int i = 0; i < 20; ++i) c1->put(absl::StrCat("e", i), "v", with_ttl(1s));
  clock->advance(2s);
  c1->put("fresh", "v");
  CHECK(c1->size() == 1);
  CHECK(c1->stats().expirations == 20);
}

TEST_CASE("Cache: the weight bound is never exceeded under random puts", "[cache][cache-core][weight]") {
  for (const auto policy : {EvictionPolicy::kWTinyLfu, EvictionPolicy::kLru}) {
    for (const int shards : {1, 4}) {
      CAPTURE(static_cast<int>(policy), shards);
      uint64_t evicted_weight = 0;
      uint64_t rejected = 0;
      CacheOptions<std::string, std::string> o;
      o.max_weight = 1000;
      o.shards = shards;
      o.policy = policy;
      o.weigher = [](const std::string& k, const std::string& v) { return v.size(); };
      o.on_removal = [&](const std::string&, const std::string& v, RemovalCause c) {
        if (c == RemovalCause::kSize) evicted_weight += v.size();
        if (c == RemovalCause::kSize && v.size() > 1000 / static_cast<size_t>(shards)) ++rejected;
      };
      auto cache = make(o);
      std::mt19937 rng(11);
      for (int op = 0; op < 4000; ++op) {
        const std::string key = absl::StrCat("k", rng() % 200);
        const uint32_t r = rng() % 10;
        if (r < 6) {
          // Mostly small, some large, a few heavier than a shard (or the whole cache) can hold.
          const size_t w = r == 0 ? 1 + rng() % 1200 : 1 + rng() % 120;
          cache->put(key, std::string(w, 'x'));
        } else if (r < 9) {
          cache->get(key);
        } else {
          cache->invalidate(key);
        }
        REQUIRE(cache->weight() <= 1000);
        if (op % 100 == 0) {
          uint64_t sum = 0;
          for (int k = 0; k < 200; ++k) {
            // contains() then get() is safe single-threaded; get() affects the policy, which is fine here.
            if (auto v = cache->get(absl::StrCat("k", k))) sum += v->size();
          }
          REQUIRE(sum == cache->weight());
          REQUIRE(sum <= 1000);
        }
      }
      const CacheStats st = cache->stats();
      CHECK(st.evicted_weight == evicted_weight);
      CHECK(st.evictions > 0);
      CHECK(rejected > 0);
      CHECK(st.weight <= 1000);
    }
  }
}

TEST_CASE("Cache: an entry heavier than the capacity is not stored", "[cache][cache-core][weight]") {
  std::vector<Removal> removed;
  CacheOptions<std::string, std::string> o;
  o.max_weight = 100;
  o.shards = 1;
  o.weigher = [](const std::string&, const std::string& v) { return v.size(); };
  o.on_removal = [&](const std::string& k, const std::string& v, RemovalCause c) { removed.push_back({k, v, c}); };
  auto cache = make(o);
  cache->put("a", std::string(60, 'a'));
  cache->put("b", std::string(101, 'b'));
  CHECK_FALSE(cache->contains("b"));
  CHECK(cache->contains("a"));
  REQUIRE(removed.size() == 1);
  CHECK(removed[0].cause == RemovalCause::kSize);
  CHECK(removed[0].key == "b");
  // Replacing a stored value by an over-heavy one drops the old value too: a stale value must not survive.
  cache->put("a", std::string(200, 'a'));
  CHECK_FALSE(cache->contains("a"));
  CHECK(removed.size() == 3);
  CHECK(removed[1].cause == RemovalCause::kReplaced);
  CHECK(removed[2].cause == RemovalCause::kSize);
  CHECK(cache->weight() == 0);
  // A weight of 100 fits exactly; a second entry pushes the first out.
  cache->put("c", std::string(100, 'c'));
  CHECK(cache->weight() == 100);
  cache->put("d", std::string(1, 'd'));
  CHECK(cache->weight() <= 100);
}

TEST_CASE("Cache: invalidate_tag removes exactly the tagged entries", "[cache][cache-core][tags]") {
  std::vector<Removal> removed;
  auto o = entries(1000, 4);
  o.on_removal = [&](const std::string& k, const std::string& v, RemovalCause c) { removed.push_back({k, v, c}); };
  auto cache = make(o);
  for (int i = 0; i < 100; ++i) {
    std::vector<std::string> tags;
    if (i % 2 == 0) tags.push_back("even");
    if (i % 3 == 0) tags.push_back("three");
    cache->put(absl::StrCat("k", i), "v", {.ttl = Duration{0}, .tags = tags});
  }
  cache->put("k0", "v",
             {.ttl = Duration{0}, .tags = {"three", "three"}});  // re-put replaces the tags (duplicates are one tag)
  CHECK(cache->invalidate_tag("nope") == 0);
  const size_t n = cache->invalidate_tag("even");
  CHECK(n == 49);  // 50 even keys, minus k0 which lost the tag
  CHECK(cache->size() == 51);
  for (int i = 0; i < 100; ++i) CHECK(cache->contains(absl::StrCat("k", i)) == (i % 2 != 0 || i == 0));
  removed.erase(std::remove_if(removed.begin(), removed.end(),
                               [](const Removal& r) { return r.cause == RemovalCause::kReplaced; }),
                removed.end());
  CHECK(removed.size() == 49);
  for (const auto& r : removed) CHECK(r.cause == RemovalCause::kTag);
  CHECK(cache->invalidate_tag("three") == 18);  // the odd multiples of 3 (3, 9, ..., 99) plus k0
  CHECK(cache->invalidate_tag("three") == 0);
  CHECK(cache->stats().invalidations == 67);
}

TEST_CASE("Cache: warm_up loads the k most frequent keys, ties by first sight", "[cache][cache-core][warmup]") {
  auto cache = make(entries(100));
  const std::vector<std::string> log = {"a", "b", "a", "c", "b", "a", "d", "e", "d", "x", "e"};
  std::vector<std::string> loaded;
  const StrCache::Loader loader = [&](const std::string& k) -> StatusOr<std::string> {
    loaded.push_back(k);
    if (k == "e") return absl::UnavailableError("backend down");
    return "v:" + k;
  };
  // a:3, b:2, d:2, e:2 (first seen after d), c:1, x:1.
  CHECK(cache->warm_up(std::span<const std::string>(log), 3, loader) == 3);
  CHECK(loaded == std::vector<std::string>{"a", "b", "d"});
  CHECK(cache->size() == 3);
  CHECK(cache->stats().hits + cache->stats().misses == 0);  // warm-up is not traffic
  CHECK(cache->stats().loads == 3);

  loaded.clear();
  CHECK(cache->warm_up(std::span<const std::string>(log), 5, loader) == 1);  // a, b, d already there; e fails
  CHECK(loaded == std::vector<std::string>{"e", "c"});
  CHECK(cache->get("c") == std::optional<std::string>("v:c"));
  CHECK_FALSE(cache->contains("e"));
  CHECK(cache->warm_up(std::span<const std::string>(log), 0, loader) == 0);
  CHECK(cache->warm_up(std::span<const std::string>(), 3, loader) == 0);
}

TEST_CASE("Cache: get_or_load statistics and load time", "[cache][cache-core]") {
  auto clock = std::make_shared<ManualClock>();
  auto o = entries(100);
  o.clock = clock;
  auto cache = make(o);
  int calls = 0;
  const StrCache::Loader loader = [&](const std::string& k) -> StatusOr<std::string> {
    ++calls;
    clock->advance(3ms);  // the load takes 3 ms on the cache's clock
    if (k == "bad") return absl::NotFoundError("no such key");
    return "v:" + k;
  };
  CHECK(*cache->get_or_load("a", loader) == "v:a");
  CHECK(*cache->get_or_load("a", loader) == "v:a");
  const auto bad = cache->get_or_load("bad", loader);
  CHECK(bad.status().code() == absl::StatusCode::kNotFound);
  CHECK_FALSE(cache->contains("bad"));  // errors are not cached
  CHECK(cache->get_or_load("bad", loader).status().code() == absl::StatusCode::kNotFound);
  const CacheStats st = cache->stats();
  CHECK(calls == 3);
  CHECK(st.loads == 3);
  CHECK(st.load_failures == 2);
  CHECK(st.load_ns == 9'000'000);
  CHECK(st.hits == 1);
  CHECK(st.misses == 3);

  // A loader that throws becomes INTERNAL, and nothing is cached.
  const auto thrown =
      cache->get_or_load("t", [](const std::string&) -> StatusOr<std::string> { throw std::runtime_error("boom"); });
  CHECK(thrown.status().code() == absl::StatusCode::kInternal);
  CHECK_THAT(std::string(thrown.status().message()), Catch::Contains("boom"));
  CHECK(cache->stats().load_failures == 3);
  CHECK(*cache->get_or_load("t", loader) == "v:t");  // and the key is not stuck

  // A loader that re-enters get_or_load for its own key gets an error, not a deadlock.
  StrCache* c = cache.get();
  StrCache::Loader recursive = [&](const std::string& k) -> StatusOr<std::string> {
    auto inner = c->get_or_load(k, loader);
    if (inner.ok()) return std::string("unexpected");
    return inner.status();
  };
  CHECK(cache->get_or_load("r", recursive).status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("Cache: on_removal reports every cause and may call the cache", "[cache][cache-core]") {
  auto clock = std::make_shared<ManualClock>();
  std::map<RemovalCause, int> causes;
  StrCache* self = nullptr;
  size_t size_seen_in_callback = 0;
  auto o = entries(2);
  o.clock = clock;
  o.policy = EvictionPolicy::kLru;
  o.on_removal = [&](const std::string&, const std::string&, RemovalCause c) {
    ++causes[c];
    size_seen_in_callback = self->size();  // no lock is held: this must not deadlock
  };
  auto cache = make(o);
  self = cache.get();
  cache->put("a", "1", {.ttl = Duration{0}, .tags = {"t"}});
  cache->put("a", "2", {.ttl = Duration{0}, .tags = {"t"}});  // kReplaced
  cache->put("b", "1");
  cache->put("c", "1");                // kSize: a is the LRU
  cache->put("d", "1", with_ttl(1s));  // kSize: b
  clock->advance(1s);
  cache->cleanup();  // kExpired: d
  cache->put("e", "1", {.ttl = Duration{0}, .tags = {"t"}});
  CHECK(cache->invalidate_tag("t") == 1);  // kTag: e
  CHECK(cache->invalidate("c"));           // kExplicit
  CHECK(causes[RemovalCause::kReplaced] == 1);
  CHECK(causes[RemovalCause::kSize] == 2);
  CHECK(causes[RemovalCause::kExpired] == 1);
  CHECK(causes[RemovalCause::kTag] == 1);
  CHECK(causes[RemovalCause::kExplicit] == 1);
  CHECK(size_seen_in_callback == 0);
  const CacheStats st = cache->stats();
  CHECK(st.evictions == 2);
  CHECK(st.evicted_weight == 2);
  CHECK(st.expirations == 1);
  CHECK(st.invalidations == 2);
}
