// SLO-adaptive batch sizing: a feedback controller after Clipper's adaptive batching (Crankshaw et al., NSDI 2017),
// but with multiplicative increase and decrease where Clipper's AIMD increases additively. Per window of batches it
// compares
//   - the P99 of batch compute time with a compute budget, compute_share x p99_target (by default half of it:
//     a request that waits for the batch in flight and then runs in the next one stays within the target).
//     Over the budget the batch limit shrinks by 20%; well under it (below 70%), and only when batches
//     actually reached the limit, it grows by 15%;
//   - the P99 of end-to-end latency (queue + compute) with the target: over it the queue delay shrinks by
//     20%, well under it the delay grows by 15% (up to the policy's max_queue_delay).
// Sizing on compute time rather than on end-to-end latency is what keeps overload from spiralling: when
// queueing makes requests late, smaller batches would only lower throughput and queue them longer; the queue
// is bounded by max_queue_size and deadlines instead. The dead band between 70% and 100% keeps it stable:
// under steady load the limit settles on one value or alternates between two neighbouring steps, never wider.
// Samples measured under an older setting (a batch formed before the last change) are dropped, so a window
// that straddles a change cannot push the controller a second step on stale data.
// Batch limits stay multiples of `multiple` (e.g. 8) between `min_batch_size` and the policy's maximum.
//
//   AdaptiveSizer sizer(policy.adaptive, /*max_batch=*/64, /*max_delay=*/2ms, /*multiple=*/8);
//   const uint64_t g = sizer.generation();           // when a batch is formed
//   sizer.record_latency(latency, g);                // per completed request
//   sizer.record_batch(size, compute_time, g);       // per batch; every `window` batches it decides
//   size_t limit = sizer.batch_limit();
//
// Thread safety: none; the batcher calls it under its own lock.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "brisk/core/clock.h"

namespace brisk::batch {

// AdaptivePolicy::p99_target's upper bound.
inline constexpr Duration kMaxLatencyTarget = std::chrono::hours(1);

struct AdaptivePolicy {
  bool enabled = false;
  Duration p99_target = std::chrono::milliseconds(200);  // end-to-end: queue + compute; at most kMaxLatencyTarget
  double compute_share = 0.5;                            // batch compute P99 may use this share of the target
  double decrease_factor = 0.8;                          // multiplicative decrease when over
  double increase_factor = 1.15;                         // growth when well under
  double well_under = 0.7;                               // "well under" means below well_under x the bound
  size_t window = 16;                                    // batches per decision
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
        delay_(max_queue_delay) {}

  size_t batch_limit() const { return batch_limit_; }
  Duration queue_delay() const { return delay_; }
  size_t decisions() const { return decisions_; }
  // Changes whenever the limit or the delay changes.
  uint64_t generation() const { return generation_; }
  Duration last_compute_p99() const { return last_compute_p99_; }
  Duration last_latency_p99() const { return last_latency_p99_; }
  Duration compute_budget() const {
    return Duration(static_cast<int64_t>(policy_.compute_share * static_cast<double>(policy_.p99_target.count())));
  }

  // One completed request of a batch formed under `generation`.
  void record_latency(Duration latency, uint64_t generation) {
    if (policy_.enabled && generation == generation_) latencies_.push_back(latency);
  }
  // One batch of `size` requests formed under `generation` that computed for `compute`.
  void record_batch(size_t size, Duration compute, uint64_t generation) {
    if (!policy_.enabled || generation != generation_) return;
    computes_.push_back(compute);
    largest_batch_ = std::max(largest_batch_, size);
    if (computes_.size() >= std::max<size_t>(1, policy_.window)) decide();
  }

 private:
  static Duration p99(std::vector<Duration>& v) {
    if (v.empty()) return Duration::zero();
    const size_t rank = (v.size() * 99 + 99) / 100 - 1;  // nearest rank
    std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(rank), v.end());
    return v[rank];
  }
  bool over(Duration d, Duration bound) const { return d > bound; }
  bool well_under(Duration d, Duration bound) const {
    return static_cast<double>(d.count()) < policy_.well_under * static_cast<double>(bound.count());
  }

  void decide() {
    last_compute_p99_ = p99(computes_);
    last_latency_p99_ = p99(latencies_);
    const bool batches_full = largest_batch_ >= batch_limit_;
    const bool have_latencies = !latencies_.empty();
    computes_.clear();
    latencies_.clear();
    largest_batch_ = 0;
    ++decisions_;
    const size_t old_limit = batch_limit_;
    const Duration old_delay = delay_;
    const Duration budget = compute_budget();
    if (over(last_compute_p99_, budget)) {
      batch_limit_ = step_down(batch_limit_);
    } else if (well_under(last_compute_p99_, budget) && batches_full) {
      batch_limit_ = step_up(batch_limit_);
    }
    if (have_latencies && over(last_latency_p99_, policy_.p99_target)) {
      delay_ = std::max(policy_.min_queue_delay,
                        Duration(static_cast<int64_t>(static_cast<double>(delay_.count()) * policy_.decrease_factor)));
    } else if (have_latencies && well_under(last_latency_p99_, policy_.p99_target)) {
      const auto grown =
          Duration(static_cast<int64_t>(std::ceil(static_cast<double>(delay_.count()) * policy_.increase_factor)));
      delay_ = std::min(max_delay_, std::max(grown, delay_ + Duration(1000)));
    }
    if (batch_limit_ != old_limit || delay_ != old_delay) ++generation_;
  }

  // The ladder of sizes: multiples of `multiple_` (plus the bounds). Every step moves at least one rung.
  size_t step_down(size_t size) const {
    size_t target = static_cast<size_t>(std::floor(static_cast<double>(size) * policy_.decrease_factor));
    target = target / multiple_ * multiple_;
    if (target >= size) target = size > multiple_ ? size - multiple_ : size - 1;
    return std::clamp(target, min_batch_, max_batch_);
  }
  size_t step_up(size_t size) const {
    size_t target = static_cast<size_t>(std::ceil(static_cast<double>(size) * policy_.increase_factor));
    target = (target + multiple_ - 1) / multiple_ * multiple_;
    if (target <= size) target = size + 1;
    return std::clamp(target, min_batch_, max_batch_);
  }

  AdaptivePolicy policy_;
  size_t multiple_, max_batch_, min_batch_;
  Duration max_delay_;
  size_t batch_limit_;
  Duration delay_;
  std::vector<Duration> computes_, latencies_;
  size_t largest_batch_ = 0;
  Duration last_compute_p99_{0}, last_latency_p99_{0};
  size_t decisions_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace brisk::batch
