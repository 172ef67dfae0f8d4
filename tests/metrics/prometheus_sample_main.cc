// Writes a fixed Prometheus exposition to stdout for prometheus_parse_test.py, which checks it with the
// reference parser (prometheus_client). The expected values there are derived by hand from these inputs.
#include <cstdio>
#include <limits>

#include "brisk/metrics/histogram.h"
#include "brisk/metrics/prometheus.h"

int main() {
  using brisk::metrics::Histogram;
  brisk::metrics::PrometheusWriter w;

  Histogram sizes;  // 1..100 once each: exact buckets
  for (uint64_t v = 1; v <= 100; ++v) sizes.record(v);
  Histogram latency_ns;  // 3 at 4 ms, 2 at 20 ms
  latency_ns.record(4000000, 3);
  latency_ns.record(20000000, 2);

  // Interleaved families, escaped label values and help, special values.
  w.counter("brisk_requests_total", "Requests completed.\nSecond line with a \\ backslash.",
            {{"model", "minilm"}, {"code", "ok"}}, 1027);
  w.gauge("brisk_queue_depth", "Requests waiting.", {}, 7);
  w.counter("brisk_requests_total", "", {{"model", "path\\to \"quoted\"\nnext"}, {"code", "error"}}, 3);
  w.gauge("brisk_temperature", "Special values.", {{"kind", "pos"}}, std::numeric_limits<double>::infinity());
  w.gauge("brisk_temperature", "", {{"kind", "neg"}}, -std::numeric_limits<double>::infinity());
  w.gauge("brisk_temperature", "", {{"kind", "nan"}}, std::numeric_limits<double>::quiet_NaN());
  w.gauge("brisk_temperature", "", {{"kind", "small"}}, 1.5e-7);
  w.summary("brisk_batch_size", "Requests per batch.", {{"model", "minilm"}}, sizes.snapshot());
  w.gauge("brisk_queue_depth", "", {{"priority", "high"}}, -2);
  const double bounds[] = {0.001, 0.005, 0.01, 0.05};
  w.histogram("brisk_compute_seconds", "Backend time per batch.", {{"stage", "gemm"}}, latency_ns.snapshot(), bounds,
              1e-9);
  w.summary("brisk_batch_size", "", {{"model", "other"}}, Histogram().snapshot());
  if (!w.status().ok()) {
    std::fprintf(stderr, "writer error: %s\n", w.status().ToString().c_str());
    return 1;
  }
  std::fputs(w.str().c_str(), stdout);
  return 0;
}
