// Clocks for the batcher and the caches: the steady clock in production, a manual clock in tests so that every
// timing decision (queue delay, deadlines, aging, rate limits, expiry) is deterministic.
//
//   auto clock = std::make_shared<brisk::ManualClock>();
//   policy.executor_threads = 0;                       // the test drives the batcher with run_ready()
//   auto batcher = Batcher<Req, Res>::create(policy, fns, clock);
//   ... submit ...
//   clock->advance(std::chrono::milliseconds(5));      // the queue delay has now passed
//   (*batcher)->run_ready();
//
// Thread safety: now() and wait_until() may be called from any thread; ManualClock::advance() too.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace brisk {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::steady_clock::time_point;
inline constexpr TimePoint kNoDeadline = TimePoint::max();

// now + timeout, saturating: a timeout past the clock's range is no deadline rather than an overflow.
inline TimePoint deadline_after(TimePoint now, Duration timeout) {
  return timeout >= kNoDeadline - now ? kNoDeadline : now + timeout;
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Blocks until `cv` is notified or `deadline` (on this clock) has passed; spurious wake-ups are allowed,
  // callers re-check their condition.
  virtual void wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, TimePoint deadline) = 0;
};

class SteadyClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  void wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, TimePoint deadline) override {
    if (deadline == kNoDeadline) {
      cv.wait(lock);
    } else {
      cv.wait_until(lock, deadline);
    }
  }
};

// Time moves only when advance() is called. Waiters poll every 200 us of real time, so a thread blocked on a
// manual deadline notices an advance() without the clock knowing its condition variables.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint(std::chrono::hours(1)))
      : now_ns_(start.time_since_epoch().count()) {}
  TimePoint now() const override { return TimePoint(Duration(now_ns_.load(std::memory_order_acquire))); }
  void advance(Duration d) { now_ns_.fetch_add(d.count(), std::memory_order_acq_rel); }
  void wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, TimePoint deadline) override {
    if (now() < deadline) cv.wait_for(lock, std::chrono::microseconds(200));
  }

 private:
  std::atomic<int64_t> now_ns_;
};

}  // namespace brisk
