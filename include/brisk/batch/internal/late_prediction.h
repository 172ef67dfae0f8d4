// Internal: not part of brisk's API and may change without notice; use brisk/batch/batcher.h.
// LatePrediction: what BatchPolicy::reject_predicted_late knows, and how long it predicts a request will wait for its
// result. Work is a fluid, in cost units, shared by the executors at the measured throughput: what is left of the
// batches in flight, the cost queued ahead at the request's level and above, the request (or group) itself and, when
// every executor is busy, the rest of its own batch, which fills up behind it with the requests that arrive (at the
// measured arrival rate) until the work ahead of it is done, up to the batch limit (the whole limit while no rate is
// measured yet).
//
//   LatePrediction p;
//   p.batch_started(seq, now, cost);  ...  p.batch_finished(seq, cost, compute_time);
//   p.accepted(now, n);
//   Duration wait = p.wait(now, {.count = queued_ahead, .cost = cost_ahead}, n, group_cost, limit, busy, executors);
//
// Thread safety: none; the batcher calls it under its own lock.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "brisk/core/clock.h"

namespace brisk::batch::internal {

class LatePrediction {
 public:
  struct Ahead {
    size_t count = 0;  // requests queued ahead (this level and above)
    size_t cost = 0;   // their cost
  };

  void batch_started(uint64_t sequence, TimePoint now, size_t cost) { running_.push_back({sequence, now, cost}); }
  // compute: the batch function's time; a batch that computed nothing (cost 0) is not a throughput sample.
  void batch_finished(uint64_t sequence, size_t cost, Duration compute) {
    std::erase_if(running_, [&](const Running& r) { return r.sequence == sequence; });
    if (compute <= Duration::zero() || cost == 0) return;
    const double rate = static_cast<double>(cost) / std::chrono::duration<double>(compute).count();
    throughput_ = batches_ == 0 ? rate : 0.8 * throughput_ + 0.2 * rate;
    ++batches_;
  }
  // n requests accepted at submit: the arrival rate is an average over windows of at least 20 ms, each weighted 0.3.
  void accepted(TimePoint now, size_t n) {
    if (window_count_ == 0 && window_start_ == TimePoint{}) window_start_ = now;
    window_count_ += n;
    const double seconds = std::chrono::duration<double>(now - window_start_).count();
    if (seconds < 0.02) return;
    const double rate = static_cast<double>(window_count_) / seconds;
    arrivals_ = arrivals_ == 0 ? rate : 0.7 * arrivals_ + 0.3 * rate;
    window_count_ = 0;
    window_start_ = now;
  }

  // How long until a group of n requests (group_cost) submitted now has its results; zero before 8 batches have been
  // measured. executors_busy: every executor is computing (the group's batch then waits and fills).
  Duration wait(TimePoint now, Ahead ahead, size_t n, size_t group_cost, size_t batch_limit, bool executors_busy,
                int executors) const {
    const double rate = batches_ >= 8 ? throughput_ : 0;
    if (rate <= 0) return Duration::zero();
    double work = 0;
    for (const Running& r : running_) {
      const double done = rate * std::chrono::duration<double>(now - r.started).count();
      work += std::max(0.0, static_cast<double>(r.cost) - done);
    }
    work += static_cast<double>(ahead.cost);
    const double capacity = rate * executors;  // cost per second, all executors together
    const size_t limit = std::max<size_t>(batch_limit, 1);
    const size_t position = (ahead.count + n) % limit;  // requests in the group's batch so far, when not 0
    double fill = 0;
    if (executors_busy && position != 0) {
      fill = static_cast<double>(limit - position);
      if (arrivals_ > 0) fill = std::min(fill, arrivals_ * work / capacity);
    }
    const double mean_cost = static_cast<double>(ahead.cost + group_cost) / static_cast<double>(ahead.count + n);
    work += static_cast<double>(group_cost) + fill * mean_cost;
    return std::chrono::round<Duration>(std::chrono::duration<double>(work / capacity));
  }

 private:
  struct Running {
    uint64_t sequence = 0;
    TimePoint started;
    size_t cost = 0;
  };
  std::vector<Running> running_;  // the batches being computed
  double throughput_ = 0;         // cost per second the batch function sustains (an average, each batch weighted 0.2)
  uint64_t batches_ = 0;
  double arrivals_ = 0;  // requests per second; 0 until the first window closes
  TimePoint window_start_{};
  size_t window_count_ = 0;
};

}  // namespace brisk::batch::internal
