// Google Benchmark programs for brisk::cache::Cache: get (hit), get (miss) and put, W-TinyLFU against LRU, on
// one and two threads sharing one cache (automatic shard count).
//
//   brisk_cache_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "brisk/cache/cache.h"

namespace {

using brisk::cache::Cache;
using brisk::cache::CacheOptions;
using brisk::cache::EvictionPolicy;
using IntCache = Cache<uint64_t, uint64_t>;

constexpr size_t kCapacity = 100'000;
constexpr uint64_t kResident = 50'000;  // keys 0..kResident-1 are cached before the hit benchmarks run
constexpr size_t kKeys = 1 << 16;       // per-thread key sequence (a power of two, indexed by a mask)

std::unique_ptr<IntCache> make_cache(EvictionPolicy policy) {
  CacheOptions<uint64_t, uint64_t> o;
  o.max_entries = kCapacity;
  o.policy = policy;
  o.seed = 1;
  return std::move(*IntCache::create(o));
}

// One shared, pre-filled cache per policy for the read benchmarks (threads of one benchmark share it).
IntCache& read_cache(EvictionPolicy policy) {
  static std::once_flag once[2];
  static std::unique_ptr<IntCache> caches[2];
  const int i = policy == EvictionPolicy::kLru ? 1 : 0;
  std::call_once(once[i], [&] {
    caches[i] = make_cache(policy);
    for (uint64_t k = 0; k < kResident; ++k) caches[i]->put(k, k);
  });
  return *caches[i];
}

std::vector<uint64_t> keys(uint64_t seed, uint64_t lo, uint64_t hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> d(lo, hi - 1);
  std::vector<uint64_t> v(kKeys);
  for (auto& k : v) k = d(rng);
  return v;
}

void BM_GetHit(benchmark::State& state, EvictionPolicy policy) {
  IntCache& cache = read_cache(policy);
  const auto ks = keys(1 + state.thread_index(), 0, kResident);
  size_t i = 0;
  uint64_t found = 0;
  for (auto _ : state) {
    auto v = cache.get(ks[i++ & (kKeys - 1)]);
    found += v.has_value();
    benchmark::DoNotOptimize(v);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["hit_ratio"] = benchmark::Counter(static_cast<double>(found) / static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kAvgThreads);
}

void BM_GetMiss(benchmark::State& state, EvictionPolicy policy) {
  IntCache& cache = read_cache(policy);
  const auto ks = keys(100 + state.thread_index(), 1ULL << 40, (1ULL << 40) + 1'000'000);
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(cache.get(ks[i++ & (kKeys - 1)]));
  state.SetItemsProcessed(state.iterations());
}

// Puts over a key space 10x the capacity: most puts insert and evict.
void BM_Put(benchmark::State& state, EvictionPolicy policy) {
  static std::mutex mu;
  static std::unique_ptr<IntCache> cache;
  if (state.thread_index() == 0) {
    std::lock_guard<std::mutex> l(mu);
    cache = make_cache(policy);
  }
  const auto ks = keys(200 + state.thread_index(), 0, 10 * kCapacity);
  size_t i = 0;
  for (auto _ : state) {  // the first iteration starts after every thread's setup (a barrier)
    const uint64_t k = ks[i++ & (kKeys - 1)];
    cache->put(k, k);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_CAPTURE(BM_GetHit, wtinylfu, EvictionPolicy::kWTinyLfu)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_GetHit, lru, EvictionPolicy::kLru)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_GetMiss, wtinylfu, EvictionPolicy::kWTinyLfu)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_GetMiss, lru, EvictionPolicy::kLru)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_Put, wtinylfu, EvictionPolicy::kWTinyLfu)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_Put, lru, EvictionPolicy::kLru)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
