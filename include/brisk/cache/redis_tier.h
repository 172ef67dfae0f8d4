// The shared Redis tier of brisk's caches: byte values with a TTL, tags kept as Redis sets, and invalidation
// messages published on a channel so that other processes drop their in-process (L1) entries. It is built to
// fail soft: every call is bounded by connect_timeout + command_timeout, a circuit breaker turns a dead or
// stalled server into immediate UNAVAILABLE errors, and connections are made lazily and remade after errors,
// so create() works with the server down and the tier recovers by itself when it comes back.
//
//   RedisOptions opts;                       // 127.0.0.1:6379, prefix "brisk", 50 ms connect, 20 ms command
//   BRISK_ASSIGN_OR_RETURN(auto redis, RedisTier::create(opts));
//   std::vector<std::string> tags = {"faq"};
//   redis->set("minilm:t1:hello", bytes, std::chrono::minutes(10), tags);
//   StatusOr<std::optional<std::string>> v = redis->get("minilm:t1:hello");   // error, miss or bytes
//   redis->invalidate_tag("faq");            // deletes every key tagged "faq" and publishes it
//   redis->subscribe([](const Invalidation& inv) { ... });   // other processes' invalidations
//
// Layout in Redis: a value lives at "<key_prefix>:<key>"; tag t's set of keys at "<key_prefix>#tag:<t>" (the
// '#' keeps tag sets apart from values whatever the keys are). A tag set expires no earlier than its latest
// member. Tags are shared by everything that uses the same key_prefix. A tag set keeps the names of members
// that expired until the set itself expires or the tag is invalidated, so it grows with the number of distinct
// keys written under the tag (bounded by the key space).
//
// Authentication: with `password` set every connection (the pool's and the subscriber's) sends AUTH before its
// first command: "AUTH <user> <password>" for an ACL user, "AUTH <password>" (the default user, requirepass)
// without one. A refused AUTH, or a server that demands one, fails the call with PERMISSION_DENIED naming the
// options, counted in RedisStats::auth_failures. TLS (`tls`) needs hiredis_ssl, which Debian's hiredis 0.14
// lacks: create() then returns UNIMPLEMENTED instead of talking plaintext. `signing_key` is not used by the
// tier itself: TieredCache signs and checks its values with it (value_envelope.h).
//
// Built without hiredis (BRISK_HAVE_REDIS undefined in the library), create() returns UNIMPLEMENTED.
//
// Thread safety: a RedisTier may be shared; every member may be called from any thread at once. Calls use a
// pool of pool_size connections; when all are busy a call waits at most command_timeout for one, then fails
// with UNAVAILABLE. The subscribe() callback runs on the tier's subscriber thread, one message at a time; the
// destructor stops that thread promptly (it does not wait for the server).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/cache/circuit_breaker.h"
#include "brisk/core/clock.h"
#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk::cache {

// RedisOptions::connect_timeout and command_timeout: a call to a cache must not block a request for longer.
inline constexpr Duration kMaxRedisTimeout = std::chrono::seconds(60);

struct BRISK_API RedisOptions {
  // A numeric address, or a name resolved at each connect; resolution is not bounded by connect_timeout, so
  // prefer a numeric address where the bound on blocking matters.
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string key_prefix = "brisk";
  int pool_size = 4;                                         // connections for commands
  Duration connect_timeout = std::chrono::milliseconds(50);  // each of the two: at most kMaxRedisTimeout
  Duration command_timeout = std::chrono::milliseconds(20);  // one call: write, server time, reply
  CircuitBreakerOptions breaker;                             // 3 consecutive failures → open for 1 s
  std::string invalidation_channel = "brisk:invalidate";
  Duration subscriber_backoff_min = std::chrono::milliseconds(50);  // subscriber reconnect backoff (doubles)
  Duration subscriber_backoff_max = std::chrono::seconds(2);
  // A tag invalidation lists the deleted keys in its message up to this many; past it subscribers are told
  // to drop everything (Invalidation::keys_complete = false).
  int max_keys_per_message = 10000;
  std::shared_ptr<Clock> clock;  // the breaker's clock; null: SteadyClock
  std::string user;              // ACL user for AUTH; empty: the default user (requires password)
  std::string password;          // empty: no AUTH
  bool tls = false;              // true: UNIMPLEMENTED (this build's hiredis has no TLS)
  std::string signing_key;       // shared secret; non-empty: TieredCache signs its values and refuses unsigned ones
  // With an empty signing_key: accept (and write) unsigned values, which anyone who can write to the server can
  // forge. brisk::Runtime refuses a Redis tier without a signing key unless this says so (issue 30).
  bool allow_unsigned = false;
  Status validate() const;  // names the bad field
};

// One invalidation received from the channel (published by another RedisTier).
struct Invalidation {
  enum class Kind : uint8_t {
    kKey,  // `name` was deleted
    kTag,  // tag `name` was invalidated; `keys` are the keys that carried it (when keys_complete)
    kAll,  // the subscription was re-established after a loss: messages may have been missed, drop everything
  };
  Kind kind = Kind::kKey;
  std::string name;               // kKey: the key (without key_prefix); kTag: the tag
  std::vector<std::string> keys;  // kTag: keys without key_prefix (only those under this tier's prefix)
  bool keys_complete = true;      // kTag: false when there were too many keys to list
};

struct RedisStats {
  uint64_t commands = 0;           // calls that reached the network (a pipelined call counts once)
  uint64_t errors = 0;             // calls that failed (I/O, protocol, server error reply, timeout, connect)
  uint64_t timeouts = 0;           // of those, calls that ran past command_timeout or connect_timeout
  uint64_t breaker_opens = 0;      // times the circuit breaker opened
  uint64_t short_circuited = 0;    // calls refused by the open breaker without touching the network
  uint64_t pool_exhausted = 0;     // calls that found every connection busy for command_timeout
  uint64_t connects = 0;           // connections established (pool and subscriber)
  uint64_t reconnects = 0;         // connections re-established after an error dropped one
  uint64_t messages_received = 0;  // invalidation messages delivered to the subscriber callback
  uint64_t messages_ignored = 0;   // own messages and malformed ones
  uint64_t auth_failures = 0;      // connections whose AUTH was refused, and calls refused with NOAUTH
  bool subscribed = false;         // the subscriber holds a live subscription now
  CircuitBreaker::State breaker_state = CircuitBreaker::State::kClosed;
};

class BRISK_API RedisTier {
 public:
  static StatusOr<std::unique_ptr<RedisTier>> create(RedisOptions options);
  ~RedisTier();
  RedisTier(const RedisTier&) = delete;
  RedisTier& operator=(const RedisTier&) = delete;

  // The value at key, or nullopt when there is none. Errors: UNAVAILABLE (breaker open, no connection, I/O),
  // DEADLINE_EXCEEDED (command_timeout), INTERNAL (server error reply).
  StatusOr<std::optional<std::string>> get(std::string_view key);

  // Value plus its remaining time to live (GET and PTTL in one round trip); ttl 0 means no expiry.
  struct ValueWithTtl {
    std::string bytes;
    Duration ttl{0};
  };
  StatusOr<std::optional<ValueWithTtl>> get_with_ttl(std::string_view key);

  // The values at many keys in one round trip: one MGET (hiredis argv form; the server runs one command).
  // One element per key, in order, nullopt where there is no value (a key of another type, which GET would
  // refuse, is nullopt too). The call succeeds or fails as a whole, with get()'s errors, through the same
  // breaker and pool, within the same bound (connect_timeout + command_timeout: keep a batch to what one
  // round trip carries in that time, a few hundred keys), and counts as one command in stats(). An empty
  // `keys` touches nothing (no breaker permit, no connection) and returns an empty vector.
  StatusOr<std::vector<std::optional<std::string>>> get_many(std::span<const std::string> keys);
  // get_many() with each value's remaining time to live: the MGET and one PTTL per key, pipelined in the same
  // single round trip (the server sees one MGET and keys.size() PTTLs; stats() counts one command). As in
  // get_with_ttl(), a value whose key expired between the MGET and its PTTL has ttl 0.
  StatusOr<std::vector<std::optional<ValueWithTtl>>> get_many_with_ttl(std::span<const std::string> keys);

  // SET key bytes PX ttl (ttl <= 0: no expiry), and for each tag SADD the key to the tag's set, extending the
  // set's expiry to cover this key. One pipelined round trip.
  Status set(std::string_view key, std::string_view bytes, Duration ttl, std::span<const std::string> tags = {});

  // Deletes key and publishes a kKey invalidation (one pipelined round trip).
  Status del(std::string_view key);

  // Deletes every key tagged `tag` and the tag's set, and publishes a kTag invalidation listing the keys; one
  // atomic server-side script. Returns how many keys existed and were deleted.
  StatusOr<size_t> invalidate_tag(std::string_view tag);

  // Starts the subscriber thread (its own connection; reconnects with backoff; after a reconnect it delivers a
  // kAll, since messages may have been lost). Own messages are not delivered. Waits at most connect_timeout +
  // command_timeout for the first subscription, and succeeds whether or not the server is up; but when the
  // server is up and refuses the credentials (RedisOptions.user/password) it stops and returns
  // PERMISSION_DENIED. FAILED_PRECONDITION when called twice.
  Status subscribe(std::function<void(const Invalidation&)> callback);

  RedisStats stats() const;
  const RedisOptions& options() const;
  std::string address() const;  // "host:port", as error messages name it

  struct Impl;

 private:
  explicit RedisTier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisk::cache
