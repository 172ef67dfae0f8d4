// Internal to lib/cache/semantic_cache*.cc: SemanticCache's state, shared by the cache proper
// (semantic_cache.cc) and its persistence (semantic_cache_io.cc).
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "brisk/cache/semantic_cache.h"
#include "brisk/metrics/histogram.h"
#include "semantic_index.h"

namespace brisk::cache {

// This absl predates std::string_view aliasing: StrCat and heterogeneous lookups need absl::string_view.
inline absl::string_view av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// One cache entry; its index in Tenant::slots is its hnswlib label.
struct SemanticSlot {
  bool live = false;
  uint64_t generation = 0;  // bumped on every reuse, so a deferred removal never hits a newer entry
  std::string key;          // question_key(question)
  std::string question;     // normalised
  std::string answer;
  std::vector<std::string> tags;
  std::vector<float> embedding;  // L2-normalised (kept for save())
  TimePoint expires = TimePoint::max();
  mutable std::atomic<uint64_t> last_used{0};  // a tick of Impl::tick_, bumped by hits under the reader lock
};

// Every field but `name` is guarded by `mu`: shared for lookups, exclusive for changes. A std::shared_mutex,
// not absl::Mutex: the distribution's prebuilt absl is not instrumented, so ThreadSanitizer cannot see it.
struct SemanticTenant {
  std::string name;
  mutable std::shared_mutex mu;
  std::unique_ptr<internal::HnswIndex> index;
  std::deque<SemanticSlot> slots;     // a deque: slots never move (atomics inside)
  std::vector<uint32_t> free_labels;  // removed entries' labels, reused first
  absl::flat_hash_map<std::string, uint32_t> by_key;
  absl::flat_hash_map<std::string, absl::flat_hash_set<uint32_t>> by_tag;
  size_t live = 0;  // written under mu exclusively; read under it too
};

// What save() writes for one entry.
struct SemanticRecord {
  std::string tenant, question, answer;
  std::vector<std::string> tags;
  Duration ttl_left;  // Duration::max(): never expires
  std::vector<float> embedding;
};

struct SemanticCache::Impl {
  SemanticCacheOptions options;
  std::shared_ptr<Clock> clock;

  mutable std::shared_mutex tenants_mu;  // guards `tenants`; tenants are never removed
  absl::flat_hash_map<std::string, std::unique_ptr<SemanticTenant>> tenants;

  std::atomic<uint64_t> tick{0};
  struct Counters {
    std::atomic<uint64_t> lookups{0}, hits{0}, no_candidate{0}, below_threshold{0}, rejected{0}, expired{0}, invalid{0},
        rejected_by_verifier{0}, inserts{0}, replacements{0}, expirations{0}, evictions{0}, invalidations{0},
        erasures{0};
    std::atomic<uint64_t> verifier_calls{0}, verifier_accepted{0}, verifier_rejected{0}, verifier_errors{0};
  } counters;
  metrics::Histogram verifier_ns;                             // wall time of each verifier call
  std::unique_ptr<std::atomic<uint64_t>[]> guard_rejections;  // one per options.guards

  // OK while another tenant fits; else the RESOURCE_EXHAUSTED that names the limit. Call with tenants_mu held.
  Status tenant_limit(std::string_view tenant_name) const;
  // Inserts with an absolute expiry (load() restores remaining TTLs through it).
  Status insert_until(std::string_view tenant, std::string_view question, std::span<const float> embedding,
                      std::string answer, std::vector<std::string> tags, TimePoint expires);
  // Every unexpired entry, per tenant least recently used first.
  std::vector<SemanticRecord> snapshot() const;

  // One verifier call (semantic_verifier.cc), with no lock held: timed, counted, exceptions and non-finite
  // scores turned into errors.
  struct Verdict {
    bool accepted = false;
    float score = 0;
    Status error;  // non-OK: the call failed (a rejection)
  };
  Verdict verify(const SemanticPair& pair);
};

}  // namespace brisk::cache
