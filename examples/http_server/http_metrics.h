// http_metrics: the HTTP example's own Prometheus series, beside the runtime's (Runtime::metrics_prometheus()):
// requests by endpoint and status, a latency histogram by endpoint, requests in flight, client disconnects,
// brisk requests cancelled (because their client left, or because a sibling input failed the request), idle
// connections, and connections closed for being idle or too slow.
//
//   brisk_http::HttpMetrics m;
//   m.record("/embed", 200, elapsed_ns);
//   std::string text = m.prometheus({.closed_slow = guard.closed_slow()});
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
  brisk::metrics::Counter cancelled_inputs;  // their client left
  brisk::metrics::Counter abandoned_inputs;  // another input of their request failed (429, 400...)

  // The connection layer's counts: ConnectionGuard::closed_slow(), Transport::parked() and closed_idle().
  struct Connections {
    uint64_t closed_slow = 0;
    uint64_t idle = 0;
    uint64_t closed_idle = 0;
  };
  // The exposition text of these series.
  std::string prometheus(const Connections& connections) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, std::unique_ptr<brisk::metrics::Counter>> requests_;
  std::map<std::string, std::unique_ptr<brisk::metrics::Histogram>> latency_ns_;
};

}  // namespace brisk_http
