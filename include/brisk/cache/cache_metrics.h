// Prometheus exposition of cache statistics: one family per counter, told apart by a `cache` label, so that
// several caches of one process (token, result, ...) share the families.
//
//   metrics::PrometheusWriter w;
//   cache::write_prometheus(w, token_cache->stats(), "brisk_cache", {{"model", "minilm"}, {"cache", "token"}});
//   cache::write_prometheus(w, result_cache->stats(), "brisk_cache", {{"model", "minilm"}, {"cache", "result"}});
//
// Thread safety: stateless functions; the writer is not thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "brisk/cache/cache.h"
#include "brisk/cache/semantic_cache.h"
#include "brisk/cache/tiered_cache.h"
#include "brisk/core/export.h"
#include "brisk/metrics/prometheus.h"

namespace brisk::cache {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// <prefix>_hits_total, _misses_total, _loads_total, _load_failures_total, _load_seconds_total, _refreshes_total,
// _evictions_total, _evicted_weight_total, _expirations_total, _invalidations_total, and gauges _entries,
// _weight, _capacity.
BRISK_API void write_prometheus(metrics::PrometheusWriter& w, const CacheStats& s, const std::string& prefix,
                                const MetricLabels& labels);
// The L1 as above plus <prefix>_l2_requests_total{result=hit|miss}, _l2_errors_total, _l2_decode_errors_total,
// _l2_rejected_total{reason=format|corrupt|unauthenticated|wrong_key}, _l2_auth_failures_total,
// _l2_backfills_total, _l2_remote_invalidations_total, _l2_writes_total{result=written|failed|dropped},
// _l2_breaker_open (0/1).
BRISK_API void write_prometheus(metrics::PrometheusWriter& w, const TieredCacheStats& s, const std::string& prefix,
                                const MetricLabels& labels);
// A SemanticCache: <prefix>_lookups_total{result=hit|no_candidate|below_threshold|rejected_by_guard|expired|
// invalid|rejected_by_verifier}, _guard_rejections_total{guard=<name>}, _inserts_total, _replacements_total,
// _removals_total{cause=expired|evicted|invalidated|erased}, _verifier_calls_total{result=accepted|rejected|error},
// the summary _verifier_seconds (each verifier call's wall time), and gauges _entries and _tenants.
BRISK_API void write_prometheus(metrics::PrometheusWriter& w, const SemanticCacheStats& s, const std::string& prefix,
                                const MetricLabels& labels);

}  // namespace brisk::cache
