// The batcher's policy and the small value types it exchanges with callers. Every field has a documented
// default; BatchPolicy::validate() names the first field that is out of range.
//
//   brisk::batch::BatchPolicy policy;
//   policy.max_batch_size = 32;
//   policy.max_queue_delay = std::chrono::milliseconds(2);
//   policy.preferred_batch_multiple = 8;
//   policy.max_batch_tokens = 8192;                 // padded: batch size x longest request
//   policy.levels[0].default_timeout = std::chrono::milliseconds(200);   // real-time
//
// Thread safety: plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "brisk/batch/adaptive.h"
#include "brisk/core/clock.h"
#include "brisk/core/sequences.h"
#include "brisk/core/status.h"

namespace brisk::batch {

using RequestId = uint64_t;  // 1, 2, 3, ... in admission order; 0 is never a valid id

// What happens to a request whose deadline passes before it runs.
enum class DeadlineAction : uint8_t {
  kReject,  // it completes with DEADLINE_EXCEEDED and never reaches the batch function
  kDelay,   // the deadline is soft (Triton's DELAY): the request runs after every request that is not late
};

enum class ShutdownMode : uint8_t {
  kDrain,   // run everything queued (deadlines still apply), then stop
  kCancel,  // complete everything queued with SHUTDOWN at once; batches already running finish normally
};

struct PriorityLevel {
  std::string name;             // used in metric labels
  size_t max_queue_size = 0;    // queued requests at this level; 0: only the total limit applies
  double rate_limit = 0;        // admitted requests per second (token bucket); 0: unlimited
  double burst = 0;             // bucket depth; 0: max(1, rate_limit)
  Duration default_timeout{0};  // deadline for requests that give none; 0: none
  DeadlineAction deadline_action = DeadlineAction::kReject;
};

// Three levels: real-time dialogue, asynchronous tasks, bulk. No default timeouts; for an interactive assistant
// set, e.g., levels[0].default_timeout = 200ms (an answer's whole budget) and levels[1].default_timeout = 500ms.
inline std::vector<PriorityLevel> default_priority_levels() {
  return {PriorityLevel{.name = "realtime"}, PriorityLevel{.name = "async"}, PriorityLevel{.name = "bulk"}};
}

struct BatchPolicy {
  size_t max_batch_size = 32;
  // How long a free executor waits for a batch to fill, counted from the oldest queued request. Batches are
  // formed only when an executor is free, so under load they fill while the executors are busy.
  Duration max_queue_delay = std::chrono::milliseconds(1);
  // When more requests are queued than one batch takes, the batch is rounded down to a multiple of this
  // (1: off). A batch formed because the delay expired, or that empties the queue, is never held back.
  size_t preferred_batch_multiple = 1;
  // Padded cost per batch, batch size x the largest request cost; 0: unlimited. A request whose cost alone
  // exceeds it is rejected at submit.
  size_t max_batch_tokens = 0;
  // Group requests whose costs fall in the same power-of-two bucket, to cut padding: a batch is anchored on
  // its most urgent request and takes others only from buckets within bucket_spread of the anchor's (1: costs
  // up to about 4x apart); the rest wait for a batch of their own length. Off: FIFO within a level, any mix.
  // For a padding-free batch function (brisk's packed encoder) padding costs nothing; turn it off there.
  bool length_bucketing = true;
  int bucket_spread = 1;
  // Bytes estimate per batch (BatchFunctions::estimate_bytes) must stay <= memory_headroom x memory_budget_bytes.
  size_t memory_budget_bytes = 0;  // 0: no memory limit
  double memory_headroom = 0.8;
  std::vector<PriorityLevel> levels = default_priority_levels();  // index 0 is the most urgent
  // Strict priority with aging: a request's effective level improves by one per aging_interval it waits,
  // so a level-p request waits at most p x aging_interval before it competes as level 0. 0: no aging.
  Duration aging_interval = std::chrono::milliseconds(100);
  size_t max_queue_size = 4096;  // queued requests over all levels
  // When the total queue is full, a request evicts the newest queued request of the least urgent level below
  // its own (which completes with RESOURCE_EXHAUSTED) instead of being refused, so low-priority traffic cannot
  // lock high-priority traffic out of a shared queue.
  bool evict_lower_priority = false;
  int executor_threads = 1;          // 0: no threads; the caller drives run_ready() (tests, single loops)
  int max_inflight_batches = 0;      // batches running at once; 0: executor_threads
  bool in_order_completion = false;  // callbacks in admission order (a slow request holds back later ones)
  // Reject at submit (RESOURCE_EXHAUSTED) a request whose deadline cannot be met, at the throughput measured over
  // recent batches; so under overload the excess fails in microseconds instead of expiring in the queue. The
  // prediction counts what is left of the batches in flight, the work queued ahead (its level and more urgent
  // ones), and the request's own batch as a whole: when every executor is busy, that batch fills up behind the
  // request (to the batch limit, at the mean cost queued) before it runs. Needs 8 measured batches first.
  bool reject_predicted_late = false;
  // Complete a request whose batch finished past its deadline with DEADLINE_EXCEEDED instead of its result (levels
  // with DeadlineAction::kReject only), so that no answer arrives later than promised. Its result is computed and
  // dropped; BatcherStats::expired counts it.
  bool fail_late_results = false;
  AdaptivePolicy adaptive;

  Status validate() const;
};

// The shape of a candidate batch, for the memory estimate: brisk/core/sequences.h's.
using ::brisk::BatchShape;

// A submit refused by its level's rate limit is RESOURCE_EXHAUSTED with this payload, so that a caller can tell a
// quota (PriorityLevel::rate_limit) from overload; rate_limited_error() makes one, is_rate_limited() tests for it.
inline constexpr char kRateLimitedPayload[] = "brisk.batch.rate_limited";
inline Status rate_limited_error(const std::string& message) {
  Status s = absl::ResourceExhaustedError(message);
  s.SetPayload(kRateLimitedPayload, absl::Cord("1"));
  return s;
}
inline bool is_rate_limited(const Status& s) {
  return s.code() == absl::StatusCode::kResourceExhausted && s.GetPayload(kRateLimitedPayload).has_value();
}

struct SubmitOptions {
  int priority = 0;                  // an index into BatchPolicy::levels
  TimePoint deadline = kNoDeadline;  // on the batcher's clock; kNoDeadline: the level's default_timeout
};

// What the batch function learns about each request and about the batch.
struct RequestInfo {
  RequestId id = 0;
  int priority = 0;
  size_t cost = 0;
  TimePoint enqueued_at;
  TimePoint deadline = kNoDeadline;
};

struct BatchInfo {
  uint64_t sequence = 0;  // 0, 1, 2, ... in formation order
  TimePoint formed_at;
  TimePoint started_at;  // after the pre-execution deadline check
  BatchShape shape;
  size_t padded_cost = 0;  // shape.size x shape.max_cost
  std::span<const RequestInfo> requests;
};

inline Status BatchPolicy::validate() const {
  auto bad = [](const std::string& what) { return absl::InvalidArgumentError("BatchPolicy." + what); };
  if (max_batch_size == 0) return bad("max_batch_size is 0; expected at least 1");
  if (max_queue_delay < Duration::zero()) return bad("max_queue_delay is negative; expected >= 0");
  if (preferred_batch_multiple == 0) return bad("preferred_batch_multiple is 0; expected >= 1 (1 turns it off)");
  if (memory_headroom <= 0 || memory_headroom > 1)
    return bad("memory_headroom is " + std::to_string(memory_headroom) + "; expected in (0, 1]");
  if (levels.empty()) return bad("levels is empty; expected at least one priority level");
  if (bucket_spread < 0) return bad("bucket_spread is negative; expected >= 0 (0: one bucket per batch)");
  if (aging_interval < Duration::zero()) return bad("aging_interval is negative; expected >= 0 (0: no aging)");
  if (max_queue_size == 0) return bad("max_queue_size is 0; expected at least 1");
  if (executor_threads < 0 || executor_threads > 256)
    return bad("executor_threads is " + std::to_string(executor_threads) + "; expected 0..256");
  if (max_inflight_batches < 0) return bad("max_inflight_batches is negative; expected >= 0");
  for (size_t i = 0; i < levels.size(); ++i) {
    const PriorityLevel& l = levels[i];
    const std::string name = "levels[" + std::to_string(i) + "].";
    if (l.rate_limit < 0) return bad(name + "rate_limit is negative; expected >= 0 (0: unlimited)");
    if (l.burst < 0) return bad(name + "burst is negative; expected >= 0");
    if (l.default_timeout < Duration::zero()) return bad(name + "default_timeout is negative; expected >= 0");
  }
  const AdaptivePolicy& a = adaptive;
  if (a.enabled) {
    if (a.p99_target <= Duration::zero() || a.p99_target > kMaxLatencyTarget) {
      return bad("adaptive.p99_target is " +
                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(a.p99_target).count()) +
                 " ms; expected > 0 and at most 3600000 ms (1 h)");
    }
    if (!(a.decrease_factor > 0 && a.decrease_factor < 1)) return bad("adaptive.decrease_factor must be in (0, 1)");
    if (!(a.increase_factor > 1)) return bad("adaptive.increase_factor must be > 1");
    if (!(a.well_under > 0 && a.well_under < 1)) return bad("adaptive.well_under must be in (0, 1)");
    if (a.window == 0) return bad("adaptive.window is 0; expected at least 1");
  }
  return absl::OkStatus();
}

}  // namespace brisk::batch
