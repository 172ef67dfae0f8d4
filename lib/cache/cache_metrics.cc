// Prometheus exposition of cache statistics.
#include "brisk/cache/cache_metrics.h"

namespace brisk::cache {

namespace {

std::vector<metrics::Label> to_labels(const MetricLabels& labels) {
  std::vector<metrics::Label> out;
  for (const auto& [k, v] : labels) out.emplace_back(k, v);
  return out;
}

}  // namespace

void write_prometheus(metrics::PrometheusWriter& w, const CacheStats& s, const std::string& prefix,
                      const MetricLabels& labels) {
  const std::vector<metrics::Label> l = to_labels(labels);
  const auto counter = [&](const char* suffix, const char* help, uint64_t value) {
    w.counter(prefix + suffix, help, l, value);
  };
  counter("_hits_total", "Lookups that found a live entry.", s.hits);
  counter("_misses_total", "Lookups that found no live entry.", s.misses);
  counter("_loads_total", "Loader calls (single-flight: one per key however many callers missed).", s.loads);
  counter("_load_failures_total", "Loader calls that returned an error.", s.load_failures);
  w.counter(prefix + "_load_seconds_total", "Time spent in loaders.", l, static_cast<double>(s.load_ns) * 1e-9);
  counter("_refreshes_total", "Early (XFetch) refreshes of entries close to expiry.", s.refreshes);
  counter("_evictions_total", "Entries evicted for capacity.", s.evictions);
  counter("_evicted_weight_total", "Weight of the entries evicted for capacity.", s.evicted_weight);
  counter("_expirations_total", "Entries removed because they expired.", s.expirations);
  counter("_invalidations_total", "Entries removed by invalidate, invalidate_tag or invalidate_all.", s.invalidations);
  w.gauge(prefix + "_entries", "Entries held now.", l, s.entries);
  w.gauge(prefix + "_weight", "Weight held now (entries when unweighted).", l, s.weight);
  w.gauge(prefix + "_capacity", "Capacity in weight units (entries when unweighted).", l, s.capacity);
}

void write_prometheus(metrics::PrometheusWriter& w, const TieredCacheStats& s, const std::string& prefix,
                      const MetricLabels& labels) {
  write_prometheus(w, s.l1, prefix, labels);
  const auto with = [&](std::string_view key, std::string_view value) {
    std::vector<metrics::Label> l = to_labels(labels);
    l.emplace_back(key, value);
    return l;
  };
  const std::vector<metrics::Label> l = to_labels(labels);
  const std::string requests = prefix + "_l2_requests_total";
  const char* requests_help = "Redis lookups after an L1 miss: hits, and misses (absent, failed or undecodable).";
  w.counter(requests, requests_help, with("result", "hit"), s.l2_hits);
  w.counter(requests, requests_help, with("result", "miss"), s.l2_misses);
  w.counter(prefix + "_l2_decode_errors_total", "Redis values rejected by the envelope or the codec.", l,
            s.l2_decode_errors);
  const std::string rejected = prefix + "_l2_rejected_total";
  const char* rejected_help = "Redis values refused and treated as misses, by reason.";
  w.counter(rejected, rejected_help, with("reason", "format"), s.l2_rejected_format);
  w.counter(rejected, rejected_help, with("reason", "corrupt"), s.l2_rejected_corrupt);
  w.counter(rejected, rejected_help, with("reason", "unauthenticated"), s.l2_rejected_unauthenticated);
  w.counter(rejected, rejected_help, with("reason", "wrong_key"), s.l2_rejected_wrong_key);
  w.counter(prefix + "_l2_errors_total", "Redis calls that failed (down, timeout, breaker open).", l, s.l2_errors);
  w.counter(prefix + "_l2_auth_failures_total", "Redis connections or calls refused authentication.", l,
            s.redis.auth_failures);
  w.counter(prefix + "_l2_backfills_total", "Redis hits copied into L1.", l, s.backfills);
  w.counter(prefix + "_l2_remote_invalidations_total", "Invalidations from other processes applied to L1.", l,
            s.remote_invalidations);
  const std::string writes = prefix + "_l2_writes_total";
  const char* writes_help = "Write-behind writes to Redis, by outcome.";
  w.counter(writes, writes_help, with("result", "written"), s.write_behind.written);
  w.counter(writes, writes_help, with("result", "failed"), s.write_behind.failed);
  w.counter(writes, writes_help, with("result", "dropped"), s.write_behind.dropped);
  w.gauge(prefix + "_l2_breaker_open", "1 while the Redis circuit breaker is open.", l,
          s.redis.breaker_state == CircuitBreaker::State::kOpen ? 1 : 0);
}

void write_prometheus(metrics::PrometheusWriter& w, const SemanticCacheStats& s, const std::string& prefix,
                      const MetricLabels& labels) {
  const auto with = [&](std::string_view key, std::string_view value) {
    std::vector<metrics::Label> l = to_labels(labels);
    l.emplace_back(key, value);
    return l;
  };
  const std::vector<metrics::Label> l = to_labels(labels);
  const std::string lookups = prefix + "_lookups_total";
  const char* lookups_help = "Lookups, by outcome: a hit or the reason for the miss.";
  const std::pair<const char*, uint64_t> outcomes[] = {{"hit", s.hits},
                                                       {"no_candidate", s.no_candidate},
                                                       {"below_threshold", s.below_threshold},
                                                       {"rejected_by_guard", s.rejected},
                                                       {"expired", s.expired},
                                                       {"invalid", s.invalid},
                                                       {"rejected_by_verifier", s.rejected_by_verifier}};
  for (const auto& [result, n] : outcomes) w.counter(lookups, lookups_help, with("result", result), n);
  for (const auto& [guard, n] : s.rejections_by_guard) {
    w.counter(prefix + "_guard_rejections_total", "Candidates vetoed, by guard.", with("guard", guard), n);
  }
  w.counter(prefix + "_inserts_total", "Entries inserted (new questions).", l, s.inserts);
  w.counter(prefix + "_replacements_total", "Re-inserts of a question already cached.", l, s.replacements);
  const std::string removals = prefix + "_removals_total";
  const char* removals_help = "Entries removed, by cause.";
  w.counter(removals, removals_help, with("cause", "expired"), s.expirations);
  w.counter(removals, removals_help, with("cause", "evicted"), s.evictions);
  w.counter(removals, removals_help, with("cause", "invalidated"), s.invalidations);
  w.counter(removals, removals_help, with("cause", "erased"), s.erasures);
  const std::string calls = prefix + "_verifier_calls_total";
  const char* calls_help = "Verifier calls, by verdict (an error rejects its candidate).";
  w.counter(calls, calls_help, with("result", "accepted"), s.verifier_accepted);
  w.counter(calls, calls_help, with("result", "rejected"), s.verifier_rejected);
  w.counter(calls, calls_help, with("result", "error"), s.verifier_errors);
  w.summary(prefix + "_verifier_seconds", "Wall time of each verifier call.", l, s.verifier_latency_ns, 1e-9);
  w.gauge(prefix + "_entries", "Entries held now (expired ones until removed).", l, s.entries);
  w.gauge(prefix + "_tenants", "Tenants with an index.", l, s.tenants);
}

}  // namespace brisk::cache
