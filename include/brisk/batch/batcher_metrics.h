// Metrics one Batcher keeps: queue, compute and end-to-end latency histograms, batch size, token and padding
// histograms, and counts of every way a request can end. BatcherStats is a consistent-enough copy for
// reports; write_prometheus() exposes it in Prometheus text format.
//
//   BatcherStats s = batcher->stats();
//   double p99_ms = s.latency.percentile(99) / 1e6;
//   metrics::PrometheusWriter w;
//   write_prometheus(w, s, "brisk_batcher", {{"model", "minilm"}});
//
// Thread safety: BatcherMetrics is updated from many threads (relaxed atomics); BatcherStats is a value.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "brisk/core/clock.h"
#include "brisk/batch/policy.h"
#include "brisk/core/export.h"
#include "brisk/metrics/counter.h"
#include "brisk/metrics/histogram.h"
#include "brisk/metrics/prometheus.h"

namespace brisk::batch {

struct BatcherStats {
  // Requests.
  uint64_t submitted = 0, completed = 0, failed = 0, expired = 0, cancelled = 0, shutdown = 0, evicted = 0;
  uint64_t rejected_overloaded = 0, rejected_deadline = 0, rejected_invalid = 0, rejected_shutdown = 0;
  uint64_t callback_exceptions = 0;
  // Batches and tokens.
  uint64_t batches = 0, failed_batches = 0, tokens = 0, padded_tokens = 0;
  // Distributions: latencies in nanoseconds.
  metrics::HistogramSnapshot queue_time, compute_time, latency, batch_size, batch_tokens, batch_padded_tokens;
  std::vector<metrics::HistogramSnapshot> queue_time_per_level;
  // Current state.
  size_t queued = 0;
  std::vector<size_t> queued_per_level;
  int inflight_batches = 0;
  size_t batch_limit = 0;  // the adaptive controller's current limit (the policy's max when it is off)
  Duration queue_delay{0};

  // Padded tokens that were padding: 1 - tokens / padded_tokens.
  double padding_waste() const { return padded_tokens ? 1.0 - static_cast<double>(tokens) / padded_tokens : 0.0; }
};

class BatcherMetrics {
 public:
  explicit BatcherMetrics(size_t levels) : queue_time_per_level_(levels) {}

  metrics::Counter submitted, completed, failed, expired, cancelled, shutdown, evicted;
  metrics::Counter rejected_overloaded, rejected_deadline, rejected_invalid, rejected_shutdown;
  metrics::Counter callback_exceptions;

  // One executed batch: per-request queue time (enqueue to start) and latency (enqueue to finish), per-batch
  // compute time, size and tokens.
  void record_batch(std::span<const RequestInfo> requests, const BatchShape& shape, TimePoint started,
                    TimePoint finished, bool ok) {
    for (const RequestInfo& r : requests) {
      const uint64_t queued = nanos(started - r.enqueued_at);
      queue_time_.record(queued);
      if (static_cast<size_t>(r.priority) < queue_time_per_level_.size()) {
        queue_time_per_level_[r.priority].record(queued);
      }
      latency_.record(nanos(finished - r.enqueued_at));
    }
    compute_time_.record(nanos(finished - started));
    batch_size_.record(shape.size);
    batch_tokens_.record(shape.total_cost);
    batch_padded_tokens_.record(shape.size * shape.max_cost);
    batches_.add(1);
    if (!ok) failed_batches_.add(1);
    tokens_.add(shape.total_cost);
    padded_tokens_.add(shape.size * shape.max_cost);
  }

  BatcherStats snapshot() const {
    BatcherStats s;
    s.submitted = submitted.value();
    s.completed = completed.value();
    s.failed = failed.value();
    s.expired = expired.value();
    s.cancelled = cancelled.value();
    s.shutdown = shutdown.value();
    s.evicted = evicted.value();
    s.rejected_overloaded = rejected_overloaded.value();
    s.rejected_deadline = rejected_deadline.value();
    s.rejected_invalid = rejected_invalid.value();
    s.rejected_shutdown = rejected_shutdown.value();
    s.callback_exceptions = callback_exceptions.value();
    s.batches = batches_.value();
    s.failed_batches = failed_batches_.value();
    s.tokens = tokens_.value();
    s.padded_tokens = padded_tokens_.value();
    s.queue_time = queue_time_.snapshot();
    s.compute_time = compute_time_.snapshot();
    s.latency = latency_.snapshot();
    s.batch_size = batch_size_.snapshot();
    s.batch_tokens = batch_tokens_.snapshot();
    s.batch_padded_tokens = batch_padded_tokens_.snapshot();
    for (const metrics::Histogram& h : queue_time_per_level_) s.queue_time_per_level.push_back(h.snapshot());
    return s;
  }

 private:
  static uint64_t nanos(Duration d) { return d.count() > 0 ? static_cast<uint64_t>(d.count()) : 0; }

  metrics::Histogram queue_time_, compute_time_, latency_, batch_size_, batch_tokens_, batch_padded_tokens_;
  std::vector<metrics::Histogram> queue_time_per_level_;
  metrics::Counter batches_, failed_batches_, tokens_, padded_tokens_;
};

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Writes `stats` as Prometheus families named `<prefix>_...` (latencies in seconds), each with `labels`;
// per-level series add a `priority` label from the policy's level names.
BRISK_API void write_prometheus(metrics::PrometheusWriter& writer, const BatcherStats& stats, const BatchPolicy& policy,
                                const std::string& prefix, const MetricLabels& labels);

}  // namespace brisk::batch
