// Internal: not part of brisk's API and may change without notice; use brisk/cache/cache.h.
// HillClimber: sizes the admission window of a W-TinyLFU shard by hill climbing on the hit rate, as Caffeine
// does. Each sample period (a number of lookups, 10 x the expected entry count) it compares the period's hit
// rate with the previous one: if the hit rate did not drop it keeps moving the window in the same direction,
// otherwise it reverses. The step starts at 6.25% of the capacity and decays by 2% per period, so the window
// settles; a hit-rate jump of 5 points or more (a workload change) restarts the step at full size.
//
//   HillClimber climber(/*capacity=*/max_weight, /*sample_size=*/10 * entries);
//   climber.record(hit);
//   if (int64_t delta = climber.take_adjustment(); delta != 0) grow_or_shrink_window(delta);
//
// The first move shrinks the window (Caffeine's choice: the frequency-based main region is usually the better
// bet); a recency-skewed workload then makes the hit rate rise as the window grows, and the climber follows it.
// Thread safety: none; a cache shard calls it under its own lock.
#pragma once

#include <cmath>
#include <cstdint>

namespace brisk::cache::internal {

class HillClimber {
 public:
  static constexpr double kStepFraction = 0.0625;    // of the capacity
  static constexpr double kStepDecay = 0.98;         // per sample period without a big change
  static constexpr double kRestartThreshold = 0.05;  // hit-rate change that restarts the full step

  HillClimber(uint64_t capacity = 0, uint64_t sample_size = 0) { reset(capacity, sample_size); }

  void reset(uint64_t capacity, uint64_t sample_size) {
    capacity_ = capacity;
    sample_size_ = sample_size == 0 ? 1 : sample_size;
    step_ = -kStepFraction * static_cast<double>(capacity);
    previous_hit_rate_ = 0;
    hits_ = misses_ = 0;
    adjustment_ = 0;
  }
  void set_sample_size(uint64_t sample_size) { sample_size_ = sample_size == 0 ? 1 : sample_size; }

  void record(bool hit) {
    if (hit) {
      ++hits_;
    } else {
      ++misses_;
    }
    if (hits_ + misses_ >= sample_size_) climb();
  }

  // Forgets the current sample (e.g. while the shard is not yet half full the hit rate says nothing).
  void discard_sample() { hits_ = misses_ = 0; }

  // The window change (in weight units, + grows) decided at the end of the last period; 0 when none pending.
  int64_t take_adjustment() {
    const int64_t a = adjustment_;
    adjustment_ = 0;
    return a;
  }

  double step() const { return step_; }
  double previous_hit_rate() const { return previous_hit_rate_; }

 private:
  void climb() {
    const double requests = static_cast<double>(hits_ + misses_);
    const double hit_rate = static_cast<double>(hits_) / requests;
    const double change = hit_rate - previous_hit_rate_;
    const double amount = change >= 0 ? step_ : -step_;
    const double next_step = std::abs(change) >= kRestartThreshold
                                 ? kStepFraction * static_cast<double>(capacity_) * (amount >= 0 ? 1 : -1)
                                 : kStepDecay * amount;
    previous_hit_rate_ = hit_rate;
    step_ = next_step;
    adjustment_ += static_cast<int64_t>(std::llround(amount));
    hits_ = misses_ = 0;
  }

  uint64_t capacity_ = 0;
  uint64_t sample_size_ = 1;
  double step_ = 0;
  double previous_hit_rate_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  int64_t adjustment_ = 0;
};

}  // namespace brisk::cache::internal
