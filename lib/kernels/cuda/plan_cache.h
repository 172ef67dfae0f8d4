// Private to lib/kernels/cuda: the host-side policy of the per-thread cuBLASLt plan cache (blas_handles.cc), free of
// CUDA headers so that it can be unit-tested on a CPU (tests/kernels/cuda_plan_cache_test.cc).
//
//   const RowBucket b = row_bucket(rows);            // rows 65..80 share one plan, its algorithm chosen for 80
//   LruMap<Key, std::unique_ptr<Plan>> plans(kMaxPlans);
//   if (auto* p = plans.find(key)) ...;             // a hit makes the entry the most recently used
//   plans.insert(key, std::move(plan));             // past the capacity the least recently used entry goes
//   RowChecks& seen = plan->checks;                 // which row counts of the bucket the algorithm was checked for
//
// A packed batch makes the GEMM row count vary from batch to batch (the sum of its sequence lengths). Keying plans
// on the exact count made one heuristic query per new count and a cache that grew until it was dropped whole. A
// plan is now keyed on the count's bucket, its algorithm chosen by the heuristic for the bucket's largest count, and
// its layouts set to each call's own count. An algorithm is only known to suit the problem it was chosen for, so
// each row count of the bucket is checked once (cublasLtMatmulAlgoCheck, whose verdict RowChecks keeps); a count it
// fails gets a plan of its own.
//
// Thread safety: none; each BlasContext owns its cache and is used by one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"

namespace brisk::kernels::cuda {

// The row counts lo..hi (inclusive) that share a plan.
struct RowBucket {
  int64_t lo = 1;
  int64_t hi = 1;
  int64_t width() const { return hi - lo + 1; }
  friend bool operator==(const RowBucket&, const RowBucket&) = default;
};

// Up to 64 rows, powers of two: {1}, {2}, 3..4, 5..8, ..., 33..64. Above, four buckets per doubling: 65..80,
// 81..96, 97..112, 113..128, 129..160, ... so a bucket is at most a quarter of its counts wide (a 2,000-row batch
// shares its algorithm with 1,793..2,048), and a thread sees at most 4 buckets per doubling of its batch sizes.
// rows < 1 is treated as 1.
inline RowBucket row_bucket(int64_t rows) {
  if (rows <= 1) return {1, 1};
  int64_t p = 1;  // the largest power of two below rows
  while (p * 2 < rows) p *= 2;
  if (rows <= 64) return {p + 1, p * 2};
  const int64_t step = p / 4;
  const int64_t hi = p + (rows - p + step - 1) / step * step;
  return {hi - step + 1, hi};
}

// Which row counts of a bucket a plan's algorithm has been checked for, and the verdict. Counts past the first
// kMaxTracked of a wide bucket are not remembered (unknown() on every call): those GEMMs are large enough that a
// check per call costs nothing next to them.
class RowChecks {
 public:
  enum class Verdict : uint8_t { kUnknown, kFits, kNeedsOwnPlan };
  static constexpr int64_t kMaxTracked = 4096;

  RowChecks() = default;
  explicit RowChecks(RowBucket bucket)
      : bucket_(bucket), verdicts_(static_cast<size_t>(std::min(bucket.width(), kMaxTracked)), Verdict::kUnknown) {}

  // kUnknown for a count outside the bucket or past the tracked ones.
  Verdict get(int64_t rows) const {
    const int64_t i = rows - bucket_.lo;
    if (i < 0 || i >= static_cast<int64_t>(verdicts_.size())) return Verdict::kUnknown;
    return verdicts_[static_cast<size_t>(i)];
  }
  void set(int64_t rows, Verdict v) {
    const int64_t i = rows - bucket_.lo;
    if (i >= 0 && i < static_cast<int64_t>(verdicts_.size())) verdicts_[static_cast<size_t>(i)] = v;
  }
  RowBucket bucket() const { return bucket_; }

 private:
  RowBucket bucket_;
  std::vector<Verdict> verdicts_;
};

// A map bounded to `capacity` entries that evicts the least recently used one (find() and insert() use an entry).
// Value pointers stay valid until their entry is evicted or erased; insert() never evicts the entry it inserts, so
// with capacity >= 2 the entry found just before an insert survives it.
template <typename Key, typename Value, typename Hash = absl::Hash<Key>>
class LruMap {
 public:
  // capacity 0 is taken as 1.
  explicit LruMap(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}
  LruMap(const LruMap&) = delete;
  LruMap& operator=(const LruMap&) = delete;

  // The entry's value, now the most recently used, or nullptr.
  Value* find(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }

  // Inserts or replaces the entry, as the most recently used; evicts the least recently used one past capacity.
  Value& insert(const Key& key, Value value) {
    if (auto it = index_.find(key); it != index_.end()) {
      it->second->second = std::move(value);
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    if (index_.size() >= capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
      ++evictions_;
    }
    order_.emplace_front(key, std::move(value));
    index_.emplace(key, order_.begin());
    return order_.front().second;
  }

  bool erase(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    order_.erase(it->second);
    index_.erase(it);
    return true;
  }

  void clear() {
    index_.clear();
    order_.clear();
  }

  size_t size() const { return index_.size(); }
  size_t capacity() const { return capacity_; }
  uint64_t evictions() const { return evictions_; }
  // The keys from the most to the least recently used.
  std::vector<Key> keys_by_recency() const {
    std::vector<Key> keys;
    keys.reserve(order_.size());
    for (const auto& [key, value] : order_) keys.push_back(key);
    return keys;
  }

 private:
  using Order = std::list<std::pair<Key, Value>>;
  size_t capacity_;
  Order order_;  // most recently used first
  absl::flat_hash_map<Key, typename Order::iterator, Hash> index_;
  uint64_t evictions_ = 0;
};

}  // namespace brisk::kernels::cuda
