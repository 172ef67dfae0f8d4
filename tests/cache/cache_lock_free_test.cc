// brisk::cache::Cache's lock-free hits: a hit completes while another thread holds every shard mutex, the hits it
// recorded reach the policy before the next write, expired entries are still never returned; the epoch scheme
// (internal/epoch.h) frees nothing a reader may hold; the node table (internal/node_table.h) against std::map.
// The concurrent stress with invariant checks is in cache_concurrency_test.cc (run under TSan and ASan too).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "brisk/cache/cache.h"
#include "brisk/cache/internal/epoch.h"
#include "brisk/cache/internal/node_table.h"
#include "brisk/core/clock.h"

namespace brisk::cache::internal {

// Holds every shard mutex of a cache, as a writer in the middle of a long operation would.
struct CacheTestAccess {
  template <typename C>
  static std::vector<std::unique_lock<std::mutex>> lock_all_shards(C& cache) {
    std::vector<std::unique_lock<std::mutex>> locks;
    for (auto& s : cache.slots_) locks.emplace_back(s->mu);
    return locks;
  }
};

}  // namespace brisk::cache::internal

using brisk::ManualClock;
using namespace brisk::cache;
using namespace std::chrono_literals;

namespace {

using IntCache = Cache<uint64_t, uint64_t>;

std::unique_ptr<IntCache> make(CacheOptions<uint64_t, uint64_t> o) {
  auto c = IntCache::create(std::move(o));
  REQUIRE(c.ok());
  return std::move(*c);
}

// Runs f on a thread that holds every shard mutex of `cache` meanwhile; returns f's result, or nothing when f did
// not finish within 5 s (it waited for a lock).
template <typename F>
auto while_shards_locked(IntCache& cache, F f) -> std::optional<decltype(f())> {
  std::promise<void> locked, release;
  std::thread holder([&] {
    auto locks = internal::CacheTestAccess::lock_all_shards(cache);
    locked.set_value();
    release.get_future().wait();
  });
  locked.get_future().wait();
  auto result = std::async(std::launch::async, f);
  std::optional<decltype(f())> out;
  const bool finished = result.wait_for(5s) == std::future_status::ready;
  if (finished) out = result.get();
  release.set_value();
  holder.join();
  if (!finished) result.get();  // the locks are gone: let it finish, and report that it had to wait
  return out;
}

}  // namespace

TEST_CASE("Cache: a hit completes while another thread holds every shard mutex", "[cache][cache-core][lock-free]") {
  for (const auto policy : {EvictionPolicy::kWTinyLfu, EvictionPolicy::kLru}) {
    CAPTURE(static_cast<int>(policy));
    CacheOptions<uint64_t, uint64_t> o;
    o.max_entries = 64;
    o.shards = 2;
    o.policy = policy;
    o.seed = 1;
    auto cache = make(o);
    for (uint64_t k = 0; k < 8; ++k) cache->put(k, 100 + k);
    std::atomic<bool> done{false};
    auto hits = while_shards_locked(*cache, [&] {
      uint64_t sum = 0;
      for (int round = 0; round < 50; ++round) {  // enough to fill read-buffer stripes: drains must not wait either
        for (uint64_t k = 0; k < 8; ++k) sum += cache->get(k).value_or(0);
        for (uint64_t k = 0; k < 8; ++k) {
          auto v = cache->get_or_load(k, [](const uint64_t&) -> brisk::StatusOr<uint64_t> { return 0; });
          sum += v.ok() ? *v : 0;
        }
      }
      done = true;
      return sum;
    });
    REQUIRE(hits.has_value());
    CHECK(*hits == 50 * 2 * (8 * 100 + 28));
    CHECK(cache->stats().hits == 50 * 16);
    CHECK(cache->stats().misses == 0);
  }
}

TEST_CASE("Cache: a miss still takes the shard mutex", "[cache][cache-core][lock-free]") {
  // The contrast that shows the test above can fail: the same helper reports a call that had to wait.
  CacheOptions<uint64_t, uint64_t> o;
  o.max_entries = 64;
  o.shards = 1;
  auto cache = make(o);
  std::atomic<int> phase{0};
  std::thread waiter;
  auto locks = internal::CacheTestAccess::lock_all_shards(*cache);
  waiter = std::thread([&] {
    phase = 1;
    cache->get(42);  // blocks until the locks are released
    phase = 2;
  });
  while (phase.load() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(50ms);
  CHECK(phase.load() == 1);
  locks.clear();
  waiter.join();
  CHECK(phase.load() == 2);
  CHECK(cache->stats().misses == 1);
}

TEST_CASE("Cache: hits served without the lock reach the policy before the next write",
          "[cache][cache-core][lock-free]") {
  // LRU of 3: reading 0 and 1 (lock-free, recorded) makes 2 the least recent, so the next put evicts 2.
  CacheOptions<uint64_t, uint64_t> o;
  o.max_entries = 3;
  o.shards = 1;
  o.policy = EvictionPolicy::kLru;
  auto cache = make(o);
  for (uint64_t k = 0; k < 3; ++k) cache->put(k, k);
  auto hits = while_shards_locked(*cache, [&] { return cache->get(0).has_value() && cache->get(1).has_value(); });
  REQUIRE(hits.has_value());
  CHECK(*hits);
  cache->put(3, 3);
  CHECK(cache->contains(0));
  CHECK(cache->contains(1));
  CHECK_FALSE(cache->contains(2));
  CHECK(cache->contains(3));

  // W-TinyLFU: 20 lock-free hits on key 7 promote it to the protected segment, so a scan of keys read twice each
  // (frequency 2, above the 1 key 7 would have without its hits) does not evict it.
  CacheOptions<uint64_t, uint64_t> t;
  t.max_entries = 200;
  t.shards = 1;
  t.seed = 2;
  auto tiny = make(t);
  for (uint64_t k = 0; k < 200; ++k) tiny->put(k, k);
  for (int i = 0; i < 20; ++i) REQUIRE(tiny->get(7).has_value());
  for (uint64_t k = 1000; k < 1400; ++k) {
    tiny->put(k, k);
    REQUIRE(tiny->get(k).has_value());
  }
  CHECK(tiny->contains(7));
  CHECK_FALSE(tiny->contains(8));  // its neighbour, never read, was evicted by the scan
}

TEST_CASE("Cache: a lock-free hit never returns an expired entry", "[cache][cache-core][lock-free][expiry]") {
  auto clock = std::make_shared<ManualClock>();
  CacheOptions<uint64_t, uint64_t> o;
  o.max_entries = 16;
  o.shards = 1;
  o.clock = clock;
  o.expire_after_write = 10ms;
  auto cache = make(o);
  cache->put(1, 11);
  cache->put(2, 22, {.ttl = 30ms, .tags = {}});
  clock->advance(9ms);
  auto before = while_shards_locked(*cache, [&] { return cache->get(1).value_or(0) + cache->get(2).value_or(0); });
  REQUIRE(before.has_value());
  CHECK(*before == 33);
  clock->advance(1ms);  // key 1 expires now (written at t, gone from t + 10 ms on)
  CHECK_FALSE(cache->get(1).has_value());
  CHECK(cache->get(2) == 22);
  cache->put(2, 23);  // replaced: the new value takes expire_after_write, 10 ms from now
  CHECK(cache->get(2) == 23);
  clock->advance(10ms);
  CHECK_FALSE(cache->get(2).has_value());
}

TEST_CASE("EpochDomain: a retired object is freed only after every reader that could hold it has left",
          "[cache][cache-core][lock-free][epoch]") {
  std::atomic<int> freed{0};
  static std::atomic<int>* counter = nullptr;
  counter = &freed;
  internal::RetireList list;
  std::promise<void> entered, leave;
  std::thread reader([&] {
    internal::EpochGuard guard;
    entered.set_value();
    leave.get_future().wait();
  });
  entered.get_future().wait();
  for (int i = 0; i < 3 * static_cast<int>(internal::RetireList::kCollectEvery); ++i) {
    list.retire(new int(i), [](void* p) {
      delete static_cast<int*>(p);
      counter->fetch_add(1);
    });
  }
  list.collect();
  CHECK(freed.load() == 0);  // the reader entered before any of them was retired
  CHECK(list.pending() == 3 * internal::RetireList::kCollectEvery);
  leave.set_value();
  reader.join();
  list.collect();
  CHECK(freed.load() == static_cast<int>(3 * internal::RetireList::kCollectEvery));
  CHECK(list.pending() == 0);

  // A guard entered after the retirement holds it back only while it lasts.
  list.retire(new int(0), [](void* p) {
    delete static_cast<int*>(p);
    counter->fetch_add(1);
  });
  {
    internal::EpochGuard late;  // this thread, inside a guard, announces the current epoch
    list.collect();
    CHECK(list.pending() == 1);
  }
  list.collect();
  CHECK(list.pending() == 0);
}

TEST_CASE("NodeTable: insert, find and erase match std::map through growth and tombstones",
          "[cache][cache-core][lock-free]") {
  struct alignas(16) N {
    uint64_t hash;
    uint64_t key;
  };
  internal::NodeTable<N> table;
  internal::RetireList retired;
  std::map<uint64_t, std::unique_ptr<N>> ref;
  std::mt19937_64 rng(4);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t key = rng() % 3000;
    // Many keys per hash (find() must compare keys), and hashes that differ only in the tag bits (32..35) too.
    const uint64_t hash = (key % 97 + 1) | ((key % 5) << 32);
    auto same = [&](const N* n) { return n->key == key; };
    N* found = table.find(hash, same);
    auto it = ref.find(key);
    REQUIRE((found != nullptr) == (it != ref.end()));
    if (found != nullptr) REQUIRE(found == it->second.get());
    if (rng() % 3 == 0) {
      if (found != nullptr) {
        table.erase(found);
        ref.erase(it);
      }
    } else if (found == nullptr) {
      auto n = std::make_unique<N>(N{hash, key});
      table.insert(n.get(), retired);
      ref.emplace(key, std::move(n));
    }
    REQUIRE(table.size() == ref.size());
  }
  size_t seen = 0;
  table.for_each([&](N* n) {
    ++seen;
    CHECK(ref.at(n->key).get() == n);
  });
  CHECK(seen == ref.size());
  table.clear(retired);
  CHECK(table.size() == 0);
  CHECK(table.find(1, [](const N*) { return true; }) == nullptr);
}
