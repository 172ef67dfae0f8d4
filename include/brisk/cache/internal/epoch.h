// Internal: not part of brisk's API and may change without notice; use brisk/cache/cache.h.
// Epoch-based reclamation: how brisk::cache::Cache reads entries without a lock and still frees the ones it removes.
//
// A reader brackets its lock-free reads with an EpochGuard. A writer (under its own lock) unlinks an object so that
// new readers cannot reach it, then hands it to a RetireList, which frees it once every reader that might still
// hold it has left its guard: an object retired in epoch r is freed when the process's epoch has reached r + 2, and
// the epoch only moves on when every reader inside a guard has announced the current one (Fraser's scheme).
//
//   {
//     EpochGuard guard;                      // a hit: no lock taken, nothing written that another thread reads
//     Node* n = table.find(hash, same_key);  // safe to dereference until the guard ends
//   }
//   retired.retire(node, [](void* p) { delete static_cast<Node*>(p); });  // the writer, after unlinking node
//
// One epoch per process (EpochDomain lives in libbrisk, so the library's caches and a host's share it). A thread's
// announcement sits on its own cache line; a guard writes only that line, so readers on different threads never
// touch a shared line. Guards nest. A reader that stays inside a guard holds back the freeing of everything retired
// since, so guards must be short and never block.
//
// Thread safety: EpochGuard from any thread; a RetireList belongs to one owner (the caller holds the owner's lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "brisk/core/export.h"

namespace brisk::cache::internal {

class BRISK_API EpochDomain {
 public:
  // A thread's announcement.
  struct alignas(64) Record {
    std::atomic<uint64_t> state{0};  // 0: outside any guard; else the announced epoch << 1 | 1
    std::atomic<bool> in_use{true};
    uint32_t depth = 0;  // nesting, touched only by the owning thread
    Record* next = nullptr;
  };

  static EpochDomain& global();

  // The reader side (EpochGuard): enter() announces the epoch in this thread's record and returns it; nests.
  static Record* enter();
  static void exit(Record* r) {
    if (--r->depth == 0) r->state.store(0, std::memory_order_release);
  }
  // The epoch a retirement is stamped with; call it after the object is unlinked (it fences first).
  uint64_t retire_epoch();
  // Moves the epoch on when every reader inside a guard has announced the current one; returns the epoch now.
  uint64_t try_advance();

 private:
  constexpr EpochDomain() = default;
  Record* register_thread();  // a record for this thread: a free one reused, or a new one

  std::atomic<uint64_t> epoch_{2};
  std::atomic<Record*> records_{nullptr};  // grows only; records of exited threads are reused
};

class EpochGuard {
 public:
  EpochGuard() : record_(EpochDomain::enter()) {}
  ~EpochGuard() { EpochDomain::exit(record_); }
  EpochGuard(const EpochGuard&) = delete;
  EpochGuard& operator=(const EpochGuard&) = delete;

 private:
  EpochDomain::Record* record_;
};

// Objects unlinked by one owner, freed once no reader can hold them. Not thread-safe: the owner's lock guards it.
class BRISK_API RetireList {
 public:
  using Deleter = void (*)(void*);
  RetireList() = default;
  RetireList(const RetireList&) = delete;
  RetireList& operator=(const RetireList&) = delete;
  ~RetireList();  // frees everything: the owner is being destroyed, so no reader can reach its objects

  // Call after the object is unlinked; the caller holds the owner's lock.
  void retire(void* object, Deleter deleter);
  // Frees what no reader can hold any more; retire() calls it every kCollectEvery retirements.
  void collect();
  size_t pending() const { return items_.size(); }

  static constexpr size_t kCollectEvery = 64;

 private:
  struct Item {
    void* object;
    Deleter deleter;
    uint64_t epoch;
  };
  static constexpr uint64_t kUnsealed = ~uint64_t{0};  // not stamped yet: collect() stamps it
  std::vector<Item> items_;                            // in retirement order, so epochs never decrease
  size_t since_collect_ = 0;
};

}  // namespace brisk::cache::internal
