// Internal: not part of brisk's API and may change without notice; use brisk/cache/cache.h.
// CacheShard<K, V>: one shard of brisk::cache::Cache: its entries, its eviction policy (W-TinyLFU or
// LRU), its expiry bookkeeping and its tag index. cache.h owns the locking, the sharding, single-flight loads
// and the removal callbacks; this file is the policy.
//
// W-TinyLFU (as Caffeine, with one shard's capacity C in weight units; unweighted entries weigh 1):
//  - A new entry enters the admission window, an LRU of initially 1% of C.
//  - The main space (the rest) is a segmented LRU: probation (20%) and protected (80%). A hit in probation
//    promotes the entry to protected; protected overflow is demoted back to the probation MRU end.
//  - When the window overflows, its LRU entries move to the probation MRU end as candidates. While the shard
//    is over C, each candidate contests the probation LRU victim (the protected LRU, when probation holds only
//    candidates): the one with the lower sketch frequency is evicted, ties evict the candidate.
//    Hash-flooding defence (Caffeine's): an attacker can keep a victim artificially hot so that every
//    candidate loses; so a warm candidate (frequency >= 6, i.e. > 5) that loses is still admitted with
//    probability 1/128, from a per-shard PRNG seeded by CacheOptions::seed.
//  - The window size adapts by hill climbing on the hit rate (hill_climber.h): every sample period of
//    10 x (expected entries) lookups it grows or shrinks the window by a decaying step of ~6.25% of C,
//    reversing direction when the hit rate gets worse. It only climbs once the shard is at least half full.
//  - EvictionPolicy::kLru keeps every entry in the window, sized to C: plain LRU, no sketch, no climbing.
// The shard's weight never exceeds C: an entry heavier than C is rejected (reported as a size eviction)
// and every insert evicts until the total fits again. Weights below 1 count as 1.
//
// Expiry is lazy plus drain: an entry's deadline is min(write deadline, last access + expire_after_access);
// every operation on a shard that has expiring entries first drains the expired ones, in deadline order
// (write deadlines in an ordered set, access deadlines in an access-order list, which is already sorted
// because expire_after_access is one duration for all entries). So an expired entry is never returned and
// is reclaimed on the shard's next operation or at Cache::cleanup(); cost O(log n) per expired entry.
//
// Tags: a per-shard index tag -> entries, so removing a tag costs O(entries carrying it).
//
// Lock-free hits: the entries are indexed by a NodeTable (node_table.h) that find_box() reads without the lock, and
// an entry's value and write deadline sit in a Box that is replaced whole, never changed, when the entry is written
// again. Removed nodes and replaced boxes are retired (epoch.h), not deleted, so a reader inside an EpochGuard can
// still read them. Such a hit changes no policy state; the cache records it in a ReadBuffer (read_buffer.h) and
// replays it here later with record_read().
// Thread safety: find_box() from any thread inside an EpochGuard; everything else only under the shard's mutex.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "brisk/cache/internal/epoch.h"
#include "brisk/cache/internal/frequency_sketch.h"
#include "brisk/cache/internal/hill_climber.h"
#include "brisk/cache/internal/node_table.h"
#include "brisk/core/clock.h"

namespace brisk::cache::internal {

// Mirrors brisk::cache::RemovalCause (cache.h static_asserts the values match).
enum class Cause : uint8_t { kExplicit, kReplaced, kSize, kExpired, kTag };
enum class Region : uint8_t { kWindow, kProbation, kProtected };

template <typename K, typename V>
struct alignas(16) Node {  // 16: NodeTable tags its pointers' low 4 bits
  // What a lock-free reader reads besides the key: replaced whole when the entry is written again.
  struct Box {
    V value;
    TimePoint write_deadline;  // TimePoint::max(): none
  };
  Node(K k, uint64_t h, Box b) : key(std::move(k)), hash(h), first(std::move(b)) {}
  ~Node() {
    if (Box* b = box.load(std::memory_order_relaxed); b != &first) delete b;
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  const V& value() const { return box.load(std::memory_order_acquire)->value; }
  TimePoint write_deadline() const { return box.load(std::memory_order_acquire)->write_deadline; }
  // Publishes a new value; returns the old box when it is the caller's to retire (not the node's own `first`).
  Box* replace_box(Box* b) {
    Box* old = box.exchange(b, std::memory_order_acq_rel);
    return old == &first ? nullptr : old;
  }

  const K key;
  const uint64_t hash;
  // The value the node was created with lives in the node (one allocation per entry); a replacement is allocated
  // apart, and `first` then lingers unread until the node is freed.
  Box first;
  std::atomic<Box*> box{&first};
  // The rest is the writer's, read and written under the shard's mutex only.
  uint64_t weight = 1;
  Node* prev = nullptr;  // policy list (window, probation or protected)
  Node* next = nullptr;
  Node* access_prev = nullptr;  // access-order list, kept only with expire_after_access
  Node* access_next = nullptr;
  TimePoint last_access{};
  Duration load_duration{0};  // how long the loader took to produce this value (XFetch's delta)
  std::vector<std::string> tags;
  Region region = Region::kWindow;
};

// A doubly linked list threaded through the nodes; it owns nothing.
template <typename N, N* N::*Prev, N* N::*Next>
struct IntrusiveList {
  N* head = nullptr;  // least recently used
  N* tail = nullptr;  // most recently used
  uint64_t weight = 0;

  void push_back(N* n, uint64_t w) {
    n->*Prev = tail;
    n->*Next = nullptr;
    if (tail != nullptr) {
      tail->*Next = n;
    } else {
      head = n;
    }
    tail = n;
    weight += w;
  }
  void remove(N* n, uint64_t w) {
    if (n->*Prev != nullptr) {
      (n->*Prev)->*Next = n->*Next;
    } else {
      head = n->*Next;
    }
    if (n->*Next != nullptr) {
      (n->*Next)->*Prev = n->*Prev;
    } else {
      tail = n->*Prev;
    }
    n->*Prev = n->*Next = nullptr;
    weight -= w;
  }
  void move_to_back(N* n, uint64_t w) {
    if (tail == n) return;
    remove(n, w);
    push_back(n, w);
  }
  void clear() {
    head = tail = nullptr;
    weight = 0;
  }
};

template <typename K, typename V>
struct Removed {
  K key;
  V value;
  Cause cause;
};

struct ShardConfig {
  uint64_t max_weight = 1;  // this shard's share of the capacity
  bool lru = false;         // EvictionPolicy::kLru
  bool weighted = false;    // capacity in weight units (the sketch then grows with the entry count)
  Duration expire_after_write{0};
  Duration expire_after_access{0};
  uint64_t seed = 1;
  bool doorkeeper = false;
  bool collect_removed = false;  // keep removed keys and values for the on_removal callback
};

struct ShardCounters {
  uint64_t hits = 0, misses = 0, evictions = 0, evicted_weight = 0, expirations = 0, invalidations = 0;
  uint64_t admissions_rejected = 0;  // window candidates that lost the frequency contest
};

// Reads the clock at most once per operation, and only when an entry's expiry needs it.
class LazyNow {
 public:
  explicit LazyNow(const Clock& clock) : clock_(clock) {}
  TimePoint get() {
    if (!now_) now_ = clock_.now();
    return *now_;
  }

 private:
  const Clock& clock_;
  std::optional<TimePoint> now_;
};

template <typename K, typename V>
class CacheShard {
 public:
  using NodeT = Node<K, V>;
  using Box = typename NodeT::Box;
  using RemovedList = std::vector<Removed<K, V>>;
  static constexpr int kWarmCandidate = 6;  // a losing candidate at least this frequent may be admitted by chance

  explicit CacheShard(const ShardConfig& config) : config_(config), max_(std::max<uint64_t>(config.max_weight, 1)) {
    rng_ = config.seed == 0 ? 0x853c49e6748fea9bULL : config.seed;
    if (config_.lru) {
      window_max_ = max_;
    } else {
      window_max_ = max_ - static_cast<uint64_t>(0.99 * static_cast<double>(max_));  // ceil(1%)
      sketch_ = FrequencySketch(config_.weighted ? 16 : max_, config_.doorkeeper);
      climber_.reset(max_, sketch_.sample_size());
    }
    protected_max_ = (max_ - window_max_) * 4 / 5;
  }
  CacheShard(const CacheShard&) = delete;
  CacheShard& operator=(const CacheShard&) = delete;
  ~CacheShard() {
    table_.for_each([](NodeT* n) { delete n; });
  }

  // A live entry, after recording the access (policy order, frequency, access time, hit count); nullptr
  // (a miss) when absent. Expired entries are drained first, so they are never found.
  NodeT* lookup(const K& key, uint64_t hash, LazyNow& now, RemovedList& out) {
    if (has_expiring()) drain_expired(now.get(), out);
    NodeT* n = find(key, hash);
    if (n == nullptr) {
      ++counters_.misses;
      record_sample(false, out);
      return nullptr;
    }
    ++counters_.hits;
    on_access(n, now);
    record_sample(true, out);
    return n;
  }

  // Without the lock, inside an EpochGuard: key's box, or nullptr; expired or not (the caller checks its
  // write_deadline). Records nothing: the caller counts the hit and hands it to record_read() later.
  const Box* find_box(const K& key, uint64_t hash) const {
    const NodeT* n = find(key, hash);
    return n == nullptr ? nullptr : n->box.load(std::memory_order_acquire);
  }

  // Replays a hit that find_box() served: the access as lookup() records it, minus the hit count. An entry that has
  // gone since is skipped. Not for caches with expire_after_access (their reads must take the lock).
  void record_read(uint64_t hash, LazyNow& now, RemovedList& out) {
    NodeT* n = table_.find(hash, [](const NodeT*) { return true; });
    if (n == nullptr) return;
    on_access(n, now);
    record_sample(true, out);
  }

  // A live entry without touching policy, frequency or stats (still drains expired entries).
  NodeT* peek(const K& key, uint64_t hash, LazyNow& now, RemovedList& out) {
    if (has_expiring()) drain_expired(now.get(), out);
    return find(key, hash);
  }

  // Inserts or replaces key's entry. ttl > 0 overrides expire_after_write. Returns false when the entry is
  // heavier than the shard's capacity: it is then not stored (an old entry under key is removed, kReplaced)
  // and is reported as a size eviction.
  bool insert(const K& key, uint64_t hash, V value, uint64_t weight, Duration ttl, const std::vector<std::string>& tags,
              Duration load_duration, LazyNow& now, RemovedList& out) {
    weight = std::max<uint64_t>(weight, 1);
    if (has_expiring() || ttl.count() > 0 || config_.expire_after_write.count() > 0 ||
        config_.expire_after_access.count() > 0) {
      drain_expired(now.get(), out);
    }
    if (weight > max_) {
      if (NodeT* old = find(key, hash)) remove_node(old, Cause::kReplaced, out);
      ++counters_.evictions;
      counters_.evicted_weight += weight;
      if (config_.collect_removed) out.push_back({key, std::move(value), Cause::kSize});
      return false;
    }
    const Duration write_ttl = ttl.count() > 0 ? ttl : config_.expire_after_write;
    // Saturating: a ttl past the clock's range (Duration::max(): never) is no deadline, not one in the past.
    Box box{std::move(value), write_ttl.count() > 0 ? deadline_after(now.get(), write_ttl) : kNoDeadline};
    const TimePoint write_deadline = box.write_deadline;
    NodeT* n = find(key, hash);
    const bool inserted = n == nullptr;
    if (!inserted) {
      // A reader may hold the old value: copy it for on_removal, and retire rather than free it.
      if (config_.collect_removed) out.push_back({key, n->value(), Cause::kReplaced});
      if (n->write_deadline() != TimePoint::max()) deadlines_.erase({n->write_deadline(), n});
      if (Box* old = n->replace_box(new Box(std::move(box)))) {
        retired_.retire(old, [](void* p) { delete static_cast<Box*>(p); });
      }
      unlink_tags(n);
      region_list(n->region).weight += weight - n->weight;  // wraps correctly in unsigned arithmetic
      total_ += weight - n->weight;
      n->weight = weight;
    } else {
      n = new NodeT(key, hash, std::move(box));
      table_.insert(n, retired_);  // publishes the node and its value (a release store)
      n->weight = weight;
      n->region = Region::kWindow;
      window_.push_back(n, weight);
      total_ += weight;
      if (config_.expire_after_access.count() > 0) access_.push_back(n, 0);
      if (!config_.lru && config_.weighted && table_.size() > sketch_.capacity()) {
        sketch_.ensure_capacity(2 * table_.size());  // weighted caches learn their entry count as they fill
        climber_.set_sample_size(sketch_.sample_size());
      }
    }
    n->load_duration = load_duration;
    link_tags(n, tags);
    if (write_deadline != TimePoint::max()) deadlines_.insert({write_deadline, n});
    if (config_.expire_after_access.count() > 0) n->last_access = now.get();
    if (!inserted) on_access(n, now);
    if (inserted && !config_.lru) sketch_.increment(hash);
    evict(out);
    return true;
  }

  // Removes key's entry; kExplicit / kTag count as invalidations.
  bool remove(const K& key, uint64_t hash, Cause cause, RemovedList& out) {
    NodeT* n = find(key, hash);
    if (n == nullptr) return false;
    remove_node(n, cause, out);
    return true;
  }

  size_t remove_tag(std::string_view tag, RemovedList& out) {
    auto it = tag_index_.find(absl::string_view(tag.data(), tag.size()));
    if (it == tag_index_.end()) return 0;
    std::vector<NodeT*> nodes(it->second.begin(), it->second.end());
    for (NodeT* n : nodes) remove_node(n, Cause::kTag, out);
    return nodes.size();
  }

  // Removes everything (kExplicit). The frequency history is kept: it still describes the workload.
  size_t clear(RemovedList& out) {
    const size_t n = table_.size();
    std::vector<NodeT*> nodes;
    nodes.reserve(n);
    table_.for_each([&](NodeT* node) { nodes.push_back(node); });
    table_.clear(retired_);  // unlinked first: a node retired while readers can still reach it may be freed under them
    for (NodeT* node : nodes) {
      if (config_.collect_removed) out.push_back({node->key, node->value(), Cause::kExplicit});
      retire(node);
    }
    counters_.invalidations += n;
    window_.clear();
    probation_.clear();
    protected_.clear();
    access_.clear();
    deadlines_.clear();
    tag_index_.clear();
    total_ = 0;
    return n;
  }

  size_t drain_expired(TimePoint now, RemovedList& out) {
    size_t n = 0;
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      remove_node(deadlines_.begin()->second, Cause::kExpired, out);
      ++n;
    }
    if (config_.expire_after_access.count() > 0) {
      while (access_.head != nullptr && deadline_after(access_.head->last_access, config_.expire_after_access) <= now) {
        remove_node(access_.head, Cause::kExpired, out);
        ++n;
      }
    }
    return n;
  }

  // Records `times` logged accesses (capped at 15) of an item about to be warmed up; the insert adds one more.
  void boost_frequency(uint64_t hash, uint64_t times) {
    if (config_.lru) return;
    for (uint64_t i = 1; i < std::min<uint64_t>(times, FrequencySketch::kMaxCount); ++i) sketch_.increment(hash);
  }

  // Whether some entry has a deadline (so reads must consult the clock).
  bool has_expiring() const {
    return !deadlines_.empty() || (config_.expire_after_access.count() > 0 && table_.size() > 0);
  }

  // A uniform number in (0, 1], for XFetch (called under the shard lock).
  double random_unit() { return (static_cast<double>(next_random() >> 11) + 1.0) * 0x1.0p-53; }

  size_t size() const { return table_.size(); }
  uint64_t weight() const { return total_; }
  uint64_t capacity() const { return max_; }
  uint64_t window_capacity() const { return window_max_; }
  const ShardCounters& counters() const { return counters_; }
  const FrequencySketch& sketch() const { return sketch_; }

 private:
  using PolicyList = IntrusiveList<NodeT, &NodeT::prev, &NodeT::next>;

  NodeT* find(const K& key, uint64_t hash) const {
    return table_.find(hash, [&](const NodeT* n) { return n->key == key; });
  }

  void retire(NodeT* n) {
    retired_.retire(n, [](void* p) { delete static_cast<NodeT*>(p); });
  }
  using AccessList = IntrusiveList<NodeT, &NodeT::access_prev, &NodeT::access_next>;

  PolicyList& region_list(Region r) {
    switch (r) {
      case Region::kWindow: return window_;
      case Region::kProbation: return probation_;
      case Region::kProtected: break;
    }
    return protected_;
  }

  uint64_t next_random() {  // xorshift64*
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    return rng_ * 0x2545F4914F6CDD1DULL;
  }

  void on_access(NodeT* n, LazyNow& now) {
    if (config_.expire_after_access.count() > 0) {
      n->last_access = now.get();
      access_.move_to_back(n, 0);
    }
    if (config_.lru) {
      window_.move_to_back(n, n->weight);
      return;
    }
    sketch_.increment(n->hash);
    switch (n->region) {
      case Region::kWindow: window_.move_to_back(n, n->weight); break;
      case Region::kProbation:
        probation_.remove(n, n->weight);
        n->region = Region::kProtected;
        protected_.push_back(n, n->weight);
        demote_protected_overflow();
        break;
      case Region::kProtected: protected_.move_to_back(n, n->weight); break;
    }
  }

  void demote_protected_overflow() {
    while (protected_.weight > protected_max_ && protected_.head != nullptr) {
      NodeT* d = protected_.head;
      protected_.remove(d, d->weight);
      d->region = Region::kProbation;
      probation_.push_back(d, d->weight);
    }
  }

  void record_sample(bool hit, RemovedList& out) {
    if (config_.lru) return;
    if (2 * total_ < max_) {  // a filling shard's hit rate says nothing about the window size
      climber_.discard_sample();
      return;
    }
    climber_.record(hit);
    const int64_t adjustment = climber_.take_adjustment();
    if (adjustment > 0) {
      grow_window(static_cast<uint64_t>(adjustment));
    } else if (adjustment < 0) {
      shrink_window(static_cast<uint64_t>(-adjustment));
    }
  }

  void set_window_max(uint64_t w) {
    window_max_ = w;
    protected_max_ = (max_ - window_max_) * 4 / 5;
  }

  // Moves main-space LRU entries (probation first) into the window; the total weight is unchanged.
  void grow_window(uint64_t quota) {
    set_window_max(std::min(max_, window_max_ + quota));
    while (true) {
      NodeT* n = probation_.head != nullptr ? probation_.head : protected_.head;
      if (n == nullptr || window_.weight + n->weight > window_max_) break;
      region_list(n->region).remove(n, n->weight);
      n->region = Region::kWindow;
      window_.push_back(n, n->weight);
    }
    demote_protected_overflow();
  }

  void shrink_window(uint64_t quota) {
    set_window_max(window_max_ - std::min(quota, window_max_));
    evict_from_window();
  }

  // Moves the window's overflow to the probation MRU end; returns the first (oldest) of them.
  NodeT* evict_from_window() {
    NodeT* first = nullptr;
    while (window_.weight > window_max_ && window_.head != nullptr) {
      NodeT* n = window_.head;
      window_.remove(n, n->weight);
      n->region = Region::kProbation;
      probation_.push_back(n, n->weight);
      if (first == nullptr) first = n;
    }
    return first;
  }

  bool admit(const NodeT* candidate, const NodeT* victim) {
    const int victim_freq = sketch_.frequency(victim->hash);
    const int candidate_freq = sketch_.frequency(candidate->hash);
    if (candidate_freq > victim_freq) return true;
    if (candidate_freq >= kWarmCandidate) return (next_random() & 127) == 0;
    return false;
  }

  void evict(RemovedList& out) {
    if (config_.lru) {
      while (total_ > max_ && window_.head != nullptr) remove_node(window_.head, Cause::kSize, out);
      return;
    }
    // Candidates are the nodes from `candidate` to the probation tail (just moved there, oldest first).
    NodeT* candidate = evict_from_window();
    while (total_ > max_ && candidate != nullptr) {
      NodeT* victim = probation_.head != candidate ? probation_.head : protected_.head;
      if (victim == nullptr) break;
      NodeT* next = candidate->next;
      if (admit(candidate, victim)) {
        remove_node(victim, Cause::kSize, out);
      } else {
        ++counters_.admissions_rejected;
        remove_node(candidate, Cause::kSize, out);
      }
      candidate = next;
    }
    // Left over (heavy candidates, or only candidates to choose from): plain LRU order of the main space.
    while (total_ > max_) {
      NodeT* n = probation_.head != nullptr   ? probation_.head
                 : protected_.head != nullptr ? protected_.head
                                              : window_.head;
      if (n == nullptr) break;
      remove_node(n, Cause::kSize, out);
    }
  }

  void link_tags(NodeT* n, const std::vector<std::string>& tags) {
    n->tags = tags;
    std::sort(n->tags.begin(), n->tags.end());
    n->tags.erase(std::unique(n->tags.begin(), n->tags.end()), n->tags.end());
    for (const std::string& t : n->tags) tag_index_[t].insert(n);
  }
  void unlink_tags(NodeT* n) {
    for (const std::string& t : n->tags) {
      auto it = tag_index_.find(t);
      if (it == tag_index_.end()) continue;
      it->second.erase(n);
      if (it->second.empty()) tag_index_.erase(it);
    }
    n->tags.clear();
  }

  void remove_node(NodeT* n, Cause cause, RemovedList& out) {
    region_list(n->region).remove(n, n->weight);
    if (config_.expire_after_access.count() > 0) access_.remove(n, 0);
    if (n->write_deadline() != TimePoint::max()) deadlines_.erase({n->write_deadline(), n});
    unlink_tags(n);
    total_ -= n->weight;
    switch (cause) {
      case Cause::kSize:
        ++counters_.evictions;
        counters_.evicted_weight += n->weight;
        break;
      case Cause::kExpired: ++counters_.expirations; break;
      case Cause::kExplicit:
      case Cause::kTag: ++counters_.invalidations; break;
      case Cause::kReplaced: break;
    }
    table_.erase(n);
    if (config_.collect_removed) out.push_back({n->key, n->value(), cause});  // copies: a reader may hold the node
    retire(n);
  }

  ShardConfig config_;
  uint64_t max_;
  uint64_t window_max_ = 0;
  uint64_t protected_max_ = 0;
  uint64_t total_ = 0;
  NodeTable<NodeT> table_;
  RetireList retired_;  // removed nodes and replaced boxes, until no lock-free reader can hold them
  PolicyList window_, probation_, protected_;
  AccessList access_;
  std::set<std::pair<TimePoint, NodeT*>> deadlines_;  // write deadlines, earliest first
  absl::flat_hash_map<std::string, absl::flat_hash_set<NodeT*>> tag_index_;
  FrequencySketch sketch_{16};
  HillClimber climber_;
  ShardCounters counters_;
  uint64_t rng_;
};

}  // namespace brisk::cache::internal
