// Tests of PrometheusWriter: the text exposition format, label escaping and number formatting.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "brisk/metrics/histogram.h"
#include "brisk/metrics/prometheus.h"

using brisk::metrics::Histogram;
using brisk::metrics::HistogramSnapshot;
using brisk::metrics::Label;
using brisk::metrics::PrometheusWriter;

namespace {

// 1..100 once each: exact buckets (below 2^7), so every expected number below is derived by hand.
HistogramSnapshot one_to_hundred() {
  Histogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.record(v);
  return h.snapshot();
}

bool has_error_containing(const PrometheusWriter& w, const std::string& text) {
  return !w.status().ok() && w.status().code() == absl::StatusCode::kInvalidArgument &&
         std::string(w.status().message()).find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("PrometheusWriter writes counters and gauges in the text format", "[metrics]") {
  PrometheusWriter w;
  w.counter("http_requests_total", "The total number of HTTP requests.", {{"method", "post"}, {"code", "200"}}, 1027);
  w.counter("http_requests_total", "The total number of HTTP requests.", {{"method", "post"}, {"code", "400"}}, 3u);
  w.gauge("temperature_celsius", "", {}, -3.5);
  w.gauge("queue_depth", "Waiting requests.", {{"model", "minilm"}}, int64_t{-2});
  REQUIRE(w.status().ok());
  CHECK(w.str() ==
        "# HELP http_requests_total The total number of HTTP requests.\n"
        "# TYPE http_requests_total counter\n"
        "http_requests_total{method=\"post\",code=\"200\"} 1027\n"
        "http_requests_total{method=\"post\",code=\"400\"} 3\n"
        "# TYPE temperature_celsius gauge\n"
        "temperature_celsius -3.5\n"
        "# HELP queue_depth Waiting requests.\n"
        "# TYPE queue_depth gauge\n"
        "queue_depth{model=\"minilm\"} -2\n");
  CHECK(PrometheusWriter().str().empty());
}

TEST_CASE("PrometheusWriter escapes label values and help text", "[metrics]") {
  // The spec's own example: path C:\DIR\FILE.TXT and a message with a newline and quotes.
  PrometheusWriter w;
  w.gauge("msdos_file_access_time_seconds", "Access time\\n of a \"file\"\nsecond line",
          {{"path", "C:\\DIR\\FILE.TXT"}, {"error", "Cannot find file:\n\"FILE.TXT\""}}, 1.458255915e9);
  REQUIRE(w.status().ok());
  CHECK(w.str() ==
        "# HELP msdos_file_access_time_seconds Access time\\\\n of a \"file\"\\nsecond line\n"
        "# TYPE msdos_file_access_time_seconds gauge\n"
        "msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\","
        "error=\"Cannot find file:\\n\\\"FILE.TXT\\\"\"} 1458255915\n");
  CHECK(PrometheusWriter::escape_label_value("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  CHECK(PrometheusWriter::escape_help("a\\b\"c\nd") == "a\\\\b\"c\\nd");
}

TEST_CASE("PrometheusWriter formats numbers as Prometheus parses them", "[metrics]") {
  using F = PrometheusWriter;
  CHECK(F::format_double(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(F::format_double(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(F::format_double(std::nan("")) == "NaN");
  CHECK(F::format_double(0.25) == "0.25");
  CHECK(F::format_double(1e-9) == "1e-09");
  CHECK(F::format_double(3.0) == "3");
  CHECK(std::stod(F::format_double(0.1 + 0.2)) == 0.1 + 0.2);  // round-trips
  CHECK(brisk::metrics::SampleValue(uint64_t{18446744073709551615u}).str() == "18446744073709551615");
  CHECK(brisk::metrics::SampleValue(std::numeric_limits<int64_t>::min()).str() == "-9223372036854775808");
  CHECK(brisk::metrics::SampleValue(true).str() == "1");
  PrometheusWriter w;
  w.gauge("g", "", {{"k", "inf"}}, std::numeric_limits<double>::infinity());
  w.gauge("g", "", {{"k", "nan"}}, std::nan(""));
  w.counter("big_total", "", {}, uint64_t{1} << 60);
  REQUIRE(w.status().ok());
  CHECK(w.str() ==
        "# TYPE g gauge\n"
        "g{k=\"inf\"} +Inf\n"
        "g{k=\"nan\"} NaN\n"
        "# TYPE big_total counter\n"
        "big_total 1152921504606846976\n");
}

TEST_CASE("PrometheusWriter groups interleaved families in first-use order", "[metrics]") {
  PrometheusWriter w;
  w.counter("a_total", "A.", {{"x", "1"}}, 1);
  w.gauge("b", "B.", {}, 2);
  w.counter("a_total", "A again (ignored).", {{"x", "2"}}, 3);
  w.summary("c_seconds", "C.", {}, HistogramSnapshot());
  w.gauge("b", "", {{"y", "z"}}, 4);
  w.counter("a_total", "", {{"x", "3"}}, 5);
  REQUIRE(w.status().ok());
  CHECK(w.str() ==
        "# HELP a_total A.\n"
        "# TYPE a_total counter\n"
        "a_total{x=\"1\"} 1\n"
        "a_total{x=\"2\"} 3\n"
        "a_total{x=\"3\"} 5\n"
        "# HELP b B.\n"
        "# TYPE b gauge\n"
        "b 2\n"
        "b{y=\"z\"} 4\n"
        "# HELP c_seconds C.\n"
        "# TYPE c_seconds summary\n"
        "c_seconds{quantile=\"0.5\"} NaN\n"
        "c_seconds{quantile=\"0.9\"} NaN\n"
        "c_seconds{quantile=\"0.95\"} NaN\n"
        "c_seconds{quantile=\"0.99\"} NaN\n"
        "c_seconds{quantile=\"0.999\"} NaN\n"
        "c_seconds_sum 0\n"
        "c_seconds_count 0\n");
}

TEST_CASE("PrometheusWriter summary: quantiles, sum and count with a scale", "[metrics]") {
  PrometheusWriter w;
  // Ranks: ceil(0.5*100)=50, 90, 95, 99, ceil(99.9)=100; values x 0.5.
  w.summary("rpc_seconds", "RPC latency.", {{"service", "embed"}}, one_to_hundred(), 0.5);
  REQUIRE(w.status().ok());
  CHECK(w.str() ==
        "# HELP rpc_seconds RPC latency.\n"
        "# TYPE rpc_seconds summary\n"
        "rpc_seconds{service=\"embed\",quantile=\"0.5\"} 25\n"
        "rpc_seconds{service=\"embed\",quantile=\"0.9\"} 45\n"
        "rpc_seconds{service=\"embed\",quantile=\"0.95\"} 47.5\n"
        "rpc_seconds{service=\"embed\",quantile=\"0.99\"} 49.5\n"
        "rpc_seconds{service=\"embed\",quantile=\"0.999\"} 50\n"
        "rpc_seconds_sum{service=\"embed\"} 2525\n"
        "rpc_seconds_count{service=\"embed\"} 100\n");
}

TEST_CASE("PrometheusWriter histogram: cumulative le buckets ending in +Inf == _count", "[metrics]") {
  PrometheusWriter w;
  const std::vector<double> bounds = {0.5, 10, 50, 99.5, 200};
  w.histogram("batch_size", "Requests per batch.", {}, one_to_hundred(), bounds);
  REQUIRE(w.status().ok());
  CHECK(w.str() ==
        "# HELP batch_size Requests per batch.\n"
        "# TYPE batch_size histogram\n"
        "batch_size_bucket{le=\"0.5\"} 0\n"
        "batch_size_bucket{le=\"10\"} 10\n"
        "batch_size_bucket{le=\"50\"} 50\n"
        "batch_size_bucket{le=\"99.5\"} 99\n"
        "batch_size_bucket{le=\"200\"} 100\n"
        "batch_size_bucket{le=\"+Inf\"} 100\n"
        "batch_size_sum 5050\n"
        "batch_size_count 100\n");

  // Nanoseconds exposed in seconds: 3 recordings at 4 ms and 2 at 20 ms; a trailing +Inf bound is not doubled.
  Histogram ns;
  ns.record(4000000, 3);
  ns.record(20000000, 2);
  PrometheusWriter s;
  s.histogram("compute_seconds", "", {{"stage", "gemm"}}, ns.snapshot(),
              {0.001, 0.005, 0.01, 0.05, std::numeric_limits<double>::infinity()}, 1e-9);
  REQUIRE(s.status().ok());
  CHECK(s.str() ==
        "# TYPE compute_seconds histogram\n"
        "compute_seconds_bucket{stage=\"gemm\",le=\"0.001\"} 0\n"
        "compute_seconds_bucket{stage=\"gemm\",le=\"0.005\"} 3\n"
        "compute_seconds_bucket{stage=\"gemm\",le=\"0.01\"} 3\n"
        "compute_seconds_bucket{stage=\"gemm\",le=\"0.05\"} 5\n"
        "compute_seconds_bucket{stage=\"gemm\",le=\"+Inf\"} 5\n"
        "compute_seconds_sum{stage=\"gemm\"} 0.052\n"
        "compute_seconds_count{stage=\"gemm\"} 5\n");
}

TEST_CASE("PrometheusWriter rejects invalid input through status(), first error wins", "[metrics]") {
  SECTION("invalid metric names") {
    for (const char* bad : {"", "1abc", "a-b", "a b", "é"}) {
      PrometheusWriter w;
      w.gauge(bad, "", {}, 1);
      INFO(bad);
      CHECK(has_error_containing(w, "invalid metric name"));
      CHECK(w.str().empty());
    }
    PrometheusWriter ok;
    ok.gauge("ns:sub_name_1", "", {}, 1);  // colons are allowed in metric names
    CHECK(ok.status().ok());
  }
  SECTION("invalid label names") {
    for (const char* bad : {"", "0a", "a:b", "a-b"}) {
      PrometheusWriter w;
      w.gauge("g", "", {{bad, "v"}}, 1);
      INFO(bad);
      CHECK(has_error_containing(w, "invalid label name"));
    }
    PrometheusWriter w;
    w.gauge("g", "", {{"__name__", "v"}}, 1);
    CHECK(has_error_containing(w, "reserves"));
  }
  SECTION("reserved and repeated labels") {
    PrometheusWriter w;
    w.summary("s", "", {{"quantile", "x"}}, one_to_hundred());
    CHECK(has_error_containing(w, "label \"quantile\""));
    PrometheusWriter h;
    h.histogram("h", "", {{"le", "1"}}, one_to_hundred(), {1.0});
    CHECK(has_error_containing(h, "label \"le\""));
    PrometheusWriter d;
    d.gauge("g", "", {{"a", "1"}, {"a", "2"}}, 1);
    CHECK(has_error_containing(d, "given twice"));
  }
  SECTION("type mismatch, collisions and repeated series") {
    PrometheusWriter w;
    w.counter("x_total", "", {}, 1);
    w.gauge("x_total", "", {{"a", "b"}}, 2);
    CHECK(has_error_containing(w, "first written as a counter, now as a gauge"));
    w.gauge("later_error", "", {{"0bad", "v"}}, 1);  // a second error does not replace the first
    CHECK(has_error_containing(w, "first written as a counter"));
    w.gauge("fine", "", {}, 1);  // valid calls after an error still write
    CHECK(w.str() == "# TYPE x_total counter\nx_total 1\n# TYPE fine gauge\nfine 1\n");

    PrometheusWriter c;
    c.summary("lat", "", {}, one_to_hundred());
    c.gauge("lat_count", "", {}, 1);
    CHECK(has_error_containing(c, "collides with family \"lat\""));
    PrometheusWriter c2;
    c2.gauge("lat_bucket", "", {}, 1);
    c2.histogram("lat", "", {}, one_to_hundred(), {1.0});
    CHECK(has_error_containing(c2, "collides with family \"lat_bucket\""));

    PrometheusWriter r;
    r.gauge("g", "", {{"a", "1"}}, 1);
    r.gauge("g", "", {{"a", "1"}}, 2);
    CHECK(has_error_containing(r, "written twice"));
  }
  SECTION("bad values, scales, bounds and encodings") {
    PrometheusWriter w;
    w.counter("c_total", "", {}, -1);
    CHECK(has_error_containing(w, "negative"));
    PrometheusWriter s;
    s.summary("s", "", {}, one_to_hundred(), 0.0);
    CHECK(has_error_containing(s, "scale"));
    PrometheusWriter h;
    h.histogram("h", "", {}, one_to_hundred(), {1.0, 1.0});
    CHECK(has_error_containing(h, "strictly increasing"));
    PrometheusWriter n;
    n.histogram("h", "", {}, one_to_hundred(), {std::nan("")});
    CHECK(has_error_containing(n, "NaN"));
    PrometheusWriter i;
    i.histogram("h", "", {}, one_to_hundred(), {std::numeric_limits<double>::infinity(), 5.0});
    CHECK(has_error_containing(i, "infinite"));
    PrometheusWriter u;
    u.gauge("g", "", {{"k", "\xff\xfe"}}, 1);
    CHECK(has_error_containing(u, "not valid UTF-8"));
    PrometheusWriter u2;
    u2.gauge("g", "caf\xc3", {}, 1);  // truncated two-byte sequence
    CHECK(has_error_containing(u2, "not valid UTF-8"));
    PrometheusWriter u3;
    u3.gauge("g", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", {{"k", "\xc3\xa9"}}, 1);  // é € 😀
    CHECK(u3.status().ok());
  }
}

TEST_CASE("PrometheusWriter::clear starts a new scrape", "[metrics]") {
  PrometheusWriter w;
  w.gauge("g", "", {}, 1);
  w.gauge("1bad", "", {}, 1);
  REQUIRE_FALSE(w.status().ok());
  w.clear();
  CHECK(w.status().ok());
  CHECK(w.str().empty());
  w.gauge("g", "", {}, 2);  // not a repeated series any more
  CHECK(w.status().ok());
  CHECK(w.str() == "# TYPE g gauge\ng 2\n");
  std::vector<Label> labels = {{"a", "b"}};  // labels from a vector
  w.gauge("v", "", labels, 1);
  CHECK(w.str() == "# TYPE g gauge\ng 2\n# TYPE v gauge\nv{a=\"b\"} 1\n");
}
