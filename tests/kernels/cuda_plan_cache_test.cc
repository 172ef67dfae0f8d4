// The host-side policy of the cuBLASLt plan cache (lib/kernels/cuda/plan_cache.h): row counts share a plan per
// bucket (powers of two up to 64, quarter doublings above), every count lands in exactly one bucket, the cache is
// bounded and evicts the least recently used plan instead of dropping them all, and each bucket remembers which of
// its counts its algorithm was checked for. Runs in every build, GPU or not.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/plan_cache.h"

namespace brisk::kernels::cuda {

TEST_CASE("plan cache: row buckets are powers of two up to 64 and quarter doublings above", "[kernels][plan-cache]") {
  CHECK(row_bucket(1) == RowBucket{1, 1});
  CHECK(row_bucket(2) == RowBucket{2, 2});
  CHECK(row_bucket(3) == RowBucket{3, 4});
  CHECK(row_bucket(4) == RowBucket{3, 4});
  CHECK(row_bucket(5) == RowBucket{5, 8});
  CHECK(row_bucket(33) == RowBucket{33, 64});
  CHECK(row_bucket(64) == RowBucket{33, 64});
  CHECK(row_bucket(65) == RowBucket{65, 80});
  CHECK(row_bucket(80) == RowBucket{65, 80});
  CHECK(row_bucket(81) == RowBucket{81, 96});
  CHECK(row_bucket(128) == RowBucket{113, 128});
  CHECK(row_bucket(129) == RowBucket{129, 160});
  CHECK(row_bucket(2000) == RowBucket{1793, 2048});
  CHECK(row_bucket(4096) == RowBucket{3585, 4096});
  CHECK(row_bucket(0) == RowBucket{1, 1});
  CHECK(row_bucket(-5) == RowBucket{1, 1});
}

TEST_CASE("plan cache: every row count lies in exactly one bucket and buckets stay narrow", "[kernels][plan-cache]") {
  int64_t next = 1;  // the buckets tile 1, 2, 3, ... without gaps or overlaps
  std::set<int64_t> tops;
  for (int64_t rows = 1; rows <= 70000; ++rows) {
    const RowBucket b = row_bucket(rows);
    INFO("rows " << rows << " -> " << b.lo << ".." << b.hi);
    REQUIRE(b.lo <= rows);
    REQUIRE(rows <= b.hi);
    REQUIRE(row_bucket(b.lo) == b);
    REQUIRE(row_bucket(b.hi) == b);
    if (rows == b.lo) {
      REQUIRE(b.lo == next);
      next = b.hi + 1;
    }
    // At most a quarter of the counts above 64 (exactly: the width divides into the bucket's top).
    if (rows > 64) REQUIRE(b.width() * 4 <= b.hi);
    // Tops above 2 are multiples of 4 (int8 GEMMs pad their rows to one), so a bucket's heuristic runs on a count
    // its members use.
    if (b.hi > 2) REQUIRE(b.hi % 4 == 0);
    tops.insert(b.hi);
  }
  // 70,000 distinct counts: a few dozen plans per shape, where exact keys made 70,000.
  CHECK(tops.size() <= 7 + 4 * 11);
}

TEST_CASE("plan cache: the LRU map evicts the least recently used entry at capacity", "[kernels][plan-cache]") {
  LruMap<int, std::unique_ptr<std::string>> m(3);
  m.insert(1, std::make_unique<std::string>("one"));
  m.insert(2, std::make_unique<std::string>("two"));
  m.insert(3, std::make_unique<std::string>("three"));
  CHECK(m.keys_by_recency() == std::vector<int>{3, 2, 1});
  REQUIRE(m.find(1) != nullptr);  // 1 is now the most recent: 2 is the oldest
  CHECK(**m.find(1) == "one");
  CHECK(m.keys_by_recency() == std::vector<int>{1, 3, 2});
  m.insert(4, std::make_unique<std::string>("four"));
  CHECK(m.size() == 3);
  CHECK(m.evictions() == 1);
  CHECK(m.find(2) == nullptr);
  CHECK(m.find(1) != nullptr);
  CHECK(m.find(3) != nullptr);
  CHECK(m.find(4) != nullptr);
  // Replacing a key keeps the size and makes it the most recent.
  std::string* before = m.find(3)->get();
  m.insert(3, std::make_unique<std::string>("THREE"));
  CHECK(m.size() == 3);
  CHECK(m.keys_by_recency().front() == 3);
  CHECK(**m.find(3) == "THREE");
  (void)before;
  CHECK(m.erase(4));
  CHECK_FALSE(m.erase(4));
  CHECK(m.size() == 2);
  m.clear();
  CHECK(m.size() == 0);
  CHECK(m.find(1) == nullptr);
}

TEST_CASE("plan cache: a bounded map keeps a hot working set while cold keys stream through", "[kernels][plan-cache]") {
  // The old cache dropped every plan when the 2,048th exact shape arrived; an LRU keeps the ones in use.
  LruMap<int64_t, int> m(64);
  for (int64_t hot = 0; hot < 8; ++hot) m.insert(hot, 1);
  for (int64_t cold = 1000; cold < 11000; ++cold) {
    for (int64_t hot = 0; hot < 8; ++hot) REQUIRE(m.find(hot) != nullptr);
    if (m.find(cold) == nullptr) m.insert(cold, 0);
    REQUIRE(m.size() <= 64);
  }
  CHECK(m.evictions() == 10000 - (64 - 8));
  // The value an earlier find returned survives an insert that evicts another entry.
  int* hot = m.find(0);
  m.insert(99999, 5);
  CHECK(m.find(0) == hot);
  LruMap<int, int> one(0);  // capacity 0 acts as 1
  CHECK(one.capacity() == 1);
  one.insert(1, 1);
  one.insert(2, 2);
  CHECK(one.size() == 1);
  CHECK(one.find(2) != nullptr);
}

TEST_CASE("plan cache: row checks remember each count's verdict within the bucket", "[kernels][plan-cache]") {
  using Verdict = RowChecks::Verdict;
  RowChecks c(row_bucket(70));  // 65..80
  CHECK(c.bucket() == RowBucket{65, 80});
  for (int64_t rows = 60; rows <= 85; ++rows) CHECK(c.get(rows) == Verdict::kUnknown);
  c.set(80, Verdict::kFits);
  c.set(67, Verdict::kNeedsOwnPlan);
  c.set(64, Verdict::kFits);  // outside: ignored
  c.set(81, Verdict::kFits);
  CHECK(c.get(80) == Verdict::kFits);
  CHECK(c.get(67) == Verdict::kNeedsOwnPlan);
  CHECK(c.get(66) == Verdict::kUnknown);
  CHECK(c.get(64) == Verdict::kUnknown);
  CHECK(c.get(81) == Verdict::kUnknown);
  // A very wide bucket tracks only its first kMaxTracked counts; the rest are checked on every call.
  RowChecks wide(row_bucket(100000));
  const RowBucket b = wide.bucket();
  REQUIRE(b.width() > RowChecks::kMaxTracked);
  wide.set(b.lo, Verdict::kFits);
  wide.set(b.hi, Verdict::kFits);
  CHECK(wide.get(b.lo) == Verdict::kFits);
  CHECK(wide.get(b.hi) == Verdict::kUnknown);
  RowChecks none;  // a default plan-less state
  CHECK(none.get(1) == Verdict::kUnknown);
}

}  // namespace brisk::kernels::cuda
