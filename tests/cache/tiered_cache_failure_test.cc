// THE FAILURE TEST: several threads run get_or_load / get / put on a key mix through a TieredCache backed by a
// real redis-server while the server is stalled (SIGSTOP), then killed (SIGKILL), then restarted on the same
// port. No request may fail, no call may stay blocked on the stalled or dead server past what the timeout
// contract promises (connect_timeout + command_timeout, plus generous slack for a shared machine under
// sanitizers: this checks that calls are bounded at all, not how fast they are; speed belongs in benchmarks),
// the circuit breaker must open, and L2 hits must come back once the server is back.
#include <catch2/catch.hpp>

#if defined(BRISK_HAVE_REDIS)

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk/cache/tiered_cache.h"
#include "cache/redis_server.h"

using brisk::Duration;
using brisk::StatusOr;
using brisk::cache::CircuitBreaker;
using brisk::cache::RedisOptions;
using brisk::cache::StringCodec;
using brisk::cache::TieredCache;
using brisk::cache::TieredCacheOptions;
using brisk::testing::kBlockingSlack;
using brisk::testing::RedisServer;
using brisk::testing::wait_until;
using namespace std::chrono_literals;

namespace {

using StringCache = TieredCache<std::string, StringCodec>;

std::string expected_value(std::string_view key) { return "value-of-" + std::string(key); }

struct Load {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> calls{0}, failures{0}, wrong{0};
  std::atomic<int64_t> worst_ns{0};

  void record(Duration took) {
    int64_t prev = worst_ns.load();
    while (took.count() > prev && !worst_ns.compare_exchange_weak(prev, took.count())) {
    }
  }
  // Worst call latency since the last reset.
  Duration take_worst() { return Duration(worst_ns.exchange(0)); }
};

void run_load(StringCache& cache, Load& load, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> key_dist(0, 199);
  std::uniform_int_distribution<int> op_dist(0, 9);
  auto loader = [](std::string_view, std::string_view key) -> StatusOr<std::string> { return expected_value(key); };
  while (!load.stop.load()) {
    const std::string key = absl::StrCat("k", key_dist(rng));
    const int op = op_dist(rng);
    const auto t0 = std::chrono::steady_clock::now();
    if (op < 8) {
      StatusOr<std::string> v = cache.get_or_load("tenant", key, loader);
      if (!v.ok()) {
        load.failures.fetch_add(1);
      } else if (*v != expected_value(key)) {
        load.wrong.fetch_add(1);
      }
    } else if (op == 8) {
      std::optional<std::string> v = cache.get("tenant", key);
      if (v.has_value() && *v != expected_value(key)) load.wrong.fetch_add(1);
    } else {
      cache.put("tenant", key, expected_value(key));
    }
    load.record(std::chrono::steady_clock::now() - t0);
    load.calls.fetch_add(1);
  }
}

}  // namespace

TEST_CASE("tiered cache survives a stalled, killed and restarted Redis under load", "[cache][tiered][failure]") {
  RedisServer server;
  REQUIRE(server.ok());
  TieredCacheOptions<std::string> o;
  o.l1.max_entries = 32;  // far fewer than the 200 keys: lookups keep reaching L2
  o.l1.shards = 1;
  o.model = "minilm";
  o.default_ttl = 60s;
  RedisOptions r;
  r.port = server.port();
  r.breaker.open_duration = 300ms;
  o.l2 = r;
  auto created = StringCache::create(o);
  REQUIRE(created.ok());
  StringCache& cache = **created;
  // A call without the timeouts would stay blocked for the whole stall, which lasts longer than this bound.
  const Duration bound = r.connect_timeout + r.command_timeout + kBlockingSlack;

  Load load;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) threads.emplace_back([&, t] { run_load(cache, load, 1000 + t); });
  auto l2_hits_grow = [&](Duration limit) {
    const uint64_t before = cache.stats().l2_hits;
    return wait_until([&] { return cache.stats().l2_hits > before + 20; }, limit);
  };

  // Healthy: L2 serves the keys L1 cannot hold.
  CHECK(l2_hits_grow(10s));
  load.take_worst();  // healthy calls are not timed: that would be a speed assertion

  // Stalled: connections hang; calls time out, the breaker opens and then short-circuits.
  server.pause();
  std::this_thread::sleep_for(1500ms);
  const Duration paused_worst = load.take_worst();
  auto paused = cache.stats();
  CHECK(paused.redis.timeouts >= 1);
  CHECK(paused.redis.breaker_opens >= 1);
  CHECK(paused.redis.short_circuited >= 1);

  // Killed: connections are refused.
  server.kill();
  std::this_thread::sleep_for(800ms);
  const Duration killed_worst = load.take_worst();

  // Back: the breaker's probe succeeds, writes land again and L2 hits return.
  REQUIRE(server.restart());
  const bool recovered = l2_hits_grow(15s);
  load.stop = true;
  for (auto& t : threads) t.join();

  auto s = cache.stats();
  INFO("calls " << load.calls << ", worst ms: paused " << paused_worst.count() / 1e6 << ", killed "
                << killed_worst.count() / 1e6 << "; l2 hits " << s.l2_hits << " errors " << s.l2_errors
                << " breaker opens " << s.redis.breaker_opens << " short-circuited " << s.redis.short_circuited
                << " timeouts " << s.redis.timeouts << " reconnects " << s.redis.reconnects);
  CHECK(recovered);
  CHECK(s.redis.breaker_state == CircuitBreaker::State::kClosed);
  CHECK(load.calls > 100);
  CHECK(load.failures == 0);
  CHECK(load.wrong == 0);
  CHECK(paused_worst < bound);
  CHECK(killed_worst < bound);
  CHECK(s.l2_errors > 0);
  CHECK(s.redis.reconnects >= 1);
  CHECK(wait_until([&] { return cache.stats().redis.subscribed; }, 5s));
}

#endif  // BRISK_HAVE_REDIS
