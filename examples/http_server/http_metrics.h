// http_metrics: the HTTP example's own Prometheus series, beside the runtime's (Runtime::metrics_prometheus()):
// requests by endpoint and status, a latency histogram by endpoint, requests in flight, client disconnects,
// brisk requests cancelled because their client left, and connections closed for being too slow.
//
//   brisk_http::HttpMetrics m;
//   m.record("/embed", 200, elapsed_ns);
//   std::string text = m.prometheus(extra_counters);
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "brisk/metrics/counter.h"
#include "brisk/metrics/histogram.h"

namespace brisk_http {

class HttpMetrics {
 public:
  // The endpoints with their own series; any other path is counted as "other".
  static const char* endpoint_label(const std::string& path);

  void record(const std::string& path, int status, uint64_t elapsed_ns);
  brisk::metrics::Gauge in_flight;
  brisk::metrics::Counter client_disconnects;
  brisk::metrics::Counter cancelled_inputs;

  // The exposition text of these series; closed_slow is ConnectionGuard::closed_slow().
  std::string prometheus(uint64_t closed_slow) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, std::unique_ptr<brisk::metrics::Counter>> requests_;
  std::map<std::string, std::unique_ptr<brisk::metrics::Histogram>> latency_ns_;
};

}  // namespace brisk_http
