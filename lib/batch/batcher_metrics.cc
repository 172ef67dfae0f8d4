// Prometheus exposition of a batcher's stats.
#include "brisk/batch/batcher_metrics.h"

namespace brisk::batch {

void write_prometheus(metrics::PrometheusWriter& w, const BatcherStats& s, const BatchPolicy& policy,
                      const std::string& prefix, const MetricLabels& labels) {
  std::vector<metrics::Label> base;
  for (const auto& [k, v] : labels) base.emplace_back(k, v);
  auto with = [&](std::string_view key, std::string_view value) {
    std::vector<metrics::Label> l = base;
    l.emplace_back(key, value);
    return l;
  };
  auto name = [&](const char* suffix) { return prefix + suffix; };
  constexpr double kSeconds = 1e-9;

  const std::string requests = name("_requests_total");
  const char* requests_help = "Requests by how they ended (rejected_* never entered the queue).";
  const std::pair<const char*, uint64_t> outcomes[] = {{"completed", s.completed},
                                                       {"failed", s.failed},
                                                       {"expired", s.expired},
                                                       {"cancelled", s.cancelled},
                                                       {"shutdown", s.shutdown},
                                                       {"evicted", s.evicted},
                                                       {"rejected_overloaded", s.rejected_overloaded},
                                                       {"rejected_deadline", s.rejected_deadline},
                                                       {"rejected_invalid", s.rejected_invalid},
                                                       {"rejected_shutdown", s.rejected_shutdown}};
  for (const auto& [outcome, count] : outcomes) w.counter(requests, requests_help, with("outcome", outcome), count);
  w.counter(name("_submitted_total"), "Requests admitted to the queue.", base, s.submitted);
  w.counter(name("_batches_total"), "Batches run.", base, s.batches);
  w.counter(name("_failed_batches_total"), "Batches whose batch function returned an error.", base, s.failed_batches);
  w.counter(name("_tokens_total"), "Request cost (tokens) run in batches.", base, s.tokens);
  w.counter(name("_padded_tokens_total"), "Padded cost run: batch size x longest request, summed.", base,
            s.padded_tokens);
  w.counter(name("_callback_exceptions_total"), "Completion callbacks that threw.", base, s.callback_exceptions);

  w.summary(name("_queue_seconds"), "Time from admission to the start of the request's batch.", base, s.queue_time,
            kSeconds);
  w.summary(name("_compute_seconds"), "Batch function time per batch.", base, s.compute_time, kSeconds);
  w.summary(name("_latency_seconds"), "Time from admission to completion.", base, s.latency, kSeconds);
  w.summary(name("_batch_size"), "Requests per batch.", base, s.batch_size);
  w.summary(name("_batch_tokens"), "Request cost per batch.", base, s.batch_tokens);
  w.summary(name("_batch_padded_tokens"), "Padded cost per batch.", base, s.batch_padded_tokens);
  for (size_t i = 0; i < s.queue_time_per_level.size() && i < policy.levels.size(); ++i) {
    w.summary(name("_level_queue_seconds"), "Queue time per priority level.", with("priority", policy.levels[i].name),
              s.queue_time_per_level[i], kSeconds);
  }

  w.gauge(name("_queued"), "Requests waiting now.", base, static_cast<int64_t>(s.queued));
  for (size_t i = 0; i < s.queued_per_level.size() && i < policy.levels.size(); ++i) {
    w.gauge(name("_level_queued"), "Requests waiting now per priority level.", with("priority", policy.levels[i].name),
            static_cast<int64_t>(s.queued_per_level[i]));
  }
  w.gauge(name("_inflight_batches"), "Batches running now.", base, s.inflight_batches);
  w.gauge(name("_batch_limit"), "Current maximum batch size (adaptive when enabled).", base,
          static_cast<int64_t>(s.batch_limit));
  w.gauge(name("_queue_delay_seconds"), "Current maximum queue delay (adaptive when enabled).", base,
          static_cast<double>(s.queue_delay.count()) * kSeconds);
  w.gauge(name("_padding_waste_ratio"), "Share of padded cost that was padding.", base, s.padding_waste());
}

}  // namespace brisk::batch
