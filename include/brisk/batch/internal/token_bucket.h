// Internal: not part of brisk's API and may change without notice; use brisk/batch/batcher.h.
// A token bucket: admits `rate` events per second on average, with bursts of up to `burst` events. The
// batcher keeps one per priority level to rate-limit admission.
//
//   TokenBucket bucket(/*rate=*/100, /*burst=*/10, clock.now());
//   if (!bucket.try_take(clock.now())) return absl::ResourceExhaustedError("rate limit");
//
// Thread safety: none; the batcher calls it under its own lock.
#pragma once

#include <algorithm>

#include "brisk/core/clock.h"

namespace brisk::batch::internal {

class TokenBucket {
 public:
  // rate <= 0 means unlimited. burst <= 0 means max(1, rate).
  TokenBucket(double rate, double burst, TimePoint now)
      : rate_(rate), burst_(burst > 0 ? burst : std::max(1.0, rate)), tokens_(burst_), last_(now) {}

  bool limited() const { return rate_ > 0; }

  // Takes n tokens if all are available, else none. Time going backwards (another clock) is treated as no time
  // passing.
  bool try_take(TimePoint now, double n = 1.0) {
    if (!limited()) return true;
    if (now > last_) {
      tokens_ = std::min(burst_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
      last_ = now;
    }
    if (tokens_ < n) return false;
    tokens_ -= n;
    return true;
  }

  double rate() const { return rate_; }
  double burst() const { return burst_; }

 private:
  double rate_;
  double burst_;
  double tokens_;
  TimePoint last_;
};

}  // namespace brisk::batch::internal
