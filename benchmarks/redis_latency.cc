// The Redis tier's latencies on loopback against a private redis-server (started like the tests do):
// RedisTier get/set, TieredCache L2 hits with backfill, puts through the write-behind queue, and gets while the
// server is stalled (SIGSTOP: the first calls time out, then the circuit breaker answers at once).
//
//   build/release/benchmarks/brisk_redis_latency        # medians, p99 and max per call, n = 20000
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "brisk/core/stats.h"
#include "brisk/cache/tiered_cache.h"
#include "cache/redis_server.h"

namespace {

using namespace brisk::cache;
using namespace std::chrono_literals;
using Embeddings = TieredCache<std::vector<float>, FloatVectorCodec>;

// Microseconds per call of f(i) for i in [0, n).
template <typename F>
std::vector<double> measure(int n, F&& f) {
  std::vector<double> us;
  us.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f(i);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return us;
}

void report(const char* what, const std::vector<double>& us) {
  std::printf("%-62s median %8.1f us  p99 %8.1f us  max %8.1f us  (n=%zu)\n", what, brisk::percentile(us, 50),
              brisk::percentile(us, 99), brisk::percentile(us, 100), us.size());
}

std::string key(int i) { return "k" + std::to_string(i); }

}  // namespace

int main() {
  brisk::testing::RedisServer server;
  if (!server.ok()) {
    std::fprintf(stderr, "brisk_redis_latency: could not start redis-server (run scripts/setup)\n");
    return 1;
  }
  RedisOptions redis;
  redis.port = server.port();
  auto tier = RedisTier::create(redis);
  if (!tier.ok()) return 1;
  // About an embedding in its envelope: 384 floats and 32 bytes more. The v2 envelope adds a 40-byte header, the
  // Redis key (about 80 bytes) and, when signed, a 32-byte MAC; the size stays as it was so that RESULTS.md's
  // rows stay comparable (a hundred bytes more do not change a loopback round trip measurably).
  const std::string bytes(384 * 4 + 32, 'x');
  (void)(*tier)->set("hot", bytes, 60s);
  constexpr int n = 20000;
  report("RedisTier::get, 1568-byte hit", measure(n, [&](int) { (void)(*tier)->get("hot"); }));
  report("RedisTier::get_with_ttl, 1568-byte hit (GET + PTTL pipelined)",
         measure(n, [&](int) { (void)(*tier)->get_with_ttl("hot"); }));
  report("RedisTier::get, miss", measure(n, [&](int) { (void)(*tier)->get("absent"); }));
  const std::vector<std::string> tags = {"kb"};
  report("RedisTier::set, 1568 bytes + 1 tag (5 commands pipelined)",
         measure(n, [&](int i) { (void)(*tier)->set(key(i % 1000), bytes, 60s, tags); }));

  TieredCacheOptions<std::vector<float>> options;
  options.l1.max_entries = 10;  // over 1000 keys: nearly every get below is an L2 hit + decode + backfill
  options.l1.shards = 1;
  options.model = "m";
  options.default_ttl = 60s;
  options.l2 = redis;
  auto writer = Embeddings::create(options);
  auto reader = Embeddings::create(options);
  if (!writer.ok() || !reader.ok()) return 1;
  const std::vector<float> embedding(384, 0.5f);
  for (int i = 0; i < 1000; ++i) (*writer)->put("t", key(i), embedding);
  (*writer)->flush(10s);
  report("TieredCache::get, L2 hit (384 floats, decode, backfill)",
         measure(n, [&](int i) { (void)(*reader)->get("t", key((i * 7919) % 1000)); }));
  report("TieredCache::put (L1 + write-behind enqueue)",
         measure(n, [&](int i) { (*writer)->put("t", "p" + std::to_string(i % 1000), embedding); }));
  (*writer)->flush(10s);

  server.pause();
  report("TieredCache::get, server stalled (timeouts, then breaker open)",
         measure(2000, [&](int i) { (void)(*reader)->get("t", key((i * 7919) % 1000)); }));
  const TieredCacheStats s = (*reader)->stats();
  std::printf("  during the stall: %llu timeouts, %llu calls short-circuited, breaker opened %llu times\n",
              static_cast<unsigned long long>(s.redis.timeouts),
              static_cast<unsigned long long>(s.redis.short_circuited),
              static_cast<unsigned long long>(s.redis.breaker_opens));
  server.resume();
  return 0;
}
