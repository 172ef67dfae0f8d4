// Histograms of uint64 values (latencies in nanoseconds, batch sizes, token counts): a log-linear,
// HdrHistogram-style bucket layout with a bounded relative error, wait-free recording, and value-type snapshots
// that give percentiles, merge across histograms, and subtract to give the recordings of a time window.
//
//   brisk::metrics::Histogram queue_ns;                       // 6 precision bits, values up to 2^40 ns
//   queue_ns.record(elapsed_ns);                              // any thread, concurrently with snapshot()
//   brisk::metrics::HistogramSnapshot now = queue_ns.snapshot();
//   uint64_t p99_last_window = now.minus(previous).percentile(99);
//   previous = now;
//
// Layout. With p precision bits, values below 2^(p+1) have a bucket each (exact). Each power-of-two range
// [2^k, 2^(k+1)) with k > p is split into 2^p linear sub-buckets of width 2^(k-p). Bucket index of v:
//   shift = max(0, floor(log2 v) - p);   index = shift * 2^p + (v >> shift)
// A bucket [L, L + W) has W <= L / 2^p, so its midpoint L + W/2 is within W/2 of every value in it.
//
// Error bound. percentile() and count_at_or_below() report each value as the midpoint of its bucket, so a
// reported percentile differs from the true order statistic by a relative error of at most 2^-(p+1)
// (0.78% for the default p = 6; well within 2^-p). Values above max_value are clamped into the top bucket and
// counted by overflow(); no bound holds for them. min(), max(), sum() and count() are exact for a snapshot of
// one histogram and for merged snapshots; min() and max() of a minus() result are bucket bounds.
// percentile() is a function of the bucket counts only, so a merged or subtracted snapshot reports exactly the
// percentiles of a histogram that had recorded the combined or windowed data.
//
// Memory: (max(0, log2(max_value) - p) + 2) * 2^p counters of 8 bytes; 18 KiB for the defaults.
//
// Thread safety: record() may be called from any number of threads concurrently with each other and with
// snapshot(); it is lock-free, never allocates, and its counter updates are wait-free (min/max use a CAS loop
// that only retries while another thread moves the same extreme). A snapshot taken during recording sees
// each recording wholly or not at all in the bucket counts; sum() may include a few in-flight recordings.
// reset() is safe to call concurrently but not atomic: recordings racing with it may be half kept.
// HistogramSnapshot is a plain value: const calls may share one; mutation needs exclusive access.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "brisk/core/status.h"

namespace brisk::metrics {

// The bucket layout shared by a Histogram and its snapshots: pure arithmetic on (precision_bits, max_value).
class HistogramLayout {
 public:
  static constexpr int kMinPrecisionBits = 1;
  static constexpr int kMaxPrecisionBits = 14;
  static constexpr int kDefaultPrecisionBits = 6;
  static constexpr uint64_t kDefaultMaxValue = uint64_t{1} << 40;

  // Out-of-range arguments are clamped (precision to [1, 14], max_value to >= 1); check() says whether they were.
  explicit HistogramLayout(int precision_bits = kDefaultPrecisionBits, uint64_t max_value = kDefaultMaxValue)
      : p_(std::clamp(precision_bits, kMinPrecisionBits, kMaxPrecisionBits)),
        max_value_(std::max<uint64_t>(max_value, 1)),
        size_(index_of(max_value_) + 1) {}

  // For configuration read from a user: an error naming the bad argument instead of clamping it.
  static Status check(int precision_bits, uint64_t max_value) {
    if (precision_bits < kMinPrecisionBits || precision_bits > kMaxPrecisionBits) {
      return absl::InvalidArgumentError(absl::StrCat("Histogram: precision_bits is ", precision_bits,
                                                     "; expected 1 to 14 (relative error 2^-(p+1))"));
    }
    if (max_value == 0) return absl::InvalidArgumentError("Histogram: max_value is 0; expected at least 1");
    return absl::OkStatus();
  }

  int precision_bits() const { return p_; }
  uint64_t max_value() const { return max_value_; }
  size_t bucket_count() const { return size_; }
  // The bound on the relative error of a reported value (for values up to max_value).
  double relative_error() const { return std::ldexp(1.0, -(p_ + 1)); }

  // Bucket of v; v must be <= max_value (record() clamps first).
  size_t index_of(uint64_t v) const {
    const int magnitude = 63 - __builtin_clzll(v | 1);
    const int shift = magnitude > p_ ? magnitude - p_ : 0;
    return (static_cast<size_t>(shift) << p_) + static_cast<size_t>(v >> shift);
  }
  // Smallest value in bucket i.
  uint64_t lower_bound(size_t i) const {
    const int shift = shift_of(i);
    return static_cast<uint64_t>(i - (static_cast<size_t>(shift) << p_)) << shift;
  }
  // Largest value in bucket i (inclusive: the bucket's highest equivalent value).
  uint64_t upper_bound(size_t i) const { return lower_bound(i) + ((uint64_t{1} << shift_of(i)) - 1); }
  // The value reported for recordings in bucket i.
  uint64_t midpoint(size_t i) const {
    const int shift = shift_of(i);
    return lower_bound(i) + ((uint64_t{1} << shift) >> 1);
  }

  bool operator==(const HistogramLayout& o) const { return p_ == o.p_ && max_value_ == o.max_value_; }

 private:
  int shift_of(size_t i) const {
    const size_t major = i >> p_;
    return major > 0 ? static_cast<int>(major) - 1 : 0;
  }

  int p_;
  uint64_t max_value_;
  size_t size_;
};

// A point-in-time copy of a Histogram's counts. A default-constructed snapshot is empty and has no layout
// (bucket_count() == 0): merging into it adopts the other snapshot's layout, and minus() treats it as empty.
class HistogramSnapshot {
 public:
  struct Bucket {
    uint64_t lower;  // smallest value in the bucket
    uint64_t upper;  // largest value in the bucket (inclusive)
    uint64_t count;
  };

  HistogramSnapshot() = default;

  uint64_t count() const { return count_; }
  uint64_t sum() const { return sum_; }  // wraps modulo 2^64
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return count_ ? max_ : 0; }
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }
  // Recordings above max_value, clamped into the top bucket.
  uint64_t overflow() const { return overflow_; }
  // True when min() and max() are exact values; false after minus(), where they are bucket bounds.
  bool exact_min_max() const { return exact_min_max_; }

  bool has_layout() const { return !counts_.empty(); }
  const HistogramLayout& layout() const { return layout_; }
  bool same_layout(const HistogramSnapshot& o) const { return has_layout() && o.has_layout() && layout_ == o.layout_; }
  // Number of buckets in the layout (empty ones included); 0 without a layout.
  size_t bucket_count() const { return counts_.size(); }
  uint64_t bucket_count_at(size_t i) const { return counts_[i]; }

  // The q-th percentile, q in [0, 100] (clamped; NaN counts as 0): the midpoint of the bucket holding the
  // recording of rank max(1, ceil(q / 100 * count())) in ascending order. 0 when empty. Monotone in q.
  uint64_t percentile(double q) const {
    if (count_ == 0) return 0;
    const uint64_t rank = rank_of(q);
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return layout_.midpoint(i);
    }
    return layout_.midpoint(counts_.size() - 1);  // unreachable while count_ is the sum of counts_
  }

  // Recordings whose reported value (bucket midpoint) is <= v: the cumulative count for a Prometheus `le`
  // bucket. Monotone in v; equals count() once v >= the midpoint of the highest non-empty bucket.
  uint64_t count_at_or_below(uint64_t v) const {
    uint64_t total = 0;
    for (size_t i = 0; i < counts_.size() && layout_.midpoint(i) <= v; ++i) total += counts_[i];
    return total;
  }

  // Calls fn(const Bucket&) for each non-empty bucket, in ascending order.
  template <typename Fn>
  void for_each_bucket(Fn&& fn) const {
    for (size_t i = 0; i < counts_.size(); ++i) {
      if (counts_[i] != 0) fn(Bucket{layout_.lower_bound(i), layout_.upper_bound(i), counts_[i]});
    }
  }

  // Adds other's recordings to this one. Both must share a layout (histograms constructed with the same
  // arguments); otherwise returns InvalidArgument and leaves this snapshot unchanged. A snapshot without a
  // layout (default-constructed) takes other's.
  Status merge(const HistogramSnapshot& other) {
    if (!other.has_layout()) return absl::OkStatus();
    if (!has_layout()) {
      *this = other;
      return absl::OkStatus();
    }
    if (!(layout_ == other.layout_)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "HistogramSnapshot::merge: layouts differ (precision_bits ", layout_.precision_bits(), " vs ",
          other.layout_.precision_bits(), ", max_value ", layout_.max_value(), " vs ", other.layout_.max_value(),
          "); expected snapshots of histograms constructed with the same arguments"));
    }
    if (other.count_ == 0) return absl::OkStatus();
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    if (count_ == 0) {
      min_ = other.min_;
      max_ = other.max_;
      exact_min_max_ = other.exact_min_max_;
    } else {
      min_ = std::min(min_, other.min_);
      max_ = std::max(max_, other.max_);
      exact_min_max_ = exact_min_max_ && other.exact_min_max_;
    }
    count_ += other.count_;
    sum_ += other.sum_;
    overflow_ += other.overflow_;
    return absl::OkStatus();
  }

  // The recordings made between `earlier` and this snapshot of the same histogram. When the histogram was reset
  // in between (some count went down), or earlier has no or another layout, the result is *this: all that is
  // known of the window. min() and max() of the result are the bounds of its lowest and highest buckets.
  HistogramSnapshot minus(const HistogramSnapshot& earlier) const {
    if (!same_layout(earlier) || earlier.count_ == 0 || earlier.overflow_ > overflow_) return *this;
    HistogramSnapshot out;
    out.layout_ = layout_;
    out.counts_.resize(counts_.size());
    for (size_t i = 0; i < counts_.size(); ++i) {
      if (earlier.counts_[i] > counts_[i]) return *this;
      out.counts_[i] = counts_[i] - earlier.counts_[i];
      out.count_ += out.counts_[i];
    }
    out.sum_ = sum_ - earlier.sum_;
    out.overflow_ = overflow_ - earlier.overflow_;
    out.set_bucket_min_max();
    return out;
  }

 private:
  friend class Histogram;

  uint64_t rank_of(double q) const {
    if (!(q > 0.0)) q = 0.0;
    if (q > 100.0) q = 100.0;
    const double r = std::ceil(q / 100.0 * static_cast<double>(count_));
    if (r < 1.0) return 1;
    if (r >= static_cast<double>(count_)) return count_;
    return static_cast<uint64_t>(r);
  }

  // min/max from the lowest and highest non-empty buckets (when exact values are not known).
  void set_bucket_min_max() {
    exact_min_max_ = false;
    min_ = max_ = 0;
    if (count_ == 0) return;
    size_t lo = 0, hi = counts_.size() - 1;
    while (counts_[lo] == 0) ++lo;
    while (counts_[hi] == 0) --hi;
    min_ = layout_.lower_bound(lo);
    max_ = layout_.upper_bound(hi);
  }

  HistogramLayout layout_;
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  uint64_t overflow_ = 0;
  bool exact_min_max_ = true;
};

// The live histogram. Not copyable or movable (it owns atomics shared with recording threads); hold it by
// value in a long-lived object or by unique_ptr.
class Histogram {
 public:
  // precision_bits in [1, 14] and max_value >= 1; out-of-range values are clamped (HistogramLayout::check
  // validates user configuration first). Allocates all buckets now; nothing allocates afterwards.
  explicit Histogram(int precision_bits = HistogramLayout::kDefaultPrecisionBits,
                     uint64_t max_value = HistogramLayout::kDefaultMaxValue)
      : layout_(precision_bits, max_value), counts_(new std::atomic<uint64_t>[layout_.bucket_count()]) {
    reset();
  }
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Records `count` occurrences of `value`. Values above max_value() land in the top bucket and in overflow.
  void record(uint64_t value, uint64_t count = 1) noexcept {
    if (count == 0) [[unlikely]]
      return;
    // min/max/sum are published before the bucket (release), so a snapshot that sees the bucket increment
    // also sees min <= value <= max.
    uint64_t cur = min_.load(std::memory_order_relaxed);
    while (value < cur && !min_.compare_exchange_weak(cur, value, std::memory_order_relaxed)) {
    }
    cur = max_.load(std::memory_order_relaxed);
    while (value > cur && !max_.compare_exchange_weak(cur, value, std::memory_order_relaxed)) {
    }
    sum_.fetch_add(value * count, std::memory_order_relaxed);
    uint64_t bucketed = value;
    if (value > layout_.max_value()) [[unlikely]] {
      overflow_.fetch_add(count, std::memory_order_relaxed);
      bucketed = layout_.max_value();
    }
    counts_[layout_.index_of(bucketed)].fetch_add(count, std::memory_order_release);
  }

  // Copies the counts (one allocation of bucket_count() * 8 bytes).
  HistogramSnapshot snapshot() const {
    HistogramSnapshot s;
    s.layout_ = layout_;
    s.counts_.resize(layout_.bucket_count());
    for (size_t i = 0; i < s.counts_.size(); ++i) {
      s.counts_[i] = counts_[i].load(std::memory_order_acquire);
      s.count_ += s.counts_[i];
    }
    // Read after the buckets, which record() updates last: every recording visible in a bucket is also in
    // overflow, sum, min and max (in-flight ones may be in those but not yet in a bucket).
    s.overflow_ = std::min(overflow_.load(std::memory_order_relaxed), s.count_);
    s.sum_ = sum_.load(std::memory_order_relaxed);
    s.min_ = min_.load(std::memory_order_relaxed);
    s.max_ = max_.load(std::memory_order_relaxed);
    s.exact_min_max_ = true;
    if (s.count_ == 0) {
      s.min_ = s.max_ = 0;
    } else if (s.min_ > s.max_) {
      s.set_bucket_min_max();  // a reset() raced with this snapshot
    }
    return s;
  }

  // Zeroes all counts. Not atomic with concurrent record() calls (see the file comment).
  void reset() noexcept {
    for (size_t i = 0; i < layout_.bucket_count(); ++i) counts_[i].store(0, std::memory_order_relaxed);
    sum_.store(0, std::memory_order_relaxed);
    overflow_.store(0, std::memory_order_relaxed);
    min_.store(std::numeric_limits<uint64_t>::max(), std::memory_order_relaxed);
    max_.store(0, std::memory_order_relaxed);
  }

  const HistogramLayout& layout() const { return layout_; }
  int precision_bits() const { return layout_.precision_bits(); }
  uint64_t max_value() const { return layout_.max_value(); }
  size_t bucket_count() const { return layout_.bucket_count(); }

 private:
  const HistogramLayout layout_;
  const std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  // Written by every record(); on their own cache line, away from the read-only layout and pointer.
  alignas(64) std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> min_{0};
  std::atomic<uint64_t> max_{0};
  std::atomic<uint64_t> overflow_{0};
};

}  // namespace brisk::metrics
