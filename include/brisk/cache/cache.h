// Cache<K, V, Hash>: brisk's in-process cache. Bounded by entry count or by weight, W-TinyLFU eviction (or plain
// LRU), expiry after write / after access / per entry, tags, single-flight loading with XFetch refresh-ahead,
// hot-key warm-up, statistics and a removal callback. The policy of one shard is in internal/wtinylfu_shard.h, the
// frequency sketch in internal/frequency_sketch.h, the adaptive window in internal/hill_climber.h, the lock-free
// read path in internal/node_table.h, internal/read_buffer.h and internal/epoch.h.
//
//   CacheOptions<std::string, Answer> opts;
//   opts.max_entries = 100'000;
//   opts.expire_after_write = std::chrono::minutes(10);
//   BRISK_ASSIGN_OR_RETURN(auto cache, (Cache<std::string, Answer>::create(opts)));
//   cache->put("q:hello", answer, {.tags = {"faq-v1"}});
//   StatusOr<Answer> a = cache->get_or_load("q:bye", [&](const std::string& k) { return compute(k); });
//   cache->invalidate_tag("faq-v1");                 // the knowledge changed
//
// Sharding: the cache is split by key hash into a power-of-two number of shards, each with its own mutex, its
// own frequency sketch and its own share of the capacity: a shard holds at most capacity / shards (the
// remainder goes to the first shards), so the policy is exact per shard and approximate for the whole. An entry
// heavier than its shard's share (max_weight / shards) is not stored. Automatic sharding (shards = 0) picks
// min(next_pow2(4 x hardware threads), floor_pow2(capacity / 64)), at least 1, so each shard keeps >= 64
// entries (for max_weight, capacity is max_weight: set shards yourself when entries are heavy). Small caches
// therefore get 1 shard; simulations that compare policies should set shards = 1.
//
// Expiry: an entry written at t with ttl T (PutOptions::ttl, else expire_after_write) is gone from t + T on;
// with expire_after_access A it is gone A after its last read or write. Expired entries are never returned;
// they are reclaimed when their shard is next used and by cleanup() (no background thread).
//
// Loading: get_or_load() calls the loader once per key however many callers miss together (the others wait
// and get the same result or error; errors are not cached). A loader that throws is reported as INTERNAL. A
// put(), invalidate() or invalidate_tag() of the key while its load runs wins: the loaded value is returned to
// the callers already waiting but not stored, and a get_or_load() after it starts a fresh load. With
// refresh_ahead_beta > 0, a get_or_load() hit on an entry with a write deadline (ttl or expire_after_write)
// reloads it early, XFetch style, when
//   now - delta * beta * ln(U) >= deadline   (U uniform in (0, 1], delta = the entry's last load time),
// so hot entries are refreshed before they expire without a stampede: the caller that draws the refresh
// reloads (single-flight; if the reload fails it still gets the current value) while others keep getting the
// current value. Entries stored with put() have delta = 0 and are never refreshed early.
//
// Removal callback: on_removal runs on the thread whose call removed the entry, after the shard lock is
// released; it may call the cache. It must not throw (exceptions are swallowed).
//
// Thread safety: every member may be called from any thread at once. A hit of get() or get_or_load() takes no
// lock: it finds the entry in a table readers probe without the shard's mutex, copies the value, and records the
// access in its CPU's stripe of the shard's read buffer; whoever next takes the mutex (a miss, a put, or a reader
// whose stripe has filled, by try_lock) replays the recorded accesses into the policy, as Caffeine does. Under
// heavy concurrent hits some policy updates may be dropped (never the hit or its count). Caches with
// expire_after_access, and get_or_load() with refresh_ahead_beta > 0, read under the mutex. Everything else on one
// shard serialises on its mutex; different shards run in parallel. The loader and on_removal run without any
// cache lock held. V is returned by copy: store std::shared_ptr<const T> for large values.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "brisk/cache/internal/epoch.h"
#include "brisk/cache/internal/read_buffer.h"
#include "brisk/cache/internal/wtinylfu_shard.h"
#include "brisk/core/clock.h"
#include "brisk/core/status.h"

namespace brisk::cache {

namespace internal {
struct CacheTestAccess;  // tests/cache: holds a cache's shard mutexes to show that hits do not take them
}  // namespace internal

enum class EvictionPolicy : uint8_t { kWTinyLfu, kLru };
enum class RemovalCause : uint8_t { kExplicit, kReplaced, kSize, kExpired, kTag };
static_assert(static_cast<int>(RemovalCause::kExplicit) == static_cast<int>(internal::Cause::kExplicit) &&
              static_cast<int>(RemovalCause::kReplaced) == static_cast<int>(internal::Cause::kReplaced) &&
              static_cast<int>(RemovalCause::kSize) == static_cast<int>(internal::Cause::kSize) &&
              static_cast<int>(RemovalCause::kExpired) == static_cast<int>(internal::Cause::kExpired) &&
              static_cast<int>(RemovalCause::kTag) == static_cast<int>(internal::Cause::kTag));

// Per-entry options of put() / get_or_load().
struct PutOptions {
  Duration ttl{0};                // > 0: this entry expires ttl after it is written (overrides expire_after_write)
  std::vector<std::string> tags;  // invalidate_tag(t) removes every entry carrying t
};

template <typename K, typename V>
struct CacheOptions {
  // Capacity: exactly one of max_entries / max_weight is > 0. With max_weight, weigher gives each entry's
  // weight (e.g. bytes; below 1 counts as 1); an entry heavier than its shard's share is not stored.
  size_t max_entries = 0;
  uint64_t max_weight = 0;
  // Empty: every entry weighs 1. Called outside the cache's locks, possibly from several threads at once; must
  // not throw.
  std::function<uint64_t(const K&, const V&)> weigher;
  EvictionPolicy policy = EvictionPolicy::kWTinyLfu;
  Duration expire_after_write{0};   // 0: never
  Duration expire_after_access{0};  // 0: never
  double refresh_ahead_beta = 0;    // XFetch beta for get_or_load; 0: off (1.0 is the usual choice)
  int shards = 0;                   // 0: automatic (see the header comment); else a power of two
  std::shared_ptr<Clock> clock;     // null: SteadyClock
  uint64_t seed = 0;                // admission jitter / XFetch randomness; 0: random
  std::function<void(const K&, const V&, RemovalCause)> on_removal;  // optional, called without locks held
  bool frequency_doorkeeper = false;  // W-TinyLFU: a Bloom-filter doorkeeper in front of the sketch

  Status validate() const {
    if ((max_entries > 0) == (max_weight > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CacheOptions: exactly one of max_entries (", max_entries, ") and max_weight (", max_weight,
          ") must be > 0; expected max_entries for a count bound or max_weight (with a weigher) for a weight bound"));
    }
    if (weigher && max_weight == 0) {
      return absl::InvalidArgumentError(
          "CacheOptions.weigher is set but max_weight is 0; expected max_weight > 0 with a weigher "
          "(max_entries counts entries and ignores weights)");
    }
    if (expire_after_write.count() < 0) {
      return absl::InvalidArgumentError(absl::StrCat("CacheOptions.expire_after_write is ", expire_after_write.count(),
                                                     " ns; expected >= 0 (0 = never)"));
    }
    if (expire_after_access.count() < 0) {
      return absl::InvalidArgumentError(absl::StrCat("CacheOptions.expire_after_access is ",
                                                     expire_after_access.count(), " ns; expected >= 0 (0 = never)"));
    }
    if (!(refresh_ahead_beta >= 0) || std::isinf(refresh_ahead_beta)) {
      return absl::InvalidArgumentError(absl::StrCat("CacheOptions.refresh_ahead_beta is ", refresh_ahead_beta,
                                                     "; expected a finite value >= 0 (0 = off, 1.0 is usual)"));
    }
    if (shards < 0 || (shards > 0 && !std::has_single_bit(static_cast<unsigned>(shards))) || shards > (1 << 16)) {
      return absl::InvalidArgumentError(
          absl::StrCat("CacheOptions.shards is ", shards, "; expected 0 (automatic) or a power of two up to 65536"));
    }
    const uint64_t capacity = max_entries > 0 ? max_entries : max_weight;
    if (static_cast<uint64_t>(shards) > capacity) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CacheOptions.shards is ", shards, " but the capacity (", max_entries > 0 ? "max_entries" : "max_weight",
          ") is ", capacity, "; expected shards <= capacity so that every shard can hold an entry"));
    }
    return absl::OkStatus();
  }
};

struct CacheStats {
  uint64_t hits = 0, misses = 0, loads = 0, load_failures = 0, load_ns = 0, refreshes = 0;
  uint64_t evictions = 0, evicted_weight = 0, expirations = 0, invalidations = 0;
  uint64_t entries = 0, weight = 0;
  // Added: the capacity in weight units (entries when unweighted), the W-TinyLFU admission window's current
  // capacity summed over shards (it adapts), window candidates rejected by admission, and the shard count.
  uint64_t capacity = 0, window_capacity = 0, admissions_rejected = 0, shards = 0;
  double hit_rate() const {
    const uint64_t n = hits + misses;
    return n == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(n);
  }
};

template <typename K, typename V, typename Hash = absl::Hash<K>>
class Cache {
 public:
  using Loader = std::function<StatusOr<V>(const K&)>;

  static StatusOr<std::unique_ptr<Cache>> create(CacheOptions<K, V> options) {
    BRISK_RETURN_IF_ERROR(options.validate());
    return std::unique_ptr<Cache>(new Cache(std::move(options)));
  }
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // The live value under key, recorded as a hit or a miss; never an expired entry.
  std::optional<V> get(const K& key) {
    const uint64_t h = hash_of(key);
    Slot& s = slot(h);
    if (std::optional<V> hit = lock_free_hit(s, key, h)) return hit;
    RemovedList removed;
    std::optional<V> out;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      internal::LazyNow now(*clock_);
      drain_reads(s, now, removed);
      if (NodeT* n = s.core.lookup(key, h, now, removed)) out.emplace(n->value());
    }
    notify(removed);
    return out;
  }

  // Whether a live entry is under key, without counting a hit or miss or touching the policy.
  bool contains(const K& key) {
    const uint64_t h = hash_of(key);
    Slot& s = slot(h);
    RemovedList removed;
    bool found;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      internal::LazyNow now(*clock_);
      found = s.core.peek(key, h, now, removed) != nullptr;
    }
    notify(removed);
    return found;
  }

  void put(const K& key, V value, const PutOptions& options = {}) {
    const uint64_t w = weigh(key, value);
    const uint64_t h = hash_of(key);
    Slot& s = slot(h);
    RemovedList removed;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      internal::LazyNow now(*clock_);
      drain_reads(s, now, removed);
      s.core.insert(key, h, std::move(value), w, options.ttl, options.tags, Duration{0}, now, removed);
      supersede_flight(s, key);
    }
    notify(removed);
  }

  // Single-flight: concurrent misses on one key call loader once; the others wait for its result. An error
  // from the loader is returned to every waiter and nothing is cached. See the header comment for refresh.
  StatusOr<V> get_or_load(const K& key, const Loader& loader, const PutOptions& options = {}) {
    return load(key, loader, options, /*warming=*/false, nullptr);
  }

  bool invalidate(const K& key) {
    const uint64_t h = hash_of(key);
    Slot& s = slot(h);
    RemovedList removed;
    bool found;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      found = s.core.remove(key, h, internal::Cause::kExplicit, removed);
      supersede_flight(s, key);
    }
    notify(removed);
    return found;
  }

  // How many entries were removed. Cost: O(shards + entries carrying tag).
  size_t invalidate_tag(std::string_view tag) {
    size_t n = 0;
    for (auto& s : slots_) {
      RemovedList removed;
      {
        std::lock_guard<std::mutex> lock(s->mu);
        n += s->core.remove_tag(tag, removed);
        for (auto it = s->flights.begin(); it != s->flights.end();) {  // superseded (see supersede_flight)
          const std::vector<std::string>& tags = it->second->tags;
          if (std::find(tags.begin(), tags.end(), tag) != tags.end()) {
            s->flights.erase(it++);
          } else {
            ++it;
          }
        }
      }
      notify(removed);
    }
    return n;
  }

  void invalidate_all() {
    for (auto& s : slots_) {
      RemovedList removed;
      {
        std::lock_guard<std::mutex> lock(s->mu);
        s->core.clear(removed);
        s->flights.clear();  // every load is superseded (see supersede_flight)
      }
      notify(removed);
    }
  }

  // Preloads the k most frequent keys of access_log (ties: first seen first) through loader; returns how many
  // were loaded (keys already cached are skipped; failed loads are not counted). The logged frequencies
  // (capped at 15) are also recorded in the admission sketch, so warmed keys are not displaced by the first
  // one-hit wonders. Warm-up lookups count no hits or misses.
  size_t warm_up(std::span<const K> access_log, size_t k, const Loader& loader, const PutOptions& options = {}) {
    if (k == 0 || access_log.empty() || !loader) return 0;
    struct Count {
      uint64_t n;
      size_t first;
    };
    absl::flat_hash_map<K, Count, Hash> counts;
    for (size_t i = 0; i < access_log.size(); ++i) ++counts.try_emplace(access_log[i], Count{0, i}).first->second.n;
    std::vector<std::pair<const K*, Count>> ranked;
    ranked.reserve(counts.size());
    for (const auto& [key, c] : counts) ranked.emplace_back(&key, c);
    const size_t top = std::min(k, ranked.size());
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(top), ranked.end(),
                      [](const auto& a, const auto& b) {
                        return a.second.n != b.second.n ? a.second.n > b.second.n : a.second.first < b.second.first;
                      });
    size_t loaded = 0;
    for (size_t i = 0; i < top; ++i) {
      const K& key = *ranked[i].first;
      const uint64_t h = hash_of(key);
      {
        Slot& s = slot(h);
        std::lock_guard<std::mutex> lock(s.mu);
        s.core.boost_frequency(h, ranked[i].second.n);
      }
      bool did_load = false;
      if (load(key, loader, options, /*warming=*/true, &did_load).ok() && did_load) ++loaded;
    }
    return loaded;
  }

  CacheStats stats() const {
    CacheStats st;
    for (const auto& s : slots_) {
      std::lock_guard<std::mutex> lock(s->mu);
      const internal::ShardCounters& c = s->core.counters();
      st.hits += c.hits + s->reads.hits();
      st.misses += c.misses;
      st.evictions += c.evictions;
      st.evicted_weight += c.evicted_weight;
      st.expirations += c.expirations;
      st.invalidations += c.invalidations;
      st.admissions_rejected += c.admissions_rejected;
      st.entries += s->core.size();
      st.weight += s->core.weight();
      st.capacity += s->core.capacity();
      st.window_capacity += s->core.window_capacity();
    }
    st.loads = loads_.load(std::memory_order_relaxed);
    st.load_failures = load_failures_.load(std::memory_order_relaxed);
    st.load_ns = load_ns_.load(std::memory_order_relaxed);
    st.refreshes = refreshes_.load(std::memory_order_relaxed);
    st.shards = slots_.size();
    return st;
  }

  size_t size() const {
    size_t n = 0;
    for (const auto& s : slots_) {
      std::lock_guard<std::mutex> lock(s->mu);
      n += s->core.size();
    }
    return n;
  }

  uint64_t weight() const {
    uint64_t w = 0;
    for (const auto& s : slots_) {
      std::lock_guard<std::mutex> lock(s->mu);
      w += s->core.weight();
    }
    return w;
  }

  // Drops expired entries now (otherwise they are dropped when their shard is next used).
  void cleanup() {
    for (auto& s : slots_) {
      RemovedList removed;
      {
        std::lock_guard<std::mutex> lock(s->mu);
        s->core.drain_expired(clock_->now(), removed);
      }
      notify(removed);
    }
  }

  size_t shard_count() const { return slots_.size(); }
  const CacheOptions<K, V>& options() const { return options_; }

  // The shard count that shards = 0 picks for this capacity (entries, or weight units).
  static size_t automatic_shards(uint64_t capacity) {
    const uint64_t threads = std::max(1u, std::thread::hardware_concurrency());
    const uint64_t by_threads = std::bit_ceil(4 * threads);
    const uint64_t by_capacity = capacity / 64 == 0 ? 1 : std::bit_floor(capacity / 64);
    return static_cast<size_t>(std::min<uint64_t>({by_threads, by_capacity, uint64_t{1} << 16}));
  }

 private:
  friend struct internal::CacheTestAccess;
  using Shard = internal::CacheShard<K, V>;
  using NodeT = typename Shard::NodeT;
  using Box = typename Shard::Box;
  using RemovedList = typename Shard::RemovedList;

  struct Flight {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    StatusOr<V> result;
    // Guarded by the shard mutex:
    size_t waiters = 0;
    std::vector<std::string> tags;
    std::thread::id owner;
  };

  struct alignas(64) Slot {
    explicit Slot(const internal::ShardConfig& c) : core(c) {}
    mutable std::mutex mu;
    Shard core;
    absl::flat_hash_map<K, std::shared_ptr<Flight>, Hash> flights;
    internal::LazyReadBuffer reads;  // the hits served without mu
  };

  explicit Cache(CacheOptions<K, V> options) : options_(std::move(options)) {
    clock_ = options_.clock ? options_.clock : std::make_shared<SteadyClock>();
    const uint64_t capacity = options_.max_entries > 0 ? options_.max_entries : options_.max_weight;
    const size_t shards = options_.shards > 0 ? static_cast<size_t>(options_.shards) : automatic_shards(capacity);
    shard_bits_ = std::countr_zero(shards);
    uint64_t seed = options_.seed;
    if (seed == 0) seed = std::random_device{}() | (uint64_t{std::random_device{}()} << 32) | 1;
    for (size_t i = 0; i < shards; ++i) {
      internal::ShardConfig c;
      c.max_weight = capacity / shards + (i < capacity % shards ? 1 : 0);
      c.lru = options_.policy == EvictionPolicy::kLru;
      c.weighted = options_.max_weight > 0;
      c.expire_after_write = options_.expire_after_write;
      c.expire_after_access = options_.expire_after_access;
      c.seed = internal::spread_hash(seed + i) | 1;
      c.doorkeeper = options_.frequency_doorkeeper;
      c.collect_removed = static_cast<bool>(options_.on_removal);
      slots_.push_back(std::make_unique<Slot>(c));
    }
  }

  // Never 0: the read buffer keeps 0 for an empty slot.
  uint64_t hash_of(const K& key) const {
    const uint64_t h = internal::spread_hash(static_cast<uint64_t>(hasher_(key)));
    return h == 0 ? 1 : h;
  }
  Slot& slot(uint64_t h) { return shard_bits_ == 0 ? *slots_[0] : *slots_[h >> (64 - shard_bits_)]; }
  uint64_t weigh(const K& key, const V& value) const { return options_.weigher ? options_.weigher(key, value) : 1; }

  // A hit served without the shard's mutex (see the header comment), counted and recorded for the policy;
  // nullopt sends the caller to the locked path: the key is absent or expired, or this cache reads under the mutex.
  std::optional<V> lock_free_hit(Slot& s, const K& key, uint64_t h) {
    if (options_.expire_after_access.count() > 0) return std::nullopt;  // a read moves the entry's deadline
    std::optional<V> out;
    {
      internal::EpochGuard guard;
      const Box* b = s.core.find_box(key, h);
      if (b == nullptr) return std::nullopt;
      if (b->write_deadline != TimePoint::max() && b->write_deadline <= clock_->now()) return std::nullopt;
      out.emplace(b->value);
    }
    if (s.reads.get().record(h) >= internal::ReadBuffer::kDrainAt) {
      std::unique_lock<std::mutex> lock(s.mu, std::try_to_lock);
      if (lock.owns_lock()) {
        RemovedList removed;
        internal::LazyNow now(*clock_);
        drain_reads(s, now, removed);
        lock.unlock();
        notify(removed);
      }
    }
    return out;
  }

  // Caller holds s.mu: replays the hits served without it into the policy, before anything else changes it.
  static void drain_reads(Slot& s, internal::LazyNow& now, RemovedList& removed) {
    s.reads.drain([&](uint64_t h) { s.core.record_read(h, now, removed); });
  }

  // Caller holds s.mu. A put or invalidation during a load wins: the flight leaves the map, so that a get_or_load()
  // arriving after it starts a fresh load instead of waiting for the withdrawn one (only the callers already
  // waiting get its result), and the leader, no longer finding its flight there, does not store its value.
  static void supersede_flight(Slot& s, const K& key) {
    if (!s.flights.empty()) s.flights.erase(key);
  }

  // Runs the removal callback for (and then forgets) each removed entry; called with no lock held.
  void notify(RemovedList& removed) const {
    if (removed.empty()) return;
    if (options_.on_removal) {
      for (auto& r : removed) {
        try {
          options_.on_removal(r.key, r.value, static_cast<RemovalCause>(r.cause));
        } catch (...) {  // documented: callbacks must not throw; one that does must not break the cache
        }
      }
    }
    removed.clear();
  }

  // XFetch: refresh early with probability growing as the deadline nears. Caller holds the shard mutex.
  bool should_refresh(Shard& core, const NodeT& n, internal::LazyNow& now) const {
    if (options_.refresh_ahead_beta <= 0 || n.write_deadline() == TimePoint::max()) return false;
    const double early =
        -static_cast<double>(n.load_duration.count()) * options_.refresh_ahead_beta * std::log(core.random_unit());
    const TimePoint t = now.get();
    if (early >= static_cast<double>((n.write_deadline() - t).count())) return true;
    return false;
  }

  static StatusOr<V> call_loader(const Loader& loader, const K& key) {
    try {
      return loader(key);
    } catch (const std::exception& e) {
      return absl::InternalError(
          absl::StrCat("cache loader threw an exception (", e.what(), "); expected it to return an error Status"));
    } catch (...) {
      return absl::InternalError("cache loader threw a non-standard exception; expected it to return an error Status");
    }
  }

  StatusOr<V> load(const K& key, const Loader& loader, const PutOptions& options, bool warming, bool* did_load) {
    if (!loader) return absl::InvalidArgumentError("Cache::get_or_load: the loader is empty; expected a callable");
    const uint64_t h = hash_of(key);
    Slot& s = slot(h);
    if (!warming && options_.refresh_ahead_beta <= 0) {
      if (std::optional<V> hit = lock_free_hit(s, key, h)) return std::move(*hit);
    }
    RemovedList removed;
    std::shared_ptr<Flight> flight;
    std::optional<V> current;  // the value being refreshed ahead of its expiry
    bool leader = false;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      internal::LazyNow now(*clock_);
      drain_reads(s, now, removed);
      NodeT* n = warming ? s.core.peek(key, h, now, removed) : s.core.lookup(key, h, now, removed);
      if (n != nullptr) {
        current.emplace(n->value());
        if (!warming && should_refresh(s.core, *n, now) && !s.flights.contains(key)) {
          leader = true;
        } else {
          n = nullptr;  // plain hit
        }
      } else if (auto it = s.flights.find(key); it != s.flights.end()) {
        flight = it->second;
        if (flight->owner == std::this_thread::get_id()) {
          return absl::FailedPreconditionError(
              "Cache::get_or_load: the loader for this key called get_or_load for the same key; expected a "
              "loader that does not re-enter the cache for its own key");
        }
        ++flight->waiters;
      } else {
        leader = true;
      }
      if (leader) {
        flight = std::make_shared<Flight>();
        flight->tags = options.tags;
        flight->owner = std::this_thread::get_id();
        s.flights.emplace(key, flight);
      }
    }
    notify(removed);
    if (!leader) {
      if (!flight) return std::move(*current);
      std::unique_lock<std::mutex> l(flight->mu);
      flight->cv.wait(l, [&] { return flight->done; });
      return flight->result;
    }

    const bool refresh = current.has_value();
    const TimePoint start = clock_->now();
    StatusOr<V> result = call_loader(loader, key);
    const Duration took = clock_->now() - start;
    loads_.fetch_add(1, std::memory_order_relaxed);
    load_ns_.fetch_add(static_cast<uint64_t>(std::max<int64_t>(0, took.count())), std::memory_order_relaxed);
    if (refresh) refreshes_.fetch_add(1, std::memory_order_relaxed);
    if (!result.ok()) load_failures_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t w = result.ok() ? weigh(key, *result) : 0;
    size_t waiters;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      // Still in the map: no put or invalidation superseded the load (supersede_flight), so its value is stored.
      const auto it = s.flights.find(key);
      const bool current = it != s.flights.end() && it->second == flight;
      if (current) s.flights.erase(it);
      if (result.ok() && current) {
        internal::LazyNow now(*clock_);
        s.core.insert(key, h, *result, w, options.ttl, options.tags, took, now, removed);
        if (did_load != nullptr) *did_load = true;
      }
      waiters = flight->waiters;  // no one can join any more: the flight is out of the map
    }
    {
      std::lock_guard<std::mutex> l(flight->mu);
      if (waiters > 0) flight->result = result;
      flight->done = true;
    }
    flight->cv.notify_all();
    notify(removed);
    if (refresh && !result.ok()) return std::move(*current);  // still valid: the refresh can wait
    return result;
  }

  CacheOptions<K, V> options_;
  std::shared_ptr<Clock> clock_;
  Hash hasher_;
  std::vector<std::unique_ptr<Slot>> slots_;
  int shard_bits_ = 0;
  std::atomic<uint64_t> loads_{0}, load_failures_{0}, load_ns_{0}, refreshes_{0};
};

}  // namespace brisk::cache
