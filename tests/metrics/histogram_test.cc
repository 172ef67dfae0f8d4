// Tests of Histogram: bucket layout, exactness, percentile error bounds, snapshots, reset and concurrent recording.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "brisk/metrics/histogram.h"

using brisk::metrics::Histogram;
using brisk::metrics::HistogramLayout;
using brisk::metrics::HistogramSnapshot;

namespace {

const double kQuantiles[] = {0, 50, 90, 99, 99.9, 100};

// The q-th order statistic by the header's definition: rank max(1, ceil(q/100 * n)), 1-based, ascending.
uint64_t reference_percentile(std::vector<uint64_t> values, double q) {
  const auto n = static_cast<double>(values.size());
  auto rank = static_cast<size_t>(std::max(1.0, std::ceil(q / 100.0 * n)));
  rank = std::min(rank, values.size());
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank - 1), values.end());
  return values[rank - 1];
}

// Log-uniform values over [1, 2^max_log2): every magnitude gets about the same number of samples.
std::vector<uint64_t> log_uniform_values(size_t n, int max_log2, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> exponent(0.0, max_log2);
  std::vector<uint64_t> v(n);
  for (auto& x : v) x = static_cast<uint64_t>(std::exp2(exponent(rng)));
  return v;
}

void require_same_buckets(const HistogramSnapshot& a, const HistogramSnapshot& b) {
  REQUIRE(a.bucket_count() == b.bucket_count());
  for (size_t i = 0; i < a.bucket_count(); ++i) REQUIRE(a.bucket_count_at(i) == b.bucket_count_at(i));
}

}  // namespace

TEST_CASE("Histogram layout: buckets tile the value range with width <= lower / 2^p", "[metrics]") {
  for (int p : {1, 3, 6, 10}) {
    const HistogramLayout layout(p, uint64_t{1} << 40);
    REQUIRE(layout.lower_bound(0) == 0);
    for (size_t i = 0; i + 1 < layout.bucket_count(); ++i) {
      const uint64_t lo = layout.lower_bound(i), hi = layout.upper_bound(i);
      REQUIRE(hi >= lo);
      REQUIRE(layout.upper_bound(i) + 1 == layout.lower_bound(i + 1));  // contiguous, no gaps or overlaps
      const uint64_t width = hi - lo + 1;
      if (lo < (uint64_t{2} << p)) {
        REQUIRE(width == 1);  // exact region
      } else {
        REQUIRE(width <= (lo >> p));
      }
      REQUIRE(layout.index_of(lo) == i);
      REQUIRE(layout.index_of(hi) == i);
      REQUIRE(layout.midpoint(i) >= lo);
      REQUIRE(layout.midpoint(i) <= hi);
    }
    REQUIRE(layout.index_of(layout.max_value()) == layout.bucket_count() - 1);
  }
  // The full 64-bit range works too (no overflow in the bound arithmetic).
  const HistogramLayout full(6, UINT64_MAX);
  const size_t top = full.index_of(UINT64_MAX);
  CHECK(top == full.bucket_count() - 1);
  CHECK(full.upper_bound(top) == UINT64_MAX);
  CHECK(full.lower_bound(top) == UINT64_MAX - ((uint64_t{1} << 57) - 1));
}

TEST_CASE("HistogramLayout::check rejects bad arguments and the constructor clamps them", "[metrics]") {
  CHECK(HistogramLayout::check(6, 1000).ok());
  CHECK(HistogramLayout::check(0, 1000).code() == absl::StatusCode::kInvalidArgument);
  CHECK(HistogramLayout::check(15, 1000).code() == absl::StatusCode::kInvalidArgument);
  CHECK(HistogramLayout::check(6, 0).code() == absl::StatusCode::kInvalidArgument);
  Histogram h(99, 0);
  CHECK(h.precision_bits() == 14);
  CHECK(h.max_value() == 1);
  h.record(1);
  CHECK(h.snapshot().percentile(50) == 1);
}

TEST_CASE("Histogram is exact below 2^(p+1)", "[metrics]") {
  Histogram h;  // p = 6: 0..127 exact
  for (uint64_t v = 0; v < 128; ++v) h.record(v);
  const HistogramSnapshot s = h.snapshot();
  REQUIRE(s.count() == 128);
  for (uint64_t rank = 1; rank <= 128; ++rank) {
    // q chosen in the middle of the rank's interval, away from rounding edges.
    const double q = (static_cast<double>(rank) - 0.5) / 128.0 * 100.0;
    REQUIRE(s.percentile(q) == rank - 1);
  }
  CHECK(s.percentile(0) == 0);
  CHECK(s.percentile(100) == 127);
  for (uint64_t v = 0; v < 128; ++v) REQUIRE(s.count_at_or_below(v) == v + 1);
}

TEST_CASE("Histogram percentiles stay within the relative-error bound over many magnitudes", "[metrics]") {
  for (int p : {3, 6, 10}) {
    Histogram h(p, uint64_t{1} << 40);
    const auto values = log_uniform_values(200000, 40, 17 + static_cast<uint64_t>(p));
    for (uint64_t v : values) h.record(v);
    const HistogramSnapshot s = h.snapshot();
    const double bound = std::ldexp(1.0, -(p + 1));
    CHECK(s.layout().relative_error() == bound);
    for (double q : kQuantiles) {
      const auto want = static_cast<double>(reference_percentile(values, q));
      const auto got = static_cast<double>(s.percentile(q));
      INFO("p=" << p << " q=" << q << " want=" << want << " got=" << got);
      REQUIRE(std::fabs(got - want) <= want * bound);
    }
  }
}

TEST_CASE("Histogram relative-error bound holds for clustered values too", "[metrics]") {
  // Many equal values near a bucket edge plus a tail: the order statistic is a value, not a bucket average.
  Histogram h;
  std::vector<uint64_t> values;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> body(2.0e6, 5.0e4);  // ~2 ms latencies in ns
  for (int i = 0; i < 50000; ++i) values.push_back(static_cast<uint64_t>(std::max(1.0, body(rng))));
  for (int i = 0; i < 500; ++i) values.push_back(40000000 + static_cast<uint64_t>(i) * 1000);  // slow tail
  for (uint64_t v : values) h.record(v);
  const HistogramSnapshot s = h.snapshot();
  for (double q : {0.0, 1.0, 25.0, 50.0, 75.0, 98.0, 99.0, 99.5, 99.9, 100.0}) {
    const auto want = static_cast<double>(reference_percentile(values, q));
    INFO("q=" << q);
    REQUIRE(std::fabs(static_cast<double>(s.percentile(q)) - want) <= want * s.layout().relative_error());
  }
}

TEST_CASE("Histogram percentiles are monotone in q", "[metrics]") {
  Histogram h;
  for (uint64_t v : log_uniform_values(20000, 36, 3)) h.record(v);
  const HistogramSnapshot s = h.snapshot();
  uint64_t prev = 0;
  for (int i = 0; i <= 10000; ++i) {
    const uint64_t v = s.percentile(i / 100.0);
    REQUIRE(v >= prev);
    prev = v;
  }
  CHECK(s.percentile(-5) == s.percentile(0));
  CHECK(s.percentile(250) == s.percentile(100));
  CHECK(s.percentile(std::nan("")) == s.percentile(0));
}

TEST_CASE("Histogram min, max, sum, count and mean are exact", "[metrics]") {
  Histogram h;
  const auto values = log_uniform_values(10000, 40, 11);
  uint64_t sum = 0;
  for (uint64_t v : values) {
    h.record(v);
    sum += v;
  }
  h.record(12345, 3);  // weighted recording
  sum += 3 * 12345;
  h.record(999, 0);  // zero count: no effect, not even on min/max
  const HistogramSnapshot s = h.snapshot();
  CHECK(s.count() == values.size() + 3);
  CHECK(s.sum() == sum);
  CHECK(s.min() == std::min<uint64_t>(*std::min_element(values.begin(), values.end()), 12345));
  CHECK(s.max() == std::max<uint64_t>(*std::max_element(values.begin(), values.end()), 12345));
  CHECK(s.exact_min_max());
  CHECK(s.mean() == Approx(static_cast<double>(sum) / static_cast<double>(values.size() + 3)));
  CHECK(s.overflow() == 0);
}

TEST_CASE("Histogram clamps values above max_value into the top bucket and counts them", "[metrics]") {
  Histogram h(6, 1000);
  h.record(10);
  h.record(1000);           // at the limit: not overflow
  h.record(5000);           // above
  h.record(1000000000, 2);  // far above, weighted
  const HistogramSnapshot s = h.snapshot();
  CHECK(s.count() == 5);
  CHECK(s.overflow() == 3);
  CHECK(s.max() == 1000000000);  // exact extremes and sum keep the true values
  CHECK(s.sum() == 10 + 1000 + 5000 + 2000000000ull);
  const size_t top = s.layout().index_of(1000);
  CHECK(top == s.bucket_count() - 1);
  CHECK(s.bucket_count_at(top) == 4);
  CHECK(s.percentile(100) == s.layout().midpoint(top));  // reported inside the top bucket
  CHECK(s.percentile(100) <= s.layout().upper_bound(top));
  CHECK(s.percentile(0) == 10);
}

TEST_CASE("Histogram bucket iteration and count_at_or_below agree", "[metrics]") {
  Histogram h;
  const auto values = log_uniform_values(5000, 30, 23);
  for (uint64_t v : values) h.record(v);
  const HistogramSnapshot s = h.snapshot();
  uint64_t cumulative = 0, last_upper = 0, n = 0;
  bool first = true;
  s.for_each_bucket([&](const HistogramSnapshot::Bucket& b) {
    REQUIRE(b.count > 0);
    REQUIRE(b.lower <= b.upper);
    if (!first) REQUIRE(b.lower > last_upper);
    first = false;
    last_upper = b.upper;
    cumulative += b.count;
    ++n;
    REQUIRE(s.count_at_or_below(b.upper) == cumulative);  // midpoint <= upper: bucket included
    if (b.lower > 0 && b.upper > b.lower) REQUIRE(s.count_at_or_below(b.lower) == cumulative - b.count);
  });
  CHECK(cumulative == s.count());
  CHECK(n > 100);
  // Each value is in the bucket that claims it.
  for (uint64_t v : {uint64_t{1}, uint64_t{200}, uint64_t{123456789}}) {
    const size_t i = s.layout().index_of(v);
    CHECK(s.layout().lower_bound(i) <= v);
    CHECK(v <= s.layout().upper_bound(i));
  }
  CHECK(s.count_at_or_below(UINT64_MAX) == s.count());
}

TEST_CASE("HistogramSnapshot::merge equals a histogram that recorded both inputs", "[metrics]") {
  Histogram a, b, both;
  const auto va = log_uniform_values(30000, 30, 101);
  const auto vb = log_uniform_values(10000, 38, 202);
  for (uint64_t v : va) a.record(v), both.record(v);
  for (uint64_t v : vb) b.record(v), both.record(v);
  HistogramSnapshot merged = a.snapshot();
  REQUIRE(merged.merge(b.snapshot()).ok());
  const HistogramSnapshot want = both.snapshot();
  require_same_buckets(merged, want);
  CHECK(merged.count() == want.count());
  CHECK(merged.sum() == want.sum());
  CHECK(merged.min() == want.min());
  CHECK(merged.max() == want.max());
  CHECK(merged.exact_min_max());
  for (int i = 0; i <= 1000; ++i) REQUIRE(merged.percentile(i / 10.0) == want.percentile(i / 10.0));

  // Into a default-constructed snapshot: adopts the layout.
  HistogramSnapshot total;
  CHECK(total.bucket_count() == 0);
  REQUIRE(total.merge(a.snapshot()).ok());
  REQUIRE(total.merge(b.snapshot()).ok());
  REQUIRE(total.merge(HistogramSnapshot()).ok());
  require_same_buckets(total, want);

  // Different layouts: an error, and the target is unchanged.
  Histogram other(7);
  other.record(5);
  HistogramSnapshot target = a.snapshot();
  const brisk::Status st = target.merge(other.snapshot());
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(st.message()).find("precision_bits 6 vs 7") != std::string::npos);
  require_same_buckets(target, a.snapshot());
  CHECK(target.count() == va.size());
}

TEST_CASE("HistogramSnapshot::minus gives the percentiles of the window", "[metrics]") {
  Histogram h, window_only;
  const auto before = log_uniform_values(20000, 40, 7);
  const auto during = log_uniform_values(5000, 25, 8);
  for (uint64_t v : before) h.record(v);
  const HistogramSnapshot prev = h.snapshot();
  for (uint64_t v : during) h.record(v), window_only.record(v);
  const HistogramSnapshot now = h.snapshot();

  const HistogramSnapshot window = now.minus(prev);
  const HistogramSnapshot want = window_only.snapshot();
  require_same_buckets(window, want);
  CHECK(window.count() == during.size());
  CHECK(window.sum() == want.sum());
  CHECK(window.overflow() == 0);
  for (int i = 0; i <= 1000; ++i) REQUIRE(window.percentile(i / 10.0) == want.percentile(i / 10.0));
  // The windowed P99 is that of `during`, not of the whole history.
  const auto p99 = static_cast<double>(reference_percentile(during, 99));
  CHECK(std::fabs(static_cast<double>(window.percentile(99)) - p99) <= p99 * window.layout().relative_error());
  // min/max become bucket bounds around the true extremes.
  CHECK_FALSE(window.exact_min_max());
  CHECK(window.min() <= want.min());
  CHECK(window.max() >= want.max());
  CHECK(window.layout().index_of(window.min()) == window.layout().index_of(want.min()));
  CHECK(window.layout().index_of(window.max()) == window.layout().index_of(want.max()));

  // An empty window.
  const HistogramSnapshot none = now.minus(now);
  CHECK(none.count() == 0);
  CHECK(none.percentile(99) == 0);
  // Against nothing (a default snapshot, or an empty one): everything.
  require_same_buckets(now.minus(HistogramSnapshot()), now);
  CHECK(now.minus(HistogramSnapshot()).min() == now.min());
  // After a reset between the two snapshots: what was recorded since the reset.
  h.reset();
  h.record(42);
  const HistogramSnapshot after_reset = h.snapshot().minus(now);
  CHECK(after_reset.count() == 1);
  CHECK(after_reset.percentile(50) == 42);
  // Windows merge back into the total.
  HistogramSnapshot rebuilt = prev;
  REQUIRE(rebuilt.merge(window).ok());
  require_same_buckets(rebuilt, now);
}

TEST_CASE("Empty histogram reports zeros", "[metrics]") {
  Histogram h;
  const HistogramSnapshot s = h.snapshot();
  CHECK(s.count() == 0);
  CHECK(s.sum() == 0);
  CHECK(s.min() == 0);
  CHECK(s.max() == 0);
  CHECK(s.mean() == 0.0);
  CHECK(s.overflow() == 0);
  for (double q : kQuantiles) CHECK(s.percentile(q) == 0);
  CHECK(s.count_at_or_below(UINT64_MAX) == 0);
  int buckets = 0;
  s.for_each_bucket([&](const HistogramSnapshot::Bucket&) { ++buckets; });
  CHECK(buckets == 0);
  CHECK(s.bucket_count() == h.bucket_count());
  const HistogramSnapshot d;
  CHECK(d.percentile(50) == 0);
  CHECK(d.count_at_or_below(10) == 0);
}

TEST_CASE("Histogram::reset clears counts and extremes", "[metrics]") {
  Histogram h;
  h.record(1000000);
  h.record(7);
  h.reset();
  h.record(500);
  const HistogramSnapshot s = h.snapshot();
  CHECK(s.count() == 1);
  CHECK(s.min() == 500);
  CHECK(s.max() == 500);
  CHECK(s.sum() == 500);
}

TEST_CASE("Histogram records from 8 threads concurrently with snapshots and totals exactly", "[metrics]") {
  Histogram h;
  constexpr int kThreads = 8;
  constexpr uint64_t kPerThread = 100000;
  std::atomic<bool> done{false};
  std::atomic<int> snapshots{0}, violations{0};
  // A reader taking snapshots during recording (Catch2 assertions are not thread-safe: count violations).
  // Counts never go down, and min/max bracket every visible bucket (they are published before the bucket).
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done.load()) {
      const HistogramSnapshot s = h.snapshot();
      if (s.count() < last) violations.fetch_add(1);
      last = s.count();
      uint64_t lowest_upper = UINT64_MAX, highest_lower = 0;  // of the lowest and highest non-empty buckets
      s.for_each_bucket([&](const HistogramSnapshot::Bucket& b) {
        lowest_upper = std::min(lowest_upper, b.upper);
        highest_lower = b.lower;
      });
      if (s.count() > 0 && (s.min() > lowest_upper || s.max() < highest_lower)) {
        violations.fetch_add(1);
      }
      snapshots.fetch_add(1);
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&h, t] {
      // Thread t records t*1000 + (i % 977) + 1: known totals per thread.
      for (uint64_t i = 0; i < kPerThread; ++i) h.record(static_cast<uint64_t>(t) * 1000 + (i % 977) + 1);
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();

  uint64_t sum = 0;
  std::vector<uint64_t> per_value_count(8 * 1000 + 1000, 0);
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t i = 0; i < kPerThread; ++i) {
      const uint64_t v = static_cast<uint64_t>(t) * 1000 + (i % 977) + 1;
      sum += v;
      ++per_value_count[v];
    }
  }
  const HistogramSnapshot s = h.snapshot();
  CHECK(s.count() == kThreads * kPerThread);
  CHECK(s.sum() == sum);
  CHECK(s.min() == 1);
  CHECK(s.max() == 7000 + 977);
  // Bucket totals equal the counts of the values that fall in each bucket.
  std::vector<uint64_t> want(s.bucket_count(), 0);
  for (uint64_t v = 0; v < per_value_count.size(); ++v) want[s.layout().index_of(v)] += per_value_count[v];
  for (size_t i = 0; i < s.bucket_count(); ++i) REQUIRE(s.bucket_count_at(i) == want[i]);
  CHECK(snapshots.load() > 0);
  CHECK(violations.load() == 0);
}
