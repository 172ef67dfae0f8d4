// Prometheus text exposition (format 0.0.4) of brisk's counters, gauges and histograms, for a /metrics endpoint
// or a periodic dump. The writer builds one scrape; create a new one (or clear()) for the next.
//
//   brisk::metrics::PrometheusWriter w;
//   w.counter("brisk_requests_total", "Requests completed.", {{"model", "minilm"}}, requests.value());
//   w.gauge("brisk_queue_depth", "Requests waiting for a batch.", {}, depth.value());
//   w.summary("brisk_queue_seconds", "Time in the batcher queue.", {{"model", "minilm"}},
//             queue_ns.snapshot(), /*scale=*/1e-9);              // recorded in ns, exposed in seconds
//   const double bounds[] = {0.001, 0.005, 0.025, 0.1};
//   w.histogram("brisk_compute_seconds", "Backend time per batch.", {}, compute_ns.snapshot(), bounds, 1e-9);
//   if (!w.status().ok()) log(w.status());                      // a bad name or type: that call was skipped
//   std::string body = w.str();                                 // Content-Type: text/plain; version=0.0.4
//
// Output. Samples of one metric family (same name) come out together under one `# HELP` / `# TYPE` pair, in the
// order of the family's first use, even when calls for different families interleave. HELP is left out when
// empty; the first non-empty help of a family is kept. Labels come out in the order given.
// Summary quantiles are 0.5, 0.9, 0.95, 0.99, 0.999 (NaN when empty, as client_golang writes them); summary and
// histogram values are the snapshot's bucket-midpoint values times `scale` (see histogram.h for the bound).
// Histogram `le` buckets count the recordings whose value times `scale` is <= the bound; the last is "+Inf".
// Integer values print exactly; doubles print in shortest round-trip form; infinities and NaN as +Inf, -Inf, NaN.
//
// Errors. Invalid input is a programming error, reported through status() (the first error is kept) while the
// offending call writes nothing: a metric name not matching [a-zA-Z_:][a-zA-Z0-9_:]*, a label name not
// matching [a-zA-Z_][a-zA-Z0-9_]* or starting with "__", a repeated label name, a "quantile" label on a
// summary or "le" on a histogram, a family reused with another type, a name that collides with a summary's or
// histogram's _sum/_count/_bucket series, the same family and labels twice, a negative counter, invalid UTF-8
// in help or a label value, a scale that is not finite and positive, and bounds that are NaN or not increasing.
//
// Thread safety: a PrometheusWriter is not thread-safe; build each exposition on one thread. Take the
// snapshots and counter values first (those are thread-safe, see histogram.h and counter.h).
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/metrics/histogram.h"

namespace brisk::metrics {

// One label: (name, value). Pass a list as {{"model", "minilm"}, {"stage", "queue"}}, a vector or an array.
using Label = std::pair<std::string_view, std::string_view>;
using Labels = absl::Span<const Label>;

// A sample value that remembers whether it was an integer, so that integers print exactly.
class BRISK_API SampleValue {
 public:
  template <typename T>
  requires std::is_arithmetic_v<T> SampleValue(
      T v) {  // NOLINT: implicit on purpose, so that counter(..., 3) and counter(..., 0.5) both work
    if constexpr (std::is_floating_point_v<T>) {
      kind_ = Kind::kDouble;
      d_ = static_cast<double>(v);
    } else if constexpr (std::is_signed_v<T>) {
      kind_ = Kind::kInt;
      i_ = static_cast<int64_t>(v);
    } else {
      kind_ = Kind::kUint;
      u_ = static_cast<uint64_t>(v);
    }
  }

  bool negative() const { return kind_ == Kind::kInt ? i_ < 0 : kind_ == Kind::kDouble && d_ < 0; }
  // As Prometheus expects it: "42", "-7", "0.25", "1e-09", "+Inf", "-Inf", "NaN".
  std::string str() const;

 private:
  enum class Kind { kInt, kUint, kDouble };
  Kind kind_;
  union {
    int64_t i_;
    uint64_t u_;
    double d_;
  };
};

class BRISK_API PrometheusWriter {
 public:
  PrometheusWriter();
  ~PrometheusWriter();
  PrometheusWriter(PrometheusWriter&&) noexcept;
  PrometheusWriter& operator=(PrometheusWriter&&) noexcept;

  // The quantiles summary() writes.
  static constexpr double kSummaryQuantiles[] = {0.5, 0.9, 0.95, 0.99, 0.999};

  // A counter sample; by convention the name ends in "_total". value must not be negative.
  void counter(std::string_view name, std::string_view help, Labels labels, SampleValue value);
  // A gauge sample.
  void gauge(std::string_view name, std::string_view help, Labels labels, SampleValue value);
  // A summary: name{quantile="..."} for kSummaryQuantiles, name_sum and name_count.
  void summary(std::string_view name, std::string_view help, Labels labels, const HistogramSnapshot& snapshot,
               double scale = 1.0);
  // A histogram: cumulative name_bucket{le="..."} for each upper bound (in exposed units, increasing; a final
  // +Inf in the list is allowed and written once), then le="+Inf" (== _count), name_sum and name_count.
  void histogram(std::string_view name, std::string_view help, Labels labels, const HistogramSnapshot& snapshot,
                 absl::Span<const double> upper_bounds, double scale = 1.0);

  // OK, or the first error (see the file comment).
  const Status& status() const { return status_; }
  // The exposition text: every family, each line ending in '\n'. Empty when nothing was written.
  std::string str() const;
  // Forgets all families and the status, for the next scrape.
  void clear();

  // Escaping per the format: label values escape \ " and newline; HELP text escapes \ and newline.
  static std::string escape_label_value(std::string_view v);
  static std::string escape_help(std::string_view v);
  static bool valid_metric_name(std::string_view name);
  static bool valid_label_name(std::string_view name);
  static std::string format_double(double v);

 private:
  enum class Type { kCounter, kGauge, kSummary, kHistogram };
  struct Family {
    std::string name;
    std::string help;
    Type type;
    std::string samples;
  };

  // Validates the call and returns the family to append to, or nullptr (after recording the error).
  Family* family_for(const char* method, std::string_view name, std::string_view help, Type type, Labels labels,
                     std::string_view reserved_label, std::string* rendered_labels);
  void fail(Status s);
  void scalar(const char* method, Type type, std::string_view name, std::string_view help, Labels labels,
              SampleValue value);

  std::vector<Family> families_;
  absl::flat_hash_map<std::string, size_t> family_index_;
  // Every series name in use (family names and their _sum/_count/_bucket) → owning family, for collisions.
  absl::flat_hash_map<std::string, std::string> series_owner_;
  // family name + '\0' + rendered labels: each series is written once per scrape.
  absl::flat_hash_set<std::string> written_;
  Status status_;
};

}  // namespace brisk::metrics
