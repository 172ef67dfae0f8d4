// The HTTP example's Prometheus series (http_metrics.h).
#include "http_metrics.h"

#include <array>
#include <vector>

#include "brisk/metrics/prometheus.h"

namespace brisk_http {

const char* HttpMetrics::endpoint_label(const std::string& path) {
  static constexpr std::array<const char*, 8> kKnown = {"/embed",  "/v1/embeddings", "/predict", "/rerank",
                                                        "/health", "/info",          "/metrics", "/"};
  for (const char* p : kKnown) {
    if (path == p) return p;
  }
  return "other";
}

void HttpMetrics::record(const std::string& path, int status, uint64_t elapsed_ns) {
  const std::string endpoint = endpoint_label(path);
  std::lock_guard<std::mutex> lock(mu_);
  auto& counter = requests_[{endpoint, status}];
  if (!counter) counter = std::make_unique<brisk::metrics::Counter>();
  counter->add();
  auto& hist = latency_ns_[endpoint];
  if (!hist) hist = std::make_unique<brisk::metrics::Histogram>();
  hist->record(elapsed_ns);
}

std::string HttpMetrics::prometheus(const Connections& connections) const {
  brisk::metrics::PrometheusWriter w;
  static constexpr double kBounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, counter] : requests_) {
      const std::string status = std::to_string(key.second);
      w.counter("brisk_http_requests_total", "HTTP requests answered, by endpoint and status.",
                {{"endpoint", key.first}, {"status", status}}, counter->value());
    }
    for (const auto& [endpoint, hist] : latency_ns_) {
      w.histogram("brisk_http_request_duration_seconds", "Time from the request head to the response written.",
                  {{"endpoint", endpoint}}, hist->snapshot(), kBounds, 1e-9);
    }
  }
  w.gauge("brisk_http_in_flight_requests", "HTTP requests being handled.", {}, in_flight.value());
  w.counter("brisk_http_client_disconnects_total", "Requests whose client hung up before the answer.", {},
            client_disconnects.value());
  static constexpr char kCancelledHelp[] =
      "Inputs cancelled in brisk: their HTTP client left (client_gone), or another input of their request failed it "
      "(request_failed).";
  w.counter("brisk_http_cancelled_inputs_total", kCancelledHelp, {{"reason", "client_gone"}}, cancelled_inputs.value());
  w.counter("brisk_http_cancelled_inputs_total", kCancelledHelp, {{"reason", "request_failed"}},
            abandoned_inputs.value());
  w.gauge("brisk_http_idle_connections", "Keep-alive connections waiting for a request, holding no worker.", {},
          static_cast<double>(connections.idle));
  w.counter("brisk_http_idle_connections_closed_total", "Keep-alive connections closed idle after --keep-alive-s.", {},
            connections.closed_idle);
  w.counter("brisk_http_slow_connections_closed_total",
            "Connections shut down for not sending a request head or body in time.", {}, connections.closed_slow);
  return w.str();
}

}  // namespace brisk_http
