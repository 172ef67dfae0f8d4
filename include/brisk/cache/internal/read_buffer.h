// Internal: not part of brisk's API and may change without notice; use brisk/cache/cache.h.
// ReadBuffer: the hits a cache shard served without its lock, waiting to be applied to its policy (Caffeine's
// striped read buffer). A hit records its key's hash in its CPU's stripe, a small ring, and counts itself there;
// whoever next holds the shard's lock drains every stripe, oldest first, into the policy (LRU order, frequency
// sketch, hill climber). The buffer is lossy: a hit that finds its stripe full is still counted and served, but its
// policy update is dropped (so is one that loses a race for a slot). Hashes, not node pointers, are recorded, so a
// record of an entry removed meanwhile is harmless: the drain looks the hash up and finds nothing.
// Stripes are chosen by the CPU the thread runs on (sched_getcpu(), which reads the kernel's rseq area), one per CPU
// up to kMaxStripes, so that threads running at once never share a stripe's cache lines; a thread that is moved to
// another CPU mid-record is still correct, only slower.
//
// LazyReadBuffer holds a shard's ReadBuffer, made by its first lock-free hit: a shard never hit that way pays nothing.
//
// Thread safety: record(), hits() and LazyReadBuffer::get() from any thread at once; drain() only under the shard's
// lock.
#pragma once

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <thread>

namespace brisk::cache::internal {

class ReadBuffer {
 public:
  static constexpr uint64_t kSlots = 32;    // per stripe (a power of two)
  static constexpr uint64_t kDrainAt = 16;  // pending records at which a reader tries to drain
  static constexpr uint32_t kMaxStripes = 16;

  ReadBuffer()
      : mask_(std::bit_ceil(std::clamp(std::thread::hardware_concurrency(), 1u, kMaxStripes)) - 1),
        stripes_(new Stripe[mask_ + 1]) {}

  // Records a hit on `hash` (not 0: an empty slot holds 0); returns how many records its stripe now holds
  // (kSlots + 1: full, dropped).
  uint64_t record(uint64_t hash) {
    const int cpu = sched_getcpu();
    Stripe& s = stripes_[static_cast<uint32_t>(cpu < 0 ? 0 : cpu) & mask_];
    s.hits.fetch_add(1, std::memory_order_relaxed);
    uint64_t tail = s.tail.load(std::memory_order_relaxed);
    const uint64_t head = s.head.load(std::memory_order_acquire);
    if (tail - head >= kSlots) return kSlots + 1;
    if (!s.tail.compare_exchange_strong(tail, tail + 1, std::memory_order_relaxed)) return kSlots + 1;
    s.slots[tail & (kSlots - 1)].store(hash, std::memory_order_release);
    return tail + 1 - head;
  }

  // Applies every complete record, oldest first per stripe. Caller holds the shard's lock.
  template <typename Apply>
  void drain(Apply&& apply) {
    for (uint32_t i = 0; i <= mask_; ++i) {
      Stripe& s = stripes_[i];
      uint64_t head = s.head.load(std::memory_order_relaxed);
      const uint64_t tail = s.tail.load(std::memory_order_acquire);
      for (; head != tail; ++head) {
        std::atomic<uint64_t>& slot = s.slots[head & (kSlots - 1)];
        const uint64_t hash = slot.load(std::memory_order_acquire);
        if (hash == 0) break;  // its writer has reserved it but not written it yet: the next drain takes it
        slot.store(0, std::memory_order_relaxed);
        apply(hash);
      }
      s.head.store(head, std::memory_order_release);
    }
  }

  uint64_t hits() const {
    uint64_t n = 0;
    for (uint32_t i = 0; i <= mask_; ++i) n += stripes_[i].hits.load(std::memory_order_relaxed);
    return n;
  }

 private:
  struct alignas(64) Stripe {
    std::atomic<uint64_t> tail{0};  // producers reserve slots here
    std::atomic<uint64_t> hits{0};
    alignas(64) std::atomic<uint64_t> head{0};          // the drain's position, on its own line
    std::array<std::atomic<uint64_t>, kSlots> slots{};  // 0: empty
  };

  uint32_t mask_;  // stripes - 1
  std::unique_ptr<Stripe[]> stripes_;
};

class LazyReadBuffer {
 public:
  LazyReadBuffer() = default;
  ~LazyReadBuffer() { delete buffer_.load(std::memory_order_relaxed); }
  LazyReadBuffer(const LazyReadBuffer&) = delete;
  LazyReadBuffer& operator=(const LazyReadBuffer&) = delete;

  ReadBuffer& get() {
    ReadBuffer* b = buffer_.load(std::memory_order_acquire);
    if (b == nullptr) {
      auto fresh = std::make_unique<ReadBuffer>();
      if (buffer_.compare_exchange_strong(b, fresh.get(), std::memory_order_acq_rel)) b = fresh.release();
    }
    return *b;
  }
  template <typename Apply>
  void drain(Apply&& apply) {
    if (ReadBuffer* b = buffer_.load(std::memory_order_acquire)) b->drain(apply);
  }
  uint64_t hits() const {
    const ReadBuffer* b = buffer_.load(std::memory_order_acquire);
    return b == nullptr ? 0 : b->hits();
  }

 private:
  std::atomic<ReadBuffer*> buffer_{nullptr};
};

}  // namespace brisk::cache::internal
