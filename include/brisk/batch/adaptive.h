// SLO-adaptive batch sizing: an AIMD controller in the style of Clipper and the seeds' AutoTuner. It watches
// the end-to-end latency (queue + compute) of completed requests in windows, and
//   - when the window's P99 exceeds the target, shrinks the batch limit and the queue delay by 20%;
//   - when the P99 is well under the target (below 70% of it), grows them by 15%;
//   - in between, leaves them alone. That dead band is what keeps it stable: under steady load it settles
//     on one value or alternates between two neighbouring steps, never wider.
// A latency measured under an older setting (a batch formed before the last change) is dropped, so a window
// that straddles a change cannot push the controller a second step on stale data.
// Batch limits stay multiples of `multiple` (e.g. 8) between `min_batch_size` and the policy's maximum.
//
//   AdaptiveSizer sizer(policy.adaptive, /*max_batch=*/64, /*max_delay=*/2ms, /*multiple=*/8);
//   sizer.record(latency, generation);  // per completed request; generation() when its batch was formed
//   size_t limit = sizer.batch_limit();
//
// Thread safety: none; the batcher calls it under its own lock.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "brisk/batch/clock.h"

namespace brisk::batch {

struct AdaptivePolicy {
  bool enabled = false;
  Duration p99_target = std::chrono::milliseconds(200);
  double decrease_factor = 0.8;    // multiplicative decrease when the P99 misses the target
  double increase_factor = 1.15;   // growth when the P99 is well under it
  double well_under = 0.7;         // "well under" means P99 < well_under * target
  size_t window = 256;             // completed requests per decision
  size_t min_batch_size = 1;
  Duration min_queue_delay = Duration::zero();
};

class AdaptiveSizer {
 public:
  AdaptiveSizer(const AdaptivePolicy& policy, size_t max_batch_size, Duration max_queue_delay, size_t multiple)
      : policy_(policy),
        multiple_(std::max<size_t>(1, multiple)),
        max_batch_(std::max<size_t>(1, max_batch_size)),
        min_batch_(std::clamp<size_t>(policy.min_batch_size, 1, max_batch_)),
        max_delay_(max_queue_delay),
        batch_limit_(max_batch_),
        delay_(max_queue_delay) {
    window_.reserve(policy_.window);
  }

  size_t batch_limit() const { return batch_limit_; }
  Duration queue_delay() const { return delay_; }
  size_t decisions() const { return decisions_; }
  // Changes whenever the limit or the delay changes.
  uint64_t generation() const { return generation_; }
  Duration last_window_p99() const { return last_p99_; }

  void record(Duration latency) {
    if (!policy_.enabled) return;
    window_.push_back(latency);
    if (window_.size() >= std::max<size_t>(1, policy_.window)) decide();
  }
  // The same for a request whose batch was formed under `generation`: dropped when the setting has changed since.
  void record(Duration latency, uint64_t generation) {
    if (generation == generation_) record(latency);
  }

 private:
  void decide() {
    const size_t rank = (window_.size() * 99 + 99) / 100 - 1;  // nearest-rank P99
    std::nth_element(window_.begin(), window_.begin() + rank, window_.end());
    last_p99_ = window_[rank];
    window_.clear();
    ++decisions_;
    const size_t old_limit = batch_limit_;
    const Duration old_delay = delay_;
    if (last_p99_ > policy_.p99_target) {
      batch_limit_ = step_down(batch_limit_);
      delay_ = std::max(policy_.min_queue_delay,
                        Duration(static_cast<int64_t>(delay_.count() * policy_.decrease_factor)));
    } else if (last_p99_.count() < policy_.well_under * policy_.p99_target.count()) {
      batch_limit_ = step_up(batch_limit_);
      const auto grown = Duration(static_cast<int64_t>(std::ceil(delay_.count() * policy_.increase_factor)));
      delay_ = std::min(max_delay_, std::max(grown, delay_ + Duration(1000)));
    }
    if (batch_limit_ != old_limit || delay_ != old_delay) ++generation_;
  }

  // The ladder of sizes: multiples of `multiple_` (plus the bounds). Every step moves at least one rung.
  size_t step_down(size_t size) const {
    size_t target = static_cast<size_t>(std::floor(size * policy_.decrease_factor));
    target = target / multiple_ * multiple_;
    if (target >= size) target = size > multiple_ ? size - multiple_ : size - 1;
    return std::clamp(target, min_batch_, max_batch_);
  }
  size_t step_up(size_t size) const {
    size_t target = static_cast<size_t>(std::ceil(size * policy_.increase_factor));
    target = (target + multiple_ - 1) / multiple_ * multiple_;
    if (target <= size) target = size + 1;
    return std::clamp(target, min_batch_, max_batch_);
  }

  AdaptivePolicy policy_;
  size_t multiple_, max_batch_, min_batch_;
  Duration max_delay_;
  size_t batch_limit_;
  Duration delay_;
  std::vector<Duration> window_;
  Duration last_p99_{0};
  size_t decisions_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace brisk::batch
