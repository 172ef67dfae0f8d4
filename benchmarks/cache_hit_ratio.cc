// brisk_cache_hit_ratio: a trace simulator for brisk::cache::Cache. It replays synthetic request traces through
// brisk's W-TinyLFU and LRU policies and through Bélády's OPT (the clairvoyant optimum), and prints the hit
// ratios as a markdown table plus a PASS/FAIL line per target:
//   - W-TinyLFU >= LRU on every trace and size;
//   - W-TinyLFU >= LRU + 5 points on the scan and loop traces.
//
//   brisk_cache_hit_ratio [--quick] [--seed=N] [--length=N]
//   (default: 1.5M requests per trace, cache sizes 1k/4k/16k entries; --quick: 500k requests, 500/2k/8k)
//
// Traces (keys drawn over a universe of 200k keys unless said otherwise):
//   zipf-a     Zipf(a) popularity, a in {0.6, 0.8, 1.0, 1.2}
//   zipf+scan  Zipf(0.9) blocks of 50k requests, each followed by a scan of 20k never-repeated keys (~29%)
//   loop       cyclic over 1.1 x cache-size keys (so the trace depends on the size)
//   shift      Zipf(0.9) whose popular set is replaced by disjoint keys halfway through
// The brisk caches run with shards = 1 so that the whole capacity is one policy (the simulator measures the
// policy, not the sharding); one extra row runs the automatic shard count. A request that misses is followed by
// a put, as a read-through cache does. OPT may bypass (not cache) an item whose next use is later than every
// cached item's, which is what makes it optimal.
// Exit status: 0 when every target holds, 1 otherwise.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "brisk/cache/cache.h"

namespace {

using brisk::cache::CacheOptions;
using brisk::cache::EvictionPolicy;

// absl::Hash is salted per process; a fixed hash makes a run reproducible from its seed alone.
struct FixedHash {
  size_t operator()(uint64_t k) const { return brisk::cache::internal::spread_hash(k ^ 0x2545F4914F6CDD1DULL); }
};
using SimCache = brisk::cache::Cache<uint64_t, uint32_t, FixedHash>;

struct Trace {
  std::string name;
  bool scan_or_loop = false;  // held to the +5 points target
  std::vector<uint64_t> keys;
};

class ZipfSampler {
 public:
  ZipfSampler(size_t n, double alpha) : cdf_(n) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      sum += 1.0 / std::pow(static_cast<double>(i + 1), alpha);
      cdf_[i] = sum;
    }
    for (double& c : cdf_) c /= sum;
  }
  size_t operator()(std::mt19937_64& rng) const {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    return std::min<size_t>(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin(), cdf_.size() - 1);
  }

 private:
  std::vector<double> cdf_;
};

// Rank -> key through a random permutation, so popularity is unrelated to the key's value.
std::vector<uint64_t> permutation(size_t n, uint64_t offset, std::mt19937_64& rng) {
  std::vector<uint64_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = offset + i;
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

constexpr size_t kUniverse = 200'000;

Trace zipf_trace(double alpha, size_t length, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ZipfSampler z(kUniverse, alpha);
  const auto perm = permutation(kUniverse, 0, rng);
  Trace t{fmt::format("zipf-{:.1f}", alpha), false, {}};
  t.keys.reserve(length);
  for (size_t i = 0; i < length; ++i) t.keys.push_back(perm[z(rng)]);
  return t;
}

Trace scan_trace(size_t length, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ZipfSampler z(kUniverse, 0.9);
  const auto perm = permutation(kUniverse, 0, rng);
  Trace t{"zipf+scan", true, {}};
  t.keys.reserve(length);
  uint64_t next_scan_key = 1ULL << 40;  // scan keys are never repeated
  while (t.keys.size() < length) {
    for (size_t i = 0; i < 50'000 && t.keys.size() < length; ++i) t.keys.push_back(perm[z(rng)]);
    for (size_t i = 0; i < 20'000 && t.keys.size() < length; ++i) t.keys.push_back(next_scan_key++);
  }
  return t;
}

Trace loop_trace(size_t cache_size, size_t length) {
  const size_t n = cache_size + cache_size / 10;
  Trace t{"loop", true, {}};
  t.keys.reserve(length);
  for (size_t i = 0; i < length; ++i) t.keys.push_back(i % n);
  return t;
}

Trace shift_trace(size_t length, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ZipfSampler z(kUniverse, 0.9);
  const auto before = permutation(kUniverse, 0, rng);
  const auto after = permutation(kUniverse, kUniverse, rng);  // disjoint keys
  Trace t{"shift", false, {}};
  t.keys.reserve(length);
  for (size_t i = 0; i < length; ++i) t.keys.push_back((i < length / 2 ? before : after)[z(rng)]);
  return t;
}

// Next use of each request's key (keys.size() for never again), by one backward pass.
std::vector<size_t> next_uses(const std::vector<uint64_t>& keys) {
  std::vector<size_t> next(keys.size());
  absl::flat_hash_map<uint64_t, size_t> last;
  last.reserve(keys.size() / 4);
  for (size_t i = keys.size(); i-- > 0;) {
    auto [it, inserted] = last.try_emplace(keys[i], keys.size());
    next[i] = it->second;
    it->second = i;
  }
  return next;
}

// Bélády's OPT with bypass: the cached keys ordered by next use; on a miss with the cache full, the key used
// furthest in the future (possibly the requested one) is the one left out.
double opt_hit_ratio(const std::vector<uint64_t>& keys, const std::vector<size_t>& next, size_t capacity) {
  std::set<std::pair<size_t, uint64_t>> by_next;      // (next use, key)
  absl::flat_hash_map<uint64_t, size_t> cached_next;  // key -> its entry's next use
  uint64_t hits = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t k = keys[i];
    if (auto it = cached_next.find(k); it != cached_next.end()) {
      ++hits;
      by_next.erase({it->second, k});
      by_next.insert({next[i], k});
      it->second = next[i];
      continue;
    }
    if (cached_next.size() >= capacity) {
      auto furthest = std::prev(by_next.end());
      if (furthest->first <= next[i]) continue;  // the new key is needed last: bypass it
      cached_next.erase(furthest->second);
      by_next.erase(furthest);
    }
    by_next.insert({next[i], k});
    cached_next.emplace(k, next[i]);
  }
  return static_cast<double>(hits) / static_cast<double>(keys.size());
}

struct BriskResult {
  double hit_ratio = 0;
  double window_fraction = 0;  // final admission window / capacity (W-TinyLFU)
};

BriskResult brisk_hit_ratio(const std::vector<uint64_t>& keys, size_t capacity, EvictionPolicy policy, int shards,
                            uint64_t seed) {
  CacheOptions<uint64_t, uint32_t> o;
  o.max_entries = capacity;
  o.policy = policy;
  o.shards = shards;
  o.seed = seed;
  auto cache = SimCache::create(o);
  if (!cache.ok()) {
    fmt::print(stderr, "cache: {}\n", cache.status().ToString());
    std::exit(2);
  }
  uint64_t hits = 0;
  for (uint64_t k : keys) {
    if ((*cache)->get(k)) {
      ++hits;
    } else {
      (*cache)->put(k, 0);
    }
  }
  const auto st = (*cache)->stats();
  return {static_cast<double>(hits) / static_cast<double>(keys.size()),
          static_cast<double>(st.window_capacity) / static_cast<double>(st.capacity)};
}

struct Row {
  std::string trace;
  size_t size;
  std::string note;
  BriskResult tinylfu;
  double lru, opt;
  bool scan_or_loop;
};

void run(const Trace& t, size_t size, int shards, uint64_t seed, std::vector<Row>& rows, const std::string& note = "") {
  const auto next = next_uses(t.keys);
  Row r{t.name,
        size,
        note,
        brisk_hit_ratio(t.keys, size, EvictionPolicy::kWTinyLfu, shards, seed),
        brisk_hit_ratio(t.keys, size, EvictionPolicy::kLru, shards, seed).hit_ratio,
        opt_hit_ratio(t.keys, next, size),
        t.scan_or_loop};
  fmt::print(stderr, "  {} size {}{}: W-TinyLFU {:.2f}% LRU {:.2f}% OPT {:.2f}%\n", t.name, size, note,
             100 * r.tinylfu.hit_ratio, 100 * r.lru, 100 * r.opt);
  rows.push_back(std::move(r));
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  uint64_t seed = 42;
  size_t length = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a.rfind("--seed=", 0) == 0) {
      seed = std::strtoull(a.c_str() + 7, nullptr, 10);
    } else if (a.rfind("--length=", 0) == 0) {
      length = std::strtoull(a.c_str() + 9, nullptr, 10);
    } else {
      fmt::print(stderr, "usage: {} [--quick] [--seed=N] [--length=N]\n  unknown argument '{}'\n", argv[0], a);
      return 2;
    }
  }
  // --quick halves the cache sizes with a third of the requests: W-TinyLFU needs the trace to be long against
  // its sketch's aging period (10 x capacity requests) to recover from the shift trace's change of popular set.
  if (length == 0) length = quick ? 500'000 : 1'500'000;
  const std::vector<size_t> sizes =
      quick ? std::vector<size_t>{500, 2'000, 8'000} : std::vector<size_t>{1'000, 4'000, 16'000};
  const auto start = std::chrono::steady_clock::now();

  std::vector<Row> rows;
  std::vector<Trace> fixed;
  for (double a : {0.6, 0.8, 1.0, 1.2}) fixed.push_back(zipf_trace(a, length, seed + static_cast<uint64_t>(a * 10)));
  fixed.push_back(scan_trace(length, seed + 100));
  fixed.push_back(shift_trace(length, seed + 200));
  for (const Trace& t : fixed) {
    for (size_t s : sizes) run(t, s, 1, seed, rows);
  }
  for (size_t s : sizes) run(loop_trace(s, length), s, 1, seed, rows);
  run(fixed[1], sizes.back(), 0, seed, rows,
      fmt::format(" (auto: {} shards)", SimCache::automatic_shards(sizes.back())));

  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("Cache hit ratios, {} requests per trace, seed {}, brisk shards = 1 unless noted ({:.1f} s)\n\n", length,
             seed, secs);
  fmt::print("| trace | size | W-TinyLFU | LRU | OPT | W-TinyLFU - LRU (points) | W-TinyLFU/OPT | window |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    fmt::print("| {} | {}{} | {:.2f}% | {:.2f}% | {:.2f}% | {:+.2f} | {:.3f} | {:.1f}% |\n", r.trace, r.size, r.note,
               100 * r.tinylfu.hit_ratio, 100 * r.lru, 100 * r.opt, 100 * (r.tinylfu.hit_ratio - r.lru),
               r.opt > 0 ? r.tinylfu.hit_ratio / r.opt : 0.0, 100 * r.tinylfu.window_fraction);
  }
  fmt::print("\n(window: W-TinyLFU's adaptive admission window at the end of the trace, as a share of capacity)\n\n");

  bool all_pass = true;
  for (const Row& r : rows) {
    const double diff = 100 * (r.tinylfu.hit_ratio - r.lru);
    const bool ge = diff >= 0;
    fmt::print("{}: W-TinyLFU >= LRU on {} size {}{} ({:+.2f} points)\n", ge ? "PASS" : "FAIL", r.trace, r.size, r.note,
               diff);
    all_pass &= ge;
    if (r.scan_or_loop) {
      const bool plus5 = diff >= 5;
      fmt::print("{}: W-TinyLFU >= LRU + 5 points on {} size {} ({:+.2f} points)\n", plus5 ? "PASS" : "FAIL", r.trace,
                 r.size, diff);
      all_pass &= plus5;
    }
  }
  fmt::print("\n{}\n", all_pass ? "ALL TARGETS PASS" : "SOME TARGETS FAIL");
  return all_pass ? 0 : 1;
}
