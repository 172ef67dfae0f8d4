// Internal to brisk: when the CPUs of brisk's thread team are busy with other work, run on one thread.
//
// A parallel region is a barrier: it ends when its slowest member ends. When another process holds the CPU a team
// member needs, that member starts its chunk late, after a scheduler time slice, and the members that did start
// spin at the barrier, taking the CPU the late one waits for. A forward pass is about a hundred regions, so one
// busy process on a 2-core host turned brisk's P99 from 2.7 ms into 126 ms (benchmarks/RESULTS.md, "Compute
// threads that share the CPU"). One thread has no barrier to wait at.
//
// ContentionGate decides from what the regions see: a region whose members started more than late_start after it
// opened is late. Two late regions within confirm_window make the process contended for a hold, during which
// num_threads() is 1: a busy host makes many regions late in a row, while a single late one is more often an idle
// virtual CPU waking slowly or the process creating its workers, which one thread for a quarter of a second would
// punish (one late region at start-up held one of two threads for most of a 300-call benchmark). When the hold
// expires the next regions run the whole team again, which is the probe: a probe that is late again within a hold
// of the expiry doubles the hold (up to 16x) at once, since the contention persists and each probe costs one late
// region; one that is not late ends the episode, and the next episode needs two late regions again. Late regions
// that opened before the hold ended (other host threads' regions in flight when it began) are counted only.
//
// Thread safety: every member may be called concurrently.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace brisk::internal {

class ContentionGate {
 public:
  static constexpr int kMaxDoublings = 4;

  ContentionGate(int64_t late_start_ns, int64_t base_hold_ns, int64_t confirm_window_ns)
      : late_start_ns_(late_start_ns),
        base_hold_ns_(base_hold_ns),
        confirm_window_ns_(confirm_window_ns),
        hold_ns_(base_hold_ns) {}

  // A region that opened at start_ns and whose last member started at last_member_start_ns. True when late.
  bool region(int64_t start_ns, int64_t last_member_start_ns) {
    int64_t until = contended_until_ns_.load(std::memory_order_relaxed);
    if (last_member_start_ns - start_ns <= late_start_ns_) {
      // On time, and opened after the hold: a probe that found the CPUs free ends the episode.
      if (until != 0 && start_ns >= until &&
          contended_until_ns_.compare_exchange_strong(until, 0, std::memory_order_relaxed)) {
        hold_ns_.store(base_hold_ns_, std::memory_order_relaxed);
        last_late_ns_.store(0, std::memory_order_relaxed);
      }
      return false;
    }
    late_regions_.fetch_add(1, std::memory_order_relaxed);
    // Opened before the hold ended: a region that was in flight when the gate closed (another host thread's), not a
    // probe. It is counted but neither extends nor doubles the hold.
    if (until != 0 && start_ns < until) return true;
    const int64_t hold = hold_ns_.load(std::memory_order_relaxed);
    const bool persists = until != 0 && last_member_start_ns < until + hold;
    if (!persists) {
      // A new episode needs a second late region within the window of the first.
      const int64_t previous = last_late_ns_.exchange(last_member_start_ns, std::memory_order_relaxed);
      if (previous == 0 || last_member_start_ns - previous > confirm_window_ns_) return true;
    }
    const int64_t next_hold = persists ? std::min(hold * 2, base_hold_ns_ << kMaxDoublings) : base_hold_ns_;
    hold_ns_.store(next_hold, std::memory_order_relaxed);
    contended_until_ns_.store(last_member_start_ns + next_hold, std::memory_order_relaxed);
    return true;
  }
  bool contended(int64_t now_ns) const {
    const int64_t until = contended_until_ns_.load(std::memory_order_relaxed);
    return until != 0 && now_ns < until;
  }
  int64_t hold_ns() const { return hold_ns_.load(std::memory_order_relaxed); }
  uint64_t late_regions() const { return late_regions_.load(std::memory_order_relaxed); }

 private:
  const int64_t late_start_ns_;
  const int64_t base_hold_ns_;
  const int64_t confirm_window_ns_;
  std::atomic<int64_t> hold_ns_;
  std::atomic<int64_t> last_late_ns_{0};  // the latest late region outside a hold's probe
  std::atomic<int64_t> contended_until_ns_{0};
  std::atomic<uint64_t> late_regions_{0};
};

}  // namespace brisk::internal
