// brisk::cache::Cache under threads: single-flight loading, errors and exceptions shared by every waiter,
// XFetch refresh-ahead, a mixed stress with invariant checks (run under TSan and ASan too), and lock-free hits: a hit
// completes while another thread holds every shard mutex, the hits it recorded reach the policy before the next
// write, expired entries are still never returned; the epoch scheme (internal/epoch.h) frees nothing a reader may
// hold; the node table (internal/node_table.h) against std::map.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
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
using brisk::StatusOr;
using namespace brisk::cache;
using namespace std::chrono_literals;

namespace {

using IntCache = Cache<uint64_t, uint64_t>;

std::unique_ptr<IntCache> make(CacheOptions<uint64_t, uint64_t> o) {
  auto c = IntCache::create(std::move(o));
  REQUIRE(c.ok());
  return std::move(*c);
}

CacheOptions<uint64_t, uint64_t> entries(size_t n, int shards) {
  CacheOptions<uint64_t, uint64_t> o;
  o.max_entries = n;
  o.shards = shards;
  o.seed = 3;
  return o;
}

// Waits (polling, bounded by a generous real-time limit so a bug fails instead of hanging) until pred holds.
template <typename Pred>
bool wait_for(Pred pred, std::chrono::seconds limit = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(200us);
  }
  return true;
}

// Runs n threads that all call get_or_load(key, loader) at once; returns their results.
std::vector<StatusOr<uint64_t>> load_together(IntCache& cache, uint64_t key, const IntCache::Loader& loader, int n) {
  std::vector<StatusOr<uint64_t>> results(n);
  std::latch start(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      results[i] = cache.get_or_load(key, loader);
    });
  }
  for (auto& t : threads) t.join();
  return results;
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

TEST_CASE("Cache: 64 concurrent misses on one key load it once", "[cache][cache-core][singleflight]") {
  auto cache = make(entries(1000, 4));
  std::atomic<int> calls{0};
  bool all_missed = false;
  const IntCache::Loader loader = [&](const uint64_t& k) -> StatusOr<uint64_t> {
    ++calls;
    // Hold the load until all 64 callers have missed, so they really overlap.
    all_missed = wait_for([&] { return cache->stats().misses == 64; });
    return k * 10;
  };
  const auto results = load_together(*cache, 7, loader, 64);
  CHECK(all_missed);
  CHECK(calls == 1);
  for (const auto& r : results) {
    REQUIRE(r.ok());
    CHECK(*r == 70);
  }
  const CacheStats st = cache->stats();
  CHECK(st.loads == 1);
  CHECK(st.misses == 64);
  CHECK(cache->get(7) == std::optional<uint64_t>(70));
}

TEST_CASE("Cache: a loader error reaches every waiter and is not cached", "[cache][cache-core][singleflight]") {
  auto cache = make(entries(1000, 4));
  std::atomic<int> calls{0};
  const IntCache::Loader failing = [&](const uint64_t&) -> StatusOr<uint64_t> {
    ++calls;
    wait_for([&] { return cache->stats().misses >= 16; });
    return absl::UnavailableError("backend down");
  };
  auto results = load_together(*cache, 1, failing, 16);
  CHECK(calls == 1);
  for (const auto& r : results) {
    CHECK(r.status().code() == absl::StatusCode::kUnavailable);
    CHECK(r.status().message() == "backend down");
  }
  CHECK_FALSE(cache->contains(1));
  CHECK(cache->stats().load_failures == 1);

  // A throwing loader: every waiter gets INTERNAL and nobody deadlocks.
  calls = 0;
  const IntCache::Loader throwing = [&](const uint64_t&) -> StatusOr<uint64_t> {
    ++calls;
    wait_for([&] { return cache->stats().misses >= 32; });
    throw std::runtime_error("loader exploded");
  };
  results = load_together(*cache, 1, throwing, 16);
  CHECK(calls == 1);
  for (const auto& r : results) {
    CHECK(r.status().code() == absl::StatusCode::kInternal);
    CHECK_THAT(std::string(r.status().message()), Catch::Contains("loader exploded"));
  }
  CHECK_FALSE(cache->contains(1));
  // The key is not stuck: the next load works.
  CHECK(*cache->get_or_load(1, [](const uint64_t& k) -> StatusOr<uint64_t> { return k; }) == 1);
}

TEST_CASE("Cache: an invalidation during a load keeps the loaded value out", "[cache][cache-core][singleflight]") {
  auto cache = make(entries(100, 1));
  std::latch loading(1), release(1);
  StatusOr<uint64_t> r;
  std::thread loader_thread([&] {
    r = cache->get_or_load(5, [&](const uint64_t&) -> StatusOr<uint64_t> {
      loading.count_down();
      release.wait();
      return 1;  // computed from data that the invalidation declared stale
    });
  });
  loading.wait();
  CHECK_FALSE(cache->invalidate(5));
  release.count_down();
  loader_thread.join();
  CHECK(*r == 1);  // the caller still gets what it asked for
  CHECK_FALSE(cache->contains(5));
}

TEST_CASE("Cache: a get_or_load after an invalidation loads afresh instead of joining the withdrawn load",
          "[cache][cache-core][singleflight]") {
  auto cache = make(entries(100, 1));
  std::latch loading(1), release(1);
  StatusOr<uint64_t> first;
  std::thread loader_thread([&] {
    first = cache->get_or_load(5, [&](const uint64_t&) -> StatusOr<uint64_t> {
      loading.count_down();
      release.wait();
      return 1;  // computed from the data the invalidation withdrew
    });
  });
  loading.wait();
  SECTION("invalidate") { cache->invalidate(5); }
  SECTION("invalidate_all") { cache->invalidate_all(); }
  // A caller arriving after the invalidation must not wait for, nor get, the withdrawn load's value. Asked on its
  // own thread: joining the old load would block until release.
  auto second = std::async(std::launch::async, [&] {
    return cache->get_or_load(5, [](const uint64_t&) -> StatusOr<uint64_t> { return 2; });
  });
  const bool answered = second.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  release.count_down();
  loader_thread.join();
  CHECK(answered);
  const StatusOr<uint64_t> fresh = second.get();
  REQUIRE(fresh.ok());
  CHECK(*fresh == 2);
  CHECK(*first == 1);                                  // the first caller still gets what it asked for
  CHECK(cache->get(5) == std::optional<uint64_t>(2));  // and only the fresh value is stored
}

TEST_CASE("Cache: XFetch refreshes a hot entry before it expires", "[cache][cache-core][refresh]") {
  auto clock = std::make_shared<ManualClock>();
  auto o = entries(100, 1);
  o.clock = clock;
  o.expire_after_write = 10s;
  o.refresh_ahead_beta = 1.0;
  auto cache = make(o);
  uint64_t version = 0;
  const IntCache::Loader loader = [&](const uint64_t&) -> StatusOr<uint64_t> {
    clock->advance(1s);  // delta = 1 s
    return ++version;
  };
  REQUIRE(*cache->get_or_load(1, loader) == 1);  // written at t0 + 1 s, deadline t0 + 11 s
  // 9 s before the deadline a refresh needs U <= e^-9: practically never.
  for (int i = 0; i < 100; ++i) CHECK(*cache->get_or_load(1, loader) == 1);
  CHECK(cache->stats().refreshes == 0);
  // 0.2 s before the deadline each hit refreshes with probability e^-0.2 = 82%.
  clock->advance(9800ms);
  uint64_t seen = 1;
  for (int i = 0; i < 20 && seen == 1; ++i) seen = *cache->get_or_load(1, loader);
  CHECK(seen == 2);
  CHECK(cache->stats().refreshes == 1);
  CHECK(cache->stats().loads == 2);
  // The refreshed entry has a new deadline, 10 s after its reload.
  clock->advance(5s);
  CHECK(cache->get(1) == std::optional<uint64_t>(2));
  // get() never refreshes; puts have no load time, so they are never refreshed early.
  cache->put(2, 100);
  clock->advance(9900ms);
  for (int i = 0; i < 50; ++i) CHECK(*cache->get_or_load(2, loader) == 100);
}

TEST_CASE("Cache: during a refresh other callers keep the current value", "[cache][cache-core][refresh]") {
  auto clock = std::make_shared<ManualClock>();
  auto o = entries(100, 1);
  o.clock = clock;
  o.expire_after_write = 10s;
  o.refresh_ahead_beta = 1e6;  // with delta = 1 s every hit in the last ~1e6 s refreshes: certain
  auto cache = make(o);
  REQUIRE(*cache->get_or_load(1, [&](const uint64_t&) -> StatusOr<uint64_t> {
    clock->advance(1s);
    return 1;
  }) == 1);
  std::latch refreshing(1), release(1);
  std::atomic<int> calls{0};
  StatusOr<uint64_t> refreshed;
  std::thread refresher([&] {
    refreshed = cache->get_or_load(1, [&](const uint64_t&) -> StatusOr<uint64_t> {
      ++calls;
      refreshing.count_down();
      release.wait();
      return 2;
    });
  });
  refreshing.wait();
  // While the refresh runs, other callers get the current value at once and do not reload.
  for (int i = 0; i < 10; ++i) {
    CHECK(*cache->get_or_load(1, [&](const uint64_t&) -> StatusOr<uint64_t> {
      ++calls;
      return 99;
    }) == 1);
  }
  release.count_down();
  refresher.join();
  CHECK(*refreshed == 2);
  CHECK(calls == 1);
  CHECK(cache->get(1) == std::optional<uint64_t>(2));

  // A failed refresh keeps the current (unexpired) value for the refresher too.
  const auto r =
      cache->get_or_load(1, [](const uint64_t&) -> StatusOr<uint64_t> { return absl::UnavailableError("down"); });
  CHECK(*r == 2);
  CHECK(cache->get(1) == std::optional<uint64_t>(2));
}

TEST_CASE("Cache: 8-thread stress keeps every invariant", "[cache][cache-core][stress]") {
  // beta 0: get_or_load hits are lock-free too (refresh-ahead reads under the lock).
  for (const auto& [policy, beta] : {std::pair{EvictionPolicy::kWTinyLfu, 1.0}, std::pair{EvictionPolicy::kLru, 1.0},
                                     std::pair{EvictionPolicy::kWTinyLfu, 0.0}}) {
    CAPTURE(static_cast<int>(policy), beta);
    auto clock = std::make_shared<ManualClock>();
    std::mutex causes_mu;
    std::map<RemovalCause, uint64_t> causes;
    std::map<RemovalCause, uint64_t> cause_weight;
    CacheOptions<uint64_t, uint64_t> o;
    o.max_weight = 3000;
    o.shards = 4;
    o.policy = policy;
    o.clock = clock;
    o.expire_after_write = 50ms;
    o.refresh_ahead_beta = beta;
    o.seed = 17;
    // Values encode their key: value = key * 1000 + weight.
    o.weigher = [](const uint64_t&, const uint64_t& v) { return v % 1000; };
    std::atomic<bool> bad_removal{false};
    o.on_removal = [&](const uint64_t& k, const uint64_t& v, RemovalCause c) {
      if (v / 1000 != k) bad_removal = true;  // Catch2 assertions are not thread-safe: check after the join
      std::lock_guard<std::mutex> l(causes_mu);
      ++causes[c];
      cause_weight[c] += v % 1000;
    };
    auto cache = make(o);
    std::atomic<uint64_t> lookups{0}, loader_calls{0};
    std::atomic<bool> bad_value{false}, over_weight{false};
    const int kThreads = 8;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    const int kOps = 4000;
#else
    const int kOps = 25000;
#endif
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(100 + t);
        start.arrive_and_wait();
        for (int i = 0; i < kOps; ++i) {
          const uint64_t key = rng() % 400;
          const uint64_t w = 1 + rng() % 40;
          const uint32_t op = rng() % 100;
          if (op < 40) {
            ++lookups;
            if (auto v = cache->get(key); v && *v / 1000 != key) bad_value = true;
          } else if (op < 60) {
            PutOptions p;
            if (rng() % 4 == 0) p.tags = {absl::StrCat("t", key % 5)};
            if (rng() % 4 == 0) p.ttl = std::chrono::milliseconds(1 + rng() % 20);
            cache->put(key, key * 1000 + w, p);
          } else if (op < 85) {
            ++lookups;
            auto r = cache->get_or_load(key, [&](const uint64_t& k) -> StatusOr<uint64_t> {
              ++loader_calls;
              if (k % 13 == 0) return absl::NotFoundError("no");
              if (k % 17 == 0) throw std::runtime_error("thrown");
              return k * 1000 + 1 + k % 40;
            });
            if (r.ok() && *r / 1000 != key) bad_value = true;
          } else if (op < 95) {
            cache->invalidate(key);
          } else if (op < 97) {
            cache->invalidate_tag(absl::StrCat("t", rng() % 5));
          } else if (op < 98) {
            if (rng() % 8 == 0) {
              cache->invalidate_all();  // while other threads read lock-free
            } else {
              cache->cleanup();
            }
          } else if (t == 0) {
            clock->advance(1ms);  // expiry and refresh-ahead happen during the run
          } else {
            if (cache->weight() > 3000) over_weight = true;
            const CacheStats st = cache->stats();
            if (st.weight > 3000) over_weight = true;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    cache->cleanup();  // shards untouched since the last clock advance may still hold expired entries
    CHECK_FALSE(bad_value);
    CHECK_FALSE(bad_removal);
    CHECK_FALSE(over_weight);
    const CacheStats st = cache->stats();
    CHECK(st.weight <= 3000);
    CHECK(st.hits + st.misses == lookups.load());
    CHECK(st.loads == loader_calls.load());
    CHECK(st.load_failures > 0);
    std::lock_guard<std::mutex> l(causes_mu);
    CHECK(st.evictions == causes[RemovalCause::kSize]);
    CHECK(st.evicted_weight == cause_weight[RemovalCause::kSize]);
    CHECK(st.expirations == causes[RemovalCause::kExpired]);
    CHECK(st.invalidations == causes[RemovalCause::kExplicit] + causes[RemovalCause::kTag]);
    CHECK(st.expirations > 0);
    CHECK(st.evictions > 0);
    // The entries left are exactly those the cache reports, with the weight it reports.
    uint64_t n = 0, weight = 0;
    for (uint64_t k = 0; k < 400; ++k) {
      if (auto v = cache->get(k)) {
        ++n;
        weight += *v % 1000;
      }
    }
    CHECK(n == st.entries);
    CHECK(weight == st.weight);
  }
}

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
