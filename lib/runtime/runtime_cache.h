// The runtime's caches: a token cache (raw text -> token ids) in front of the tokenizer and a result cache
// (token ids -> embedding; in-process L1, optionally a shared Redis L2) in front of the batcher.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "brisk/cache/cache.h"
#include "brisk/cache/tiered_cache.h"
#include "brisk/metrics/prometheus.h"
#include "brisk/runtime/runtime.h"

namespace brisk {

// Thread safety: every member may be called from any thread at once. Internal: its test
// (tests/runtime/runtime_cache_many_test.cc) compiles in the library's objects (brisk_internal).
class RuntimeCaches {
 public:
  using Tokenize = absl::FunctionRef<StatusOr<std::vector<int32_t>>(std::string_view)>;

  // dim: the embedding length. A cached value is checked before it is returned: one of another length, with a NaN
  // or an infinity, or (unit_norm: the model's embeddings are L2-normalised) whose norm is not 1 within 1e-3, is
  // dropped and counted, never returned (only a foreign writer to the shared Redis tier can plant one).
  // shared_model: the name the results go by in the Redis tier (runtime_shared_model()); "": model_id.
  static StatusOr<std::unique_ptr<RuntimeCaches>> create(const RuntimeCacheOptions& options, std::string model_id,
                                                         size_t dim, bool unit_norm = false,
                                                         std::string shared_model = {});

  // Texts longer than this (bytes) bypass the token cache.
  static constexpr size_t kMaxTokenCacheTextBytes = 1024;

  // The token ids of `text`, from the token cache or `tokenize` (whose errors are returned and not cached).
  StatusOr<std::vector<int32_t>> tokens(std::string_view text, Tokenize tokenize);
  // The cached embedding of these token ids, if any.
  std::optional<std::vector<float>> lookup(std::span<const int32_t> ids);
  // lookup() of many token-id sequences: one element per sequence, in order. L1 first, then one Redis round
  // trip (TieredCache::get_many) for all the L1 misses, none when L1 had them all. Stats count per sequence
  // exactly as that many lookup() calls would (hits, misses, wrong lengths), except that a failed Redis call
  // is one l2 error (see TieredCache::get_many).
  std::vector<std::optional<std::vector<float>>> lookup_many(std::span<const std::span<const int32_t>> ids);
  // The result for these token ids that expired at most RuntimeCacheOptions::stale_ttl ago (or is still fresh), for
  // stale-if-error; nullopt when stale_ttl is 0 or none was kept.
  std::optional<std::vector<float>> lookup_stale(std::span<const int32_t> ids);
  // Caches an embedding under its token ids with `tags` (and keeps a stale copy when stale_ttl > 0), unless a tag was
  // invalidated since `epoch` (invalidation_epoch() when its computation started): a result computed before an
  // invalidation must not come back after it.
  void store(std::span<const int32_t> ids, std::span<const float> embedding, std::span<const std::string> tags,
             uint64_t epoch);
  // The same for a result computed now.
  void store(std::span<const int32_t> ids, std::span<const float> embedding, std::span<const std::string> tags = {}) {
    store(ids, embedding, tags, invalidation_epoch());
  }
  // Counts invalidate_tag() calls.
  uint64_t invalidation_epoch() const { return invalidations_.load(std::memory_order_acquire); }
  // "model:<model id>" drops every result in this process's L1 (the Redis copies expire with result_ttl).
  StatusOr<size_t> invalidate_tag(std::string_view tag);

  bool caches_results() const { return result_cache_ != nullptr; }
  const std::string& model_id() const { return model_id_; }
  std::string stats_json() const;
  void write_prometheus(metrics::PrometheusWriter& w, const std::string& model) const;

 private:
  using TokenIds = std::shared_ptr<const std::vector<int32_t>>;
  using ResultCache = cache::TieredCache<std::vector<float>, cache::FloatVectorCodec>;

  RuntimeCaches() = default;
  // A hit of the wrong length, non-finite, or off the unit sphere (planted in the shared Redis tier) is dropped from
  // L1, counted and reset.
  void drop_if_invalid(const std::string& key, std::optional<std::vector<float>>& hit);
  std::string model_id_;
  std::string shared_model_;  // the Redis tier's name for this runtime's results
  size_t dim_ = 0;
  bool unit_norm_ = false;
  bool authenticated_ = false;  // shared values are signed and their signatures checked
  std::atomic<uint64_t> wrong_length_{0};
  std::atomic<uint64_t> invalid_values_{0};  // non-finite, or not unit-norm where unit_norm_
  std::atomic<uint64_t> invalidations_{0};
  std::string model_tag_;
  cache::PutOptions result_put_;
  std::unique_ptr<cache::Cache<std::string, TokenIds>> token_cache_;
  std::unique_ptr<ResultCache> result_cache_;
  // Results kept result_ttl + stale_ttl, for lookup_stale(); null when stale_ttl is 0.
  std::unique_ptr<cache::Cache<std::string, std::vector<float>>> stale_cache_;
};

// "<model directory name>-<hash>-<pooling><-n if normalised>", the hash over config.json, the weights file, the
// sequence length and, past a native embedding model, the backend's name, output and labels (and the task suffix
// "-cls"): what keys results in a Redis tier shared by processes that load the same model with the same options.
std::string runtime_model_id(const ModelInfo& info, const BackendInfo& backend);

// The name a runtime's results go by in a shared Redis tier: `model_id`, and where the numbers were computed at
// another precision than the model file's own float32 arithmetic, that precision ("-f16" or "-bf16" activations,
// "-int8attn" for int8 self-attention), so that processes sharing a tier serve one another only results computed
// alike. Not part of model_id itself: a verifier, an intent head or a semantic cache fitted on one precision's
// embeddings serves the others.
std::string runtime_shared_model(const std::string& model_id, const ModelInfo& info);

}  // namespace brisk
