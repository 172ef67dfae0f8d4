// TieredCache<V, Codec>: an in-process L1 (Cache<std::string, V>) in front of the shared Redis tier (L2), for
// results that several processes compute (embeddings, answers). A lookup tries L1, then Redis (an L2 hit is
// copied into L1: a backfill), then computes. Invalidations remove the entry in L1 and in Redis and are
// published, so the other processes' TieredCaches drop their L1 copies too.
//
//   TieredCacheOptions<std::vector<float>> opts;
//   opts.l1.max_entries = 100'000;
//   opts.l2 = RedisOptions{};                 // none: L1 only
//   opts.model = "minilm-l6";
//   opts.default_ttl = std::chrono::hours(1);
//   BRISK_ASSIGN_OR_RETURN(auto cache, (TieredCache<std::vector<float>, FloatVectorCodec>::create(opts)));
//   StatusOr<std::vector<float>> e = cache->get_or_load("tenant-a", text,
//       [&](std::string_view tenant, std::string_view key) { return embed(key); }, {.tags = {"kb-v7"}});
//   std::vector<std::optional<std::vector<float>>> some = cache->get_many("tenant-a", keys);  // 1 Redis trip
//   cache->invalidate_tag("kb-v7");           // the knowledge changed, everywhere
//
// Failure behaviour: Redis is an optimisation, never a dependency. Its errors (down, stalled, killed, circuit
// breaker open, corrupt values) are counted and turn into L2 misses; get() and get_or_load() then answer from
// L1 or the loader. A lookup waits on Redis at most connect_timeout + command_timeout (RedisTier's bound), and
// with the breaker open not at all. Writes to Redis (put(), and the store after a load) go through a bounded
// write-behind queue (write_behind.h): callers never wait on Redis for them; a full queue drops the write.
// invalidate() and invalidate_tag() do talk to Redis on the caller's thread (they must not be lost silently):
// each waits at most for one queued write of the key in progress plus its own call, i.e. twice the bound, and
// reports a Redis failure in InvalidationResult::l2_status (the Redis copies then live until their TTL).
// A library built without hiredis fails create() with UNIMPLEMENTED when l2 is set; so does RedisOptions::tls
// with a hiredis without TLS. A Redis server that is up but refuses the credentials (RedisOptions::user and
// password) fails create() with PERMISSION_DENIED: unlike an outage, that will not mend itself.
//
// Keys: the L1 key is "<tenant>:<key>" and the Redis key "<key_prefix>:<model>:<tenant>:<key>", each component
// escaped ('%' → "%25", ':' → "%3A") so that no tenant, model or key can reach into another's namespace.
// Values in Redis are wrapped in a versioned, checksummed envelope (value_envelope.h) that also carries the
// full Redis key it was written for and the entry's tags, and, with RedisOptions::signing_key, an HMAC-SHA256
// by that shared key. A foreign, old-format, other-codec or corrupt value, one copied from another key, and
// (with a signing key) an unsigned or wrongly signed one is a miss, counted by reason (l2_rejected_*), never a
// crash or a wrong value; it is not deleted (a newer version of this program may have written it) and is
// replaced by the next write of the key. Without a signing key anyone who can write to Redis can plant values;
// set one wherever the Redis server is shared with less trusted writers.
//
// Tags are global: invalidate_tag(t) removes t's entries of every model and tenant that shares the key_prefix.
// An L2 hit backfills L1 with the envelope's tags (get()) or the caller's tags (get_or_load()); remote tag
// invalidations also list the deleted keys, so a copy is dropped either way. When the subscriber reconnects
// after a gap, L1 is cleared, since invalidations may have been missed meanwhile. Races: an invalidation that
// runs while a load of the same key computes may be overtaken by that load's write (as in Cache).
//
// Codec requirements: `static constexpr uint32_t kTypeId` (unique per value format), `static std::string
// encode(const V&)`, `static StatusOr<V> decode(std::string_view)`; decode must reject bytes it cannot parse.
//
// Thread safety: every member may be called from any thread at once. Remote invalidations are applied on the
// Redis subscriber thread. The destructor stops the subscriber and the write-behind thread (queued writes are
// abandoned: flush() first to keep them).
#pragma once

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk/cache/cache.h"
#include "brisk/cache/redis_tier.h"
#include "brisk/cache/value_envelope.h"
#include "brisk/cache/write_behind.h"
#include "brisk/core/status.h"

namespace brisk::cache {

// Bytes as they are.
struct StringCodec {
  static constexpr uint32_t kTypeId = 1;
  static std::string encode(const std::string& v) { return v; }
  static StatusOr<std::string> decode(std::string_view bytes) { return std::string(bytes); }
};

// float32 little-endian, back to back.
struct FloatVectorCodec {
  static constexpr uint32_t kTypeId = 2;
  static_assert(std::endian::native == std::endian::little, "FloatVectorCodec stores floats little-endian");
  static std::string encode(const std::vector<float>& v) {
    std::string out(v.size() * sizeof(float), '\0');
    if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  static StatusOr<std::vector<float>> decode(std::string_view bytes) {
    if (bytes.size() % sizeof(float) != 0) {
      return absl::DataLossError(
          absl::StrCat("float vector payload of ", bytes.size(), " bytes; expected a multiple of 4"));
    }
    std::vector<float> v(bytes.size() / sizeof(float));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
};

template <typename V>
struct TieredCacheOptions {
  CacheOptions<std::string, V> l1;
  std::optional<RedisOptions> l2;       // none: L1 only
  std::string model;                    // part of every Redis key; required with l2
  Duration default_ttl{0};              // Redis TTL of entries put without PutOptions::ttl; > 0 required with l2
  size_t write_behind_capacity = 4096;  // queued Redis writes; past it new writes are dropped (counted)

  Status validate() const {
    BRISK_RETURN_IF_ERROR(l1.validate());
    if (!l2.has_value()) return absl::OkStatus();
    if (Status s = l2->validate(); !s.ok()) {
      return Status(s.code(), absl::StrCat("TieredCacheOptions.l2: ", s.message()));
    }
    if (model.empty()) {
      return absl::InvalidArgumentError(
          "TieredCacheOptions.model is empty; expected the model's name, which namespaces its Redis keys");
    }
    if (default_ttl <= Duration::zero()) {
      return absl::InvalidArgumentError(absl::StrCat("TieredCacheOptions.default_ttl is ", default_ttl.count(),
                                                     " ns; expected > 0 with l2 (Redis entries must expire)"));
    }
    if (write_behind_capacity == 0) {
      return absl::InvalidArgumentError("TieredCacheOptions.write_behind_capacity is 0; expected >= 1");
    }
    return absl::OkStatus();
  }
};

struct TieredCacheStats {
  CacheStats l1;
  uint64_t l2_hits = 0;
  uint64_t l2_misses = 0;            // lookups that found no usable value (absent, errors and decode errors)
  uint64_t l2_errors = 0;            // Redis calls that failed (lookups, invalidations); writes: write_behind.failed
  uint64_t l2_decode_errors = 0;     // values rejected by the envelope or the codec: the sum of the four below
  uint64_t l2_rejected_format = 0;   // not a brisk envelope, another format version or codec
  uint64_t l2_rejected_corrupt = 0;  // truncated, checksum mismatch, or refused by the codec
  uint64_t l2_rejected_unauthenticated = 0;  // with a signing key: unsigned, or the HMAC does not match
  uint64_t l2_rejected_wrong_key = 0;        // written for another Redis key (copied or moved between keys)
  uint64_t backfills = 0;                    // L2 hits copied into L1
  uint64_t remote_invalidations = 0;         // invalidation messages from other instances applied to L1
  WriteBehindStats write_behind;
  RedisStats redis;
};

// What an invalidation did: entries removed from this instance's L1, keys deleted in Redis, and whether Redis
// could be told (when not, the Redis copies stay until their TTL; retry later).
struct InvalidationResult {
  size_t l1_removed = 0;
  size_t l2_removed = 0;
  Status l2_status;
};

template <typename V, typename Codec>
class TieredCache {
  static_assert(std::is_same_v<std::remove_cv_t<decltype(Codec::kTypeId)>, uint32_t>,
                "Codec needs static constexpr uint32_t kTypeId");
  static_assert(std::is_same_v<decltype(Codec::encode(std::declval<const V&>())), std::string>,
                "Codec needs static std::string encode(const V&)");
  static_assert(std::is_same_v<decltype(Codec::decode(std::string_view())), StatusOr<V>>,
                "Codec needs static StatusOr<V> decode(std::string_view)");

 public:
  using Loader = std::function<StatusOr<V>(std::string_view tenant, std::string_view key)>;

  static StatusOr<std::unique_ptr<TieredCache>> create(TieredCacheOptions<V> options) {
    BRISK_RETURN_IF_ERROR(options.validate());
    std::unique_ptr<TieredCache> c(new TieredCache(std::move(options)));
    BRISK_ASSIGN_OR_RETURN(c->l1_, (Cache<std::string, V>::create(c->options_.l1)));
    if (c->options_.l2.has_value()) {
      BRISK_ASSIGN_OR_RETURN(c->redis_, RedisTier::create(*c->options_.l2));
      c->writer_ = std::make_unique<RedisWriteBehind>(c->redis_.get(), c->options_.write_behind_capacity);
      TieredCache* self = c.get();
      BRISK_RETURN_IF_ERROR(c->redis_->subscribe([self](const Invalidation& inv) { self->apply_remote(inv); }));
    }
    return c;
  }

  ~TieredCache() {
    writer_.reset();  // before the tier it writes to
    redis_.reset();   // stops the subscriber, which touches l1_
  }
  TieredCache(const TieredCache&) = delete;
  TieredCache& operator=(const TieredCache&) = delete;

  std::optional<V> get(std::string_view tenant, std::string_view key) {
    const std::string k = l1_key(tenant, key);
    if (std::optional<V> v = l1_->get(k)) return v;
    if (!redis_) return std::nullopt;
    const uint64_t epoch = writes_.load();
    std::optional<L2Hit> hit = l2_lookup(k);
    if (!hit) return std::nullopt;
    backfill(k, *hit, epoch);
    return std::move(hit->value);
  }

  // get() of many keys of one tenant, with one Redis round trip: L1 first, then ONE RedisTier::get_many_with_ttl
  // (an MGET, plus the PTTLs that backfill needs, pipelined) for every key L1 missed, none when L1 had them all
  // (or for an empty `keys`). Each L2 hit is checked (envelope, HMAC, key binding, codec) and backfilled into
  // L1 exactly as get() does; a rejected value is a miss for its key only. One element per key, in order
  // (a key listed twice is looked up twice). Stats count per key as get() does (L1 hits/misses, l2_hits,
  // l2_misses, rejections, backfills), except that a failed Redis call (down, breaker open, timeout) counts one
  // l2_error for the whole call and an l2_miss for each key it was asked for. Waits on Redis at most once,
  // within RedisTier's bound.
  std::vector<std::optional<V>> get_many(std::string_view tenant, std::span<const std::string> keys) {
    std::vector<std::optional<V>> out(keys.size());
    std::vector<std::string> l1keys;
    l1keys.reserve(keys.size());
    std::vector<size_t> missed;  // positions L1 did not have
    for (size_t i = 0; i < keys.size(); ++i) {
      l1keys.push_back(l1_key(tenant, keys[i]));
      out[i] = l1_->get(l1keys.back());
      if (!out[i]) missed.push_back(i);
    }
    if (!redis_ || missed.empty()) return out;
    std::vector<std::string> rkeys;
    rkeys.reserve(missed.size());
    for (size_t i : missed) rkeys.push_back(redis_key(l1keys[i]));
    const uint64_t epoch = writes_.load();
    StatusOr<std::vector<std::optional<RedisTier::ValueWithTtl>>> got = redis_->get_many_with_ttl(rkeys);
    if (!got.ok()) {
      l2_errors_.fetch_add(1, std::memory_order_relaxed);
      l2_misses_.fetch_add(missed.size(), std::memory_order_relaxed);
      return out;
    }
    for (size_t j = 0; j < missed.size(); ++j) {
      const size_t i = missed[j];
      std::optional<L2Hit> hit = l2_decode(l1keys[i], std::move((*got)[j]));
      if (!hit) continue;
      backfill(l1keys[i], *hit, epoch);
      out[i] = std::move(hit->value);
    }
    return out;
  }

  // L1 now; Redis through the write-behind queue (never waits on Redis).
  void put(std::string_view tenant, std::string_view key, V value, const PutOptions& options = {}) {
    const std::string k = l1_key(tenant, key);
    writes_.fetch_add(1);
    if (redis_) write_l2(k, value, options);
    l1_->put(k, std::move(value), options);
  }

  // L1, else (single-flight per key through L1) Redis, else loader; the loaded value goes to L1 and, through the
  // write-behind queue, to Redis. Only the loader's own errors are returned.
  StatusOr<V> get_or_load(std::string_view tenant, std::string_view key, const Loader& loader,
                          const PutOptions& options = {}) {
    const std::string k = l1_key(tenant, key);
    return l1_->get_or_load(
        k,
        [&](const std::string&) -> StatusOr<V> {
          if (redis_) {
            if (std::optional<L2Hit> hit = l2_lookup(k)) {
              backfills_.fetch_add(1, std::memory_order_relaxed);
              return std::move(hit->value);
            }
          }
          StatusOr<V> v = loader(tenant, key);
          if (v.ok() && redis_) write_l2(k, *v, options);
          return v;
        },
        options);
  }

  // Removes the entry here and in Redis, and tells the other instances.
  InvalidationResult invalidate(std::string_view tenant, std::string_view key) {
    const std::string k = l1_key(tenant, key);
    InvalidationResult r;
    writes_.fetch_add(1);
    if (redis_) {
      const std::string rk = redis_key(k);
      writer_->cancel_key(rk);  // no queued write may bring it back after the DEL
      r.l2_status = redis_->del(rk);
      if (!r.l2_status.ok()) l2_errors_.fetch_add(1, std::memory_order_relaxed);
    }
    r.l1_removed = l1_->invalidate(k) ? 1 : 0;  // after Redis (a concurrent backfill: see backfill())
    return r;
  }

  // Removes every entry tagged `tag` here and in Redis (all models and tenants), and tells the other instances.
  InvalidationResult invalidate_tag(std::string_view tag) {
    InvalidationResult r;
    writes_.fetch_add(1);
    if (redis_) {
      writer_->cancel_tag(tag);
      StatusOr<size_t> n = redis_->invalidate_tag(tag);
      if (n.ok()) {
        r.l2_removed = *n;
      } else {
        r.l2_status = n.status();
        l2_errors_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    r.l1_removed = l1_->invalidate_tag(tag);
    return r;
  }

  // Waits until the queued Redis writes were tried; true at once without l2.
  bool flush(Duration timeout) { return writer_ ? writer_->flush(timeout) : true; }

  TieredCacheStats stats() const {
    TieredCacheStats s;
    s.l1 = l1_->stats();
    s.l2_hits = l2_hits_.load(std::memory_order_relaxed);
    s.l2_misses = l2_misses_.load(std::memory_order_relaxed);
    s.l2_errors = l2_errors_.load(std::memory_order_relaxed);
    s.l2_rejected_format = rejected_[static_cast<int>(EnvelopeRejection::kFormat)].load(std::memory_order_relaxed);
    s.l2_rejected_corrupt = rejected_[static_cast<int>(EnvelopeRejection::kCorrupt)].load(std::memory_order_relaxed);
    s.l2_rejected_unauthenticated =
        rejected_[static_cast<int>(EnvelopeRejection::kUnauthenticated)].load(std::memory_order_relaxed);
    s.l2_rejected_wrong_key = rejected_[static_cast<int>(EnvelopeRejection::kWrongKey)].load(std::memory_order_relaxed);
    s.l2_decode_errors =
        s.l2_rejected_format + s.l2_rejected_corrupt + s.l2_rejected_unauthenticated + s.l2_rejected_wrong_key;
    s.backfills = backfills_.load(std::memory_order_relaxed);
    s.remote_invalidations = remote_invalidations_.load(std::memory_order_relaxed);
    if (writer_) s.write_behind = writer_->stats();
    if (redis_) s.redis = redis_->stats();
    return s;
  }

  Cache<std::string, V>& l1() { return *l1_; }
  RedisTier* redis() { return redis_.get(); }  // null without l2
  const TieredCacheOptions<V>& options() const { return options_; }

  // The L1 key of (tenant, key), and its Redis key without key_prefix (as the tier and other processes see it).
  static std::string l1_key(std::string_view tenant, std::string_view key) {
    std::string k;
    k.reserve(tenant.size() + key.size() + 1);
    escape_into(&k, tenant);
    k.push_back(':');
    escape_into(&k, key);
    return k;
  }
  std::string redis_key(std::string_view tenant, std::string_view key) const { return redis_key(l1_key(tenant, key)); }

 private:
  struct L2Hit {
    V value;
    PutOptions options;
  };

  explicit TieredCache(TieredCacheOptions<V> options)
      : options_(std::move(options)), model_prefix_(escape(options_.model) + ":") {}

  static void escape_into(std::string* out, std::string_view s) {
    for (char c : s) {
      if (c == '%') {
        out->append("%25");
      } else if (c == ':') {
        out->append("%3A");
      } else {
        out->push_back(c);
      }
    }
  }
  static std::string escape(std::string_view s) {
    std::string out;
    escape_into(&out, s);
    return out;
  }
  std::string redis_key(const std::string& l1key) const { return model_prefix_ + l1key; }
  // The key as Redis stores it, which the envelope binds the value to (a copy under another key is refused).
  std::string full_redis_key(const std::string& l1key) const {
    return absl::StrCat(options_.l2->key_prefix, ":", model_prefix_, l1key);
  }
  std::string_view signing_key() const { return options_.l2->signing_key; }

  // A Redis lookup; every failure is a miss, counted.
  std::optional<L2Hit> l2_lookup(const std::string& l1key) {
    StatusOr<std::optional<RedisTier::ValueWithTtl>> got = redis_->get_with_ttl(redis_key(l1key));
    if (!got.ok()) {
      l2_errors_.fetch_add(1, std::memory_order_relaxed);
      l2_misses_.fetch_add(1, std::memory_order_relaxed);
      return std::nullopt;
    }
    return l2_decode(l1key, std::move(*got));
  }

  // What Redis answered for one key (nothing, or bytes and TTL), checked and decoded; counted as a hit or a
  // miss (by rejection reason).
  std::optional<L2Hit> l2_decode(const std::string& l1key, std::optional<RedisTier::ValueWithTtl> got) {
    if (!got.has_value()) {
      l2_misses_.fetch_add(1, std::memory_order_relaxed);
      return std::nullopt;
    }
    const std::string rk = full_redis_key(l1key);
    StatusOr<DecodedEnvelope> env = decode_envelope(got->bytes, Codec::kTypeId, rk, signing_key());
    StatusOr<V> value = env.ok() ? Codec::decode(env->payload) : StatusOr<V>(env.status());
    if (!value.ok()) {
      // A codec's refusal is corruption whatever code it chose.
      const EnvelopeRejection why = env.ok() ? EnvelopeRejection::kCorrupt : envelope_rejection(env.status());
      rejected_[static_cast<int>(why)].fetch_add(1, std::memory_order_relaxed);
      l2_misses_.fetch_add(1, std::memory_order_relaxed);
      return std::nullopt;
    }
    l2_hits_.fetch_add(1, std::memory_order_relaxed);
    L2Hit hit{std::move(*value), PutOptions{}};
    // L1 keeps the copy no longer than Redis would, nor longer than L1's own expire_after_write.
    hit.options.ttl = got->ttl > Duration::zero() ? got->ttl : options_.default_ttl;
    if (options_.l1.expire_after_write > Duration::zero()) {
      hit.options.ttl = std::min(hit.options.ttl, options_.l1.expire_after_write);
    }
    hit.options.tags = std::move(env->tags);
    return hit;
  }

  void write_l2(const std::string& l1key, const V& value, const PutOptions& options) {
    const Duration ttl = options.ttl > Duration::zero() ? options.ttl : options_.default_ttl;
    writer_->enqueue(
        redis_key(l1key),
        encode_envelope(Codec::kTypeId, full_redis_key(l1key), options.tags, Codec::encode(value), signing_key()), ttl,
        options.tags);
  }

  // On the subscriber thread: another instance invalidated something.
  void apply_remote(const Invalidation& inv) {
    remote_invalidations_.fetch_add(1, std::memory_order_relaxed);
    writes_.fetch_add(1);
    auto drop_key = [&](std::string_view rk) {
      if (rk.substr(0, model_prefix_.size()) == model_prefix_) {
        l1_->invalidate(std::string(rk.substr(model_prefix_.size())));
      }
    };
    switch (inv.kind) {
      case Invalidation::Kind::kKey: drop_key(inv.name); break;
      case Invalidation::Kind::kTag:
        l1_->invalidate_tag(inv.name);
        for (const std::string& k : inv.keys) drop_key(k);
        if (!inv.keys_complete) l1_->invalidate_all();
        break;
      case Invalidation::Kind::kAll: l1_->invalidate_all(); break;
    }
  }

  // Copies an L2 hit into L1, unless a put or an invalidation began after `epoch` was read (before the Redis
  // read): then the copy is withdrawn, since the value read may be the one that was replaced or withdrawn. Each
  // put and invalidation counts itself in writes_ before it touches either tier, and an invalidation removes from
  // L1 last, so an old value is never left in L1 once the invalidation has returned (the cost: a concurrent
  // backfill may drop a fresh entry, a miss).
  void backfill(const std::string& k, const L2Hit& hit, uint64_t epoch) {
    l1_->put(k, hit.value, hit.options);
    if (writes_.load() != epoch) {
      l1_->invalidate(k);
      return;
    }
    backfills_.fetch_add(1, std::memory_order_relaxed);
  }

  const TieredCacheOptions<V> options_;
  const std::string model_prefix_;  // "<escaped model>:"
  std::unique_ptr<Cache<std::string, V>> l1_;
  std::unique_ptr<RedisTier> redis_;
  std::unique_ptr<RedisWriteBehind> writer_;
  std::atomic<uint64_t> l2_hits_{0}, l2_misses_{0}, l2_errors_{0}, backfills_{0};
  std::atomic<uint64_t> rejected_[4] = {};  // by EnvelopeRejection
  std::atomic<uint64_t> remote_invalidations_{0};
  std::atomic<uint64_t> writes_{0};  // puts and invalidations begun, local and remote: see backfill()
};

}  // namespace brisk::cache
