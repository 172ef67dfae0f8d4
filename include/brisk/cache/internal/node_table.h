// Internal: not part of brisk's API and may change without notice; use brisk/cache/cache.h.
// NodeTable<N>: a cache shard's index from key hash to node, readable without a lock. Open addressing with linear
// probing over atomic node pointers, each tagged in its low 4 bits (free: nodes are 16-byte aligned) with 4 bits of
// its hash, so that a probe dereferences 1 in 16 of the nodes it passes that are not the one sought; the shard's writer
// (holding its lock) inserts, erases (leaving a tombstone) and grows it (a new array, published atomically; the old one
// is retired through epoch.h). A reader inside an EpochGuard may call find() while the writer works: it sees each slot
// either before or after a change, and every node and array it can reach stays allocated until its guard ends. A reader
// can miss an entry being inserted or moved to a new array at that moment; the cache then takes its locked path, which
// is exact.
//
// N has `uint64_t hash` (its key's spread hash, fixed for the node's life) and alignof(N) >= 16. The table owns no
// node.
// Thread safety: find() from any thread inside an EpochGuard, or under the writer's lock; everything else only
// under the writer's lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "brisk/cache/internal/epoch.h"

namespace brisk::cache::internal {

template <typename N>
class NodeTable {
 public:
  NodeTable() : array_(new Array(kMinSlots)) {}
  ~NodeTable() { delete array_.load(std::memory_order_relaxed); }
  NodeTable(const NodeTable&) = delete;
  NodeTable& operator=(const NodeTable&) = delete;

  // The first node with this hash for which same(node) holds; nullptr when none.
  template <typename Same>
  N* find(uint64_t hash, Same&& same) const {
    static_assert(alignof(N) >= 16, "the low 4 bits of a node's address hold the tag");
    const Array* a = array_.load(std::memory_order_acquire);
    const uintptr_t t = tag(hash);
    for (size_t i = hash & a->mask;; i = (i + 1) & a->mask) {
      const uintptr_t v = a->slots[i].load(std::memory_order_acquire);
      if (v == kEmpty) return nullptr;
      if ((v & kTagMask) != t || v == kTombstone) continue;
      N* n = node(v);
      if (n->hash == hash && same(n)) return n;
    }
  }

  // Adds a node whose key is not in the table. Rebuilds it (retiring the old array into `retired`) when nodes and
  // tombstones would fill over 3/4 of it.
  void insert(N* node, RetireList& retired) {
    Array* a = array_.load(std::memory_order_relaxed);
    if (4 * (used_ + 1) > 3 * (a->mask + 1)) {
      a = rebuild(live_ + 1, retired);
    }
    for (size_t i = node->hash & a->mask;; i = (i + 1) & a->mask) {
      const uintptr_t v = a->slots[i].load(std::memory_order_relaxed);
      if (v == kEmpty || v == kTombstone) {
        if (v == kEmpty) ++used_;
        a->slots[i].store(slot_of(node), std::memory_order_release);
        ++live_;
        return;
      }
    }
  }

  // Takes a node out (its slot becomes a tombstone, so probes for later keys still pass it).
  void erase(const N* node) {
    Array* a = array_.load(std::memory_order_relaxed);
    const uintptr_t mine = slot_of(node);
    for (size_t i = node->hash & a->mask;; i = (i + 1) & a->mask) {
      const uintptr_t v = a->slots[i].load(std::memory_order_relaxed);
      if (v == kEmpty) return;
      if (v == mine) {
        a->slots[i].store(kTombstone, std::memory_order_release);
        --live_;
        return;
      }
    }
  }

  // Every node, once, in slot order (under the writer's lock; f must not change the table).
  template <typename F>
  void for_each(F&& f) const {
    const Array* a = array_.load(std::memory_order_relaxed);
    for (size_t i = 0; i <= a->mask; ++i) {
      const uintptr_t v = a->slots[i].load(std::memory_order_relaxed);
      if (v != kEmpty && v != kTombstone) f(node(v));
    }
  }

  // Empties the table (the nodes are the caller's to retire); the emptied array is retired too.
  void clear(RetireList& retired) {
    live_ = 0;
    rebuild(0, retired);
  }

  size_t size() const { return live_; }

 private:
  static constexpr size_t kMinSlots = 16;

  // A slot: a node's address with tag(hash) in its low 4 bits; kEmpty; or kTombstone (no node lives at address 0).
  static constexpr uintptr_t kEmpty = 0;
  static constexpr uintptr_t kTombstone = 1;
  static constexpr uintptr_t kTagMask = 15;
  static uintptr_t tag(uint64_t hash) { return (hash >> 32) & kTagMask; }  // bits the slot index does not use
  static uintptr_t slot_of(const N* n) { return reinterpret_cast<uintptr_t>(n) | tag(n->hash); }
  static N* node(uintptr_t slot) { return reinterpret_cast<N*>(slot & ~kTagMask); }

  struct Array {
    explicit Array(size_t n) : mask(n - 1), slots(new std::atomic<uintptr_t>[n]) {
      for (size_t i = 0; i < n; ++i) slots[i].store(kEmpty, std::memory_order_relaxed);
    }
    size_t mask;
    std::unique_ptr<std::atomic<uintptr_t>[]> slots;
  };

  // A fresh array for `entries` live nodes (at most half full), holding the current live nodes. Small, so that the
  // slot a probe starts at is more often in the CPU's cache; the 4-bit tags keep probes short.
  Array* rebuild(size_t entries, RetireList& retired) {
    size_t n = kMinSlots;
    while (n < 2 * entries) n *= 2;
    Array* old = array_.load(std::memory_order_relaxed);
    auto* fresh = new Array(n);
    used_ = 0;
    if (live_ > 0) {
      for (size_t i = 0; i <= old->mask; ++i) {
        const uintptr_t v = old->slots[i].load(std::memory_order_relaxed);
        if (v == kEmpty || v == kTombstone) continue;
        for (size_t j = node(v)->hash & fresh->mask;; j = (j + 1) & fresh->mask) {
          if (fresh->slots[j].load(std::memory_order_relaxed) == kEmpty) {
            fresh->slots[j].store(v, std::memory_order_relaxed);
            ++used_;
            break;
          }
        }
      }
    }
    array_.store(fresh, std::memory_order_release);
    retired.retire(old, [](void* p) { delete static_cast<Array*>(p); });
    return fresh;
  }

  std::atomic<Array*> array_;
  size_t used_ = 0;  // live nodes and tombstones
  size_t live_ = 0;
};

}  // namespace brisk::cache::internal
