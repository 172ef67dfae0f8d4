// The runtime's token and result caches: keys, model tag, stats.
#include "runtime_cache.h"

#include <cmath>
#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "brisk/cache/cache_metrics.h"

namespace brisk {

namespace {

std::string hex128(const void* data, size_t bytes) {
  const XXH128_hash_t h = XXH3_128bits(data, bytes);
  return absl::StrFormat("%016x%016x", h.high64, h.low64);
}

}  // namespace

std::string runtime_model_id(const ModelInfo& info, const BackendInfo& backend) {
  namespace fs = std::filesystem;
  // The contents of config.json and of the weights: a fine-tune of the same shape, retrained in place, gets a
  // new id (hashing ~90 MB costs tens of milliseconds at load).
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::vector<char> chunk(size_t{1} << 20);
  // A head file (RuntimeOptions::classification_head) is hashed too: two heads over one model never share results.
  for (const fs::path& file :
       {fs::path(info.model_dir) / "config.json", fs::path(info.weights_file), fs::path(info.classification_head)}) {
    if (file.empty()) continue;
    std::ifstream in(file, std::ios::binary);
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
      XXH3_64bits_update(state, chunk.data(), static_cast<size_t>(in.gcount()));
    }
  }
  std::string shape = absl::StrCat("|", info.max_seq_len);
  // A native embedding model keeps the ids it always had, so that its Redis entries survive an upgrade.
  if (backend.name != "native" || backend.output != BackendOutput::kEmbedding) {
    absl::StrAppend(&shape, "|", backend.name, "|", std::string(backend_output_name(backend.output)), "|",
                    backend.output_dim, "|", absl::StrJoin(backend.labels, "\x1f"),
                    backend.multi_label ? "|multi" : "");
  }
  XXH3_64bits_update(state, shape.data(), shape.size());
  const uint64_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  const std::string dir = fs::path(info.model_dir).lexically_normal().filename().string();
  return absl::StrFormat("%s-%016x-%s%s%s", dir.empty() ? "model" : dir, hash, pooling_name(info.pooling),
                         info.normalize ? "-n" : "", backend.output == BackendOutput::kLogits ? "-cls" : "");
}

std::string runtime_shared_model(const std::string& model_id, const ModelInfo& info) {
  std::string name = model_id;
  if (info.activation_dtype != DType::kF32) absl::StrAppend(&name, "-", dtype_name(info.activation_dtype));
  if (info.int8_attention_layers > 0) absl::StrAppend(&name, "-int8attn");
  return name;
}

StatusOr<std::unique_ptr<RuntimeCaches>> RuntimeCaches::create(const RuntimeCacheOptions& options, std::string model_id,
                                                               size_t dim, bool unit_norm, std::string shared_model) {
  const auto hours = [](std::chrono::nanoseconds d) {
    return std::chrono::duration<double, std::ratio<3600>>(d).count();
  };
  if (options.result_ttl < std::chrono::nanoseconds::zero()) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::cache.result_ttl is negative (",
                                                   options.result_ttl.count(), " ns); expected >= 0 (0: no expiry)"));
  }
  if (options.result_ttl > kMaxCacheTtl) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::cache.result_ttl is ", hours(options.result_ttl),
                                                   " h; expected at most ", hours(kMaxCacheTtl), " h (366 days)"));
  }
  if (options.redis && options.result_ttl == std::chrono::nanoseconds::zero()) {
    return absl::InvalidArgumentError(
        "RuntimeOptions::cache.result_ttl is 0 (no expiry) with a Redis tier; expected > 0 so that shared "
        "entries expire");
  }
  if (options.redis && options.result_cache_bytes == 0) {
    return absl::InvalidArgumentError(
        "RuntimeOptions::cache.redis is set but result_cache_bytes is 0; expected a result cache for the Redis "
        "tier to sit behind (result_cache_bytes > 0)");
  }
  if (options.stale_ttl < std::chrono::nanoseconds::zero()) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::cache.stale_ttl is negative (",
                                                   options.stale_ttl.count(), " ns); expected >= 0 (0: none kept)"));
  }
  if (options.stale_ttl > kMaxCacheTtl) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::cache.stale_ttl is ", hours(options.stale_ttl),
                                                   " h; expected at most ", hours(kMaxCacheTtl), " h (366 days)"));
  }
  if (options.stale_ttl > std::chrono::nanoseconds::zero()) {
    if (options.result_cache_bytes == 0 || options.result_ttl == std::chrono::nanoseconds::zero()) {
      return absl::InvalidArgumentError(
          "RuntimeOptions::cache.stale_ttl is set but results are not cached with an expiry (result_cache_bytes "
          "or result_ttl is 0); expected both > 0, or stale_ttl 0");
    }
    // Another process's tag invalidation reaches the L1 through Redis but not the stale copies, which could then
    // answer with knowledge that was withdrawn.
    if (options.redis) {
      return absl::InvalidArgumentError(
          "RuntimeOptions::cache.stale_ttl is set with a Redis tier; expected one or the other (other processes' "
          "invalidations do not reach the stale copies)");
    }
  }
  auto caches = std::unique_ptr<RuntimeCaches>(new RuntimeCaches());
  caches->model_id_ = std::move(model_id);
  caches->shared_model_ = shared_model.empty() ? caches->model_id_ : std::move(shared_model);
  caches->dim_ = dim;
  caches->unit_norm_ = unit_norm;
  caches->authenticated_ = options.redis && !options.redis->signing_key.empty();
  caches->model_tag_ = absl::StrCat("model:", caches->model_id_);
  if (options.token_cache_entries > 0) {
    cache::CacheOptions<std::string, TokenIds> o;
    o.max_entries = options.token_cache_entries;
    auto c = cache::Cache<std::string, TokenIds>::create(std::move(o));
    if (!c.ok())
      return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::cache (token cache): ", c.status().message()));
    caches->token_cache_ = std::move(*c);
  }
  if (options.result_cache_bytes > 0) {
    cache::TieredCacheOptions<std::vector<float>> o;
    o.l1.max_weight = options.result_cache_bytes;
    // Key, floats and the node's bookkeeping (about 96 bytes).
    o.l1.weigher = [](const std::string& key, const std::vector<float>& v) {
      return uint64_t{key.size() + v.size() * sizeof(float) + 96};
    };
    o.l2 = options.redis;
    o.model = caches->shared_model_;
    o.default_ttl = options.result_ttl;
    auto c = ResultCache::create(std::move(o));
    // The cause's code: a bad option, a refused password (PERMISSION_DENIED) or TLS this build lacks.
    if (!c.ok()) return Status(c.status().code(), absl::StrCat("RuntimeOptions::cache: ", c.status().message()));
    caches->result_cache_ = std::move(*c);
  }
  caches->result_put_.ttl = options.result_ttl;
  if (options.stale_ttl > std::chrono::nanoseconds::zero()) {
    cache::CacheOptions<std::string, std::vector<float>> o;
    o.max_weight = options.result_cache_bytes;
    o.weigher = [](const std::string& key, const std::vector<float>& v) {
      return uint64_t{key.size() + v.size() * sizeof(float) + 96};
    };
    o.expire_after_write = options.result_ttl + options.stale_ttl;
    auto c = cache::Cache<std::string, std::vector<float>>::create(std::move(o));
    if (!c.ok())
      return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::cache.stale_ttl: ", c.status().message()));
    caches->stale_cache_ = std::move(*c);
  }
  return caches;
}

StatusOr<std::vector<int32_t>> RuntimeCaches::tokens(std::string_view text, Tokenize tokenize) {
  // Long texts rarely repeat verbatim, and keeping them would let a stream of huge texts fill memory.
  if (!token_cache_ || text.size() > kMaxTokenCacheTextBytes) return tokenize(text);
  std::string key(text);
  if (std::optional<TokenIds> hit = token_cache_->get(key)) return **hit;
  BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenize(text));
  token_cache_->put(key, std::make_shared<const std::vector<int32_t>>(ids));
  return ids;
}

std::optional<std::vector<float>> RuntimeCaches::lookup(std::span<const int32_t> ids) {
  if (!result_cache_) return std::nullopt;
  const std::string key = hex128(ids.data(), ids.size_bytes());
  std::optional<std::vector<float>> hit = result_cache_->get("", key);
  drop_if_invalid(key, hit);
  return hit;
}

std::vector<std::optional<std::vector<float>>> RuntimeCaches::lookup_many(
    std::span<const std::span<const int32_t>> ids) {
  if (!result_cache_) return std::vector<std::optional<std::vector<float>>>(ids.size());
  std::vector<std::string> keys;
  keys.reserve(ids.size());
  for (std::span<const int32_t> one : ids) keys.push_back(hex128(one.data(), one.size_bytes()));
  std::vector<std::optional<std::vector<float>>> hits = result_cache_->get_many("", keys);
  for (size_t i = 0; i < hits.size(); ++i) drop_if_invalid(keys[i], hits[i]);
  return hits;
}

void RuntimeCaches::drop_if_invalid(const std::string& key, std::optional<std::vector<float>>& hit) {
  if (!hit) return;
  bool valid = hit->size() == dim_;
  if (!valid) {
    wrong_length_.fetch_add(1, std::memory_order_relaxed);
  } else {
    double sum = 0.0;  // in double: finite floats cannot overflow it
    for (const float v : *hit) sum += static_cast<double>(v) * v;
    valid = std::isfinite(sum) && (!unit_norm_ || std::fabs(std::sqrt(sum) - 1.0) <= 1e-3);
    if (!valid) invalid_values_.fetch_add(1, std::memory_order_relaxed);
  }
  if (valid) return;
  // Only a foreign writer to the shared Redis tier can plant this: never let it reach a caller's buffer.
  result_cache_->l1().invalidate(ResultCache::l1_key("", key));
  hit.reset();
}

std::optional<std::vector<float>> RuntimeCaches::lookup_stale(std::span<const int32_t> ids) {
  if (!stale_cache_) return std::nullopt;
  return stale_cache_->get(hex128(ids.data(), ids.size_bytes()));
}

void RuntimeCaches::store(std::span<const int32_t> ids, std::span<const float> embedding,
                          std::span<const std::string> tags, uint64_t epoch) {
  if (!result_cache_ || epoch != invalidation_epoch()) return;
  cache::PutOptions put = result_put_;
  put.tags.insert(put.tags.end(), tags.begin(), tags.end());
  const std::string key = hex128(ids.data(), ids.size_bytes());
  std::vector<float> value(embedding.begin(), embedding.end());
  if (stale_cache_) {
    cache::PutOptions stale_put;
    stale_put.tags = put.tags;
    stale_cache_->put(key, value, stale_put);
  }
  result_cache_->put("", key, std::move(value), put);
}

StatusOr<size_t> RuntimeCaches::invalidate_tag(std::string_view tag) {
  if (tag.empty()) return absl::InvalidArgumentError("cache tag is empty; expected a non-empty tag such as \"faq:42\"");
  if (!result_cache_) return size_t{0};
  invalidations_.fetch_add(1, std::memory_order_acq_rel);
  if (tag == model_tag_) {
    // Not a Redis tag (one Redis set naming every result would grow without bound): this process's results
    // go; the shared ones are namespaced by the model's contents and expire after result_ttl.
    const size_t n = result_cache_->l1().size();
    result_cache_->l1().invalidate_all();
    if (stale_cache_) stale_cache_->invalidate_all();
    return n;
  }
  // Withdrawn knowledge is never served stale either.
  if (stale_cache_) stale_cache_->invalidate_tag(tag);
  // A Redis failure leaves its copies to their TTL; it shows in the stats (l2 errors), not here.
  return result_cache_->invalidate_tag(tag).l1_removed;
}

namespace {

nlohmann::json cache_json(const cache::CacheStats& s) {
  return {{"hits", s.hits},
          {"misses", s.misses},
          {"hit_rate", s.hit_rate()},
          {"loads", s.loads},
          {"load_failures", s.load_failures},
          {"load_ms", static_cast<double>(s.load_ns) * 1e-6},
          {"evictions", s.evictions},
          {"evicted_weight", s.evicted_weight},
          {"expirations", s.expirations},
          {"invalidations", s.invalidations},
          {"entries", s.entries},
          {"weight", s.weight},
          {"capacity", s.capacity}};
}

}  // namespace

std::string RuntimeCaches::stats_json() const {
  nlohmann::json j;
  j["model_id"] = model_id_;
  j["token"] = token_cache_ ? cache_json(token_cache_->stats()) : nlohmann::json();
  j["result"] = nlohmann::json();
  j["redis"] = nlohmann::json();
  j["stale"] = stale_cache_ ? cache_json(stale_cache_->stats()) : nlohmann::json();
  if (result_cache_) {
    const cache::TieredCacheStats s = result_cache_->stats();
    j["result"] = cache_json(s.l1);
    if (result_cache_->redis() != nullptr) {
      j["redis"] = {{"shared_model", shared_model_},    // the name this runtime's results go by in Redis
                    {"authenticated", authenticated_},  // values signed and checked (RedisOptions::signing_key)
                    {"hits", s.l2_hits},
                    {"misses", s.l2_misses},
                    {"errors", s.l2_errors},
                    {"decode_errors", s.l2_decode_errors},
                    {"rejected",
                     {{"format", s.l2_rejected_format},
                      {"corrupt", s.l2_rejected_corrupt},
                      {"unauthenticated", s.l2_rejected_unauthenticated},
                      {"wrong_key", s.l2_rejected_wrong_key}}},
                    {"auth_failures", s.redis.auth_failures},
                    {"wrong_length", wrong_length_.load(std::memory_order_relaxed)},
                    {"invalid_values", invalid_values_.load(std::memory_order_relaxed)},
                    {"backfills", s.backfills},
                    {"remote_invalidations", s.remote_invalidations},
                    {"writes",
                     {{"written", s.write_behind.written},
                      {"failed", s.write_behind.failed},
                      {"dropped", s.write_behind.dropped},
                      {"queued", s.write_behind.queued}}},
                    {"timeouts", s.redis.timeouts},
                    {"breaker_opens", s.redis.breaker_opens},
                    {"short_circuited", s.redis.short_circuited},
                    {"breaker_open", s.redis.breaker_state == cache::CircuitBreaker::State::kOpen},
                    {"subscribed", s.redis.subscribed}};
    }
  }
  return j.dump();
}

void RuntimeCaches::write_prometheus(metrics::PrometheusWriter& w, const std::string& model) const {
  if (token_cache_)
    cache::write_prometheus(w, token_cache_->stats(), "brisk_cache", {{"model", model}, {"cache", "token"}});
  if (!result_cache_) return;
  if (stale_cache_)
    cache::write_prometheus(w, stale_cache_->stats(), "brisk_cache", {{"model", model}, {"cache", "stale"}});
  const cache::MetricLabels labels = {{"model", model}, {"cache", "result"}};
  if (result_cache_->redis() != nullptr) {
    cache::write_prometheus(w, result_cache_->stats(), "brisk_cache", labels);
  } else {
    cache::write_prometheus(w, result_cache_->stats().l1, "brisk_cache", labels);
  }
}

}  // namespace brisk
