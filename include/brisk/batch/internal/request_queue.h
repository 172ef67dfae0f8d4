// Internal: not part of brisk's API and may change without notice; use brisk/batch/batcher.h.
// The batcher's queue of waiting requests: per priority level one FIFO per power-of-two cost bucket, plus one
// FIFO of late requests (kDelay), all intrusive so that cancellation and bucketed picks unlink from the middle
// in O(1). It orders candidates by effective level (strict priority improved by aging), then by closeness to
// the batch's cost bucket, then by age.
//
//   RequestQueue<Entry> q(/*levels=*/3, /*aging_interval=*/100ms);
//   q.push_back(e);                                   // e->info.priority, e->bucket set
//   RequestQueue<Entry>::Exclusions skip(3);
//   Entry* next = q.best(now, /*anchor_bucket=*/-1, skip);
//   q.erase(next);
//
// Entry needs: RequestInfo info; size_t bucket (< 64); bool delayed; Entry* prev; Entry* next.
// Thread safety: none; the batcher calls it under its own lock.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "brisk/core/clock.h"
#include "brisk/batch/policy.h"

namespace brisk::batch::internal {

template <typename Entry>
class RequestQueue {
 public:
  static constexpr size_t kBuckets = 64;

  // Lists left out of one batch's picks because their head did not fit.
  struct Exclusions {
    explicit Exclusions(size_t levels) : buckets(levels, 0) {}
    void add(const Entry* e) {
      if (e->delayed) {
        delayed = true;
      } else {
        buckets[e->info.priority] |= uint64_t{1} << e->bucket;
      }
    }
    std::vector<uint64_t> buckets;
    bool delayed = false;
  };

  RequestQueue(size_t levels, Duration aging_interval) : levels_(levels), aging_(aging_interval) {}

  size_t size() const { return size_; }
  size_t size(int level) const { return levels_[level].size; }
  size_t cost() const { return cost_; }  // summed request costs
  // Requests at levels 0..level.
  size_t size_up_to(int level) const {
    size_t n = 0;
    for (int i = 0; i <= level; ++i) n += levels_[i].size;
    return n;
  }
  // Summed costs at levels 0..level: the work a new request of that level waits behind.
  size_t cost_up_to(int level) const {
    size_t c = 0;
    for (int i = 0; i <= level; ++i) c += levels_[i].cost;
    return c;
  }

  // The bucket of a cost: its bit width, so 8..15 share one and 128..255 another.
  static size_t bucket_of(size_t cost) { return std::min<size_t>(std::bit_width(cost), kBuckets - 1); }

  void push_back(Entry* e) { link(e, /*front=*/false); }
  void push_front(Entry* e) { link(e, /*front=*/true); }  // back where it was taken from

  void erase(Entry* e) {
    Level& l = levels_[e->info.priority];
    if (e->delayed) {
      delayed_.erase(e);
    } else {
      List& list = l.lists[e->bucket];
      list.erase(e);
      if (list.empty()) l.nonempty &= ~(uint64_t{1} << e->bucket);
    }
    --l.size;
    l.cost -= e->info.cost;
    --size_;
    cost_ -= e->info.cost;
  }

  // Moves a request whose soft deadline passed behind every request that is not late.
  void make_late(Entry* e) {
    erase(e);
    e->delayed = true;
    push_back(e);
  }

  int effective_level(const Entry* e, TimePoint now) const {
    if (e->delayed) return static_cast<int>(levels_.size());
    if (aging_ <= Duration::zero()) return e->info.priority;
    const int64_t aged = std::max<int64_t>(0, (now - e->info.enqueued_at) / aging_);
    return static_cast<int>(std::max<int64_t>(0, e->info.priority - aged));
  }

  TimePoint oldest_enqueued() const {
    TimePoint oldest = kNoDeadline;
    if (!delayed_.empty()) oldest = delayed_.head->info.enqueued_at;
    for (const Level& l : levels_) {
      for (uint64_t m = l.nonempty; m; m &= m - 1) {
        oldest = std::min(oldest, l.lists[std::countr_zero(m)].head->info.enqueued_at);
      }
    }
    return oldest;
  }

  // The next request to take: lowest effective level, then the bucket nearest anchor_bucket (-1: any), then the
  // oldest. List heads are enough: within a list the head is the oldest, hence also the most aged.
  Entry* best(TimePoint now, int anchor_bucket, const Exclusions& skip) const {
    Entry* best = nullptr;
    int best_level = 0, best_dist = 0;
    auto consider = [&](Entry* e) {
      const int lvl = effective_level(e, now);
      const int dist = anchor_bucket < 0 ? 0 : std::abs(static_cast<int>(e->bucket) - anchor_bucket);
      if (!best || lvl < best_level ||
          (lvl == best_level &&
           (dist < best_dist || (dist == best_dist && e->info.enqueued_at < best->info.enqueued_at)))) {
        best = e;
        best_level = lvl;
        best_dist = dist;
      }
    };
    for (size_t i = 0; i < levels_.size(); ++i) {
      for (uint64_t m = levels_[i].nonempty & ~skip.buckets[i]; m; m &= m - 1) {
        consider(levels_[i].lists[std::countr_zero(m)].head);
      }
    }
    if (!skip.delayed && !delayed_.empty()) consider(delayed_.head);
    return best;
  }

  // The most recently queued request of the least urgent level below `priority` (late requests aside), or
  // nullptr: the one to give up when a more urgent request finds the queue full.
  Entry* newest_less_urgent_than(int priority) const {
    for (int level = static_cast<int>(levels_.size()) - 1; level > priority; --level) {
      Entry* newest = nullptr;
      for (uint64_t m = levels_[level].nonempty; m; m &= m - 1) {
        Entry* tail = levels_[level].lists[std::countr_zero(m)].tail;
        if (!newest || tail->info.enqueued_at >= newest->info.enqueued_at) newest = tail;
      }
      if (newest) return newest;
    }
    return nullptr;
  }

  // Every queued request, in no particular order.
  std::vector<Entry*> all() const {
    std::vector<Entry*> out;
    out.reserve(size_);
    for (const Level& l : levels_) {
      for (const List& list : l.lists) {
        for (Entry* e = list.head; e; e = e->next) out.push_back(e);
      }
    }
    for (Entry* e = delayed_.head; e; e = e->next) out.push_back(e);
    return out;
  }

 private:
  struct List {
    Entry* head = nullptr;
    Entry* tail = nullptr;
    void push_back(Entry* e) {
      e->prev = tail;
      e->next = nullptr;
      (tail ? tail->next : head) = e;
      tail = e;
    }
    void push_front(Entry* e) {
      e->prev = nullptr;
      e->next = head;
      (head ? head->prev : tail) = e;
      head = e;
    }
    void erase(Entry* e) {
      (e->prev ? e->prev->next : head) = e->next;
      (e->next ? e->next->prev : tail) = e->prev;
      e->prev = e->next = nullptr;
    }
    bool empty() const { return head == nullptr; }
  };

  struct Level {
    List lists[kBuckets];
    uint64_t nonempty = 0;  // bit b set: lists[b] is not empty
    size_t size = 0;
    size_t cost = 0;
  };

  void link(Entry* e, bool front) {
    Level& l = levels_[e->info.priority];
    List& list = e->delayed ? delayed_ : l.lists[e->bucket];
    front ? list.push_front(e) : list.push_back(e);
    if (!e->delayed) l.nonempty |= uint64_t{1} << e->bucket;
    ++l.size;
    l.cost += e->info.cost;
    ++size_;
    cost_ += e->info.cost;
  }

  std::vector<Level> levels_;
  List delayed_;
  Duration aging_;
  size_t size_ = 0;
  size_t cost_ = 0;
};

}  // namespace brisk::batch::internal
