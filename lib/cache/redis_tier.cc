// RedisTier: options, the invalidation message format, the connection pool and the commands. The subscriber
// thread lives in redis_subscriber.cc.
#include "brisk/cache/redis_tier.h"

#include <charconv>
#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"
#include "redis_tier_impl.h"

namespace brisk::cache {

Status RedisOptions::validate() const {
  if (host.empty()) return absl::InvalidArgumentError("RedisOptions.host is empty; expected an address or name");
  if (port < 1 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("RedisOptions.port is ", port, "; expected 1..65535"));
  }
  if (key_prefix.empty()) {
    return absl::InvalidArgumentError("RedisOptions.key_prefix is empty; expected a namespace such as \"brisk\"");
  }
  if (pool_size < 1 || pool_size > 1024) {
    return absl::InvalidArgumentError(absl::StrCat("RedisOptions.pool_size is ", pool_size, "; expected 1..1024"));
  }
  for (const auto& [name, timeout] :
       {std::pair{"connect_timeout", connect_timeout}, {"command_timeout", command_timeout}}) {
    if (timeout <= Duration::zero() || timeout > kMaxRedisTimeout) {
      return absl::InvalidArgumentError(absl::StrCat("RedisOptions.", name, " is ", timeout.count(),
                                                     " ns; expected > 0 and at most ", kMaxRedisTimeout.count(),
                                                     " ns (60 s)"));
    }
  }
  if (Status s = breaker.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("RedisOptions.breaker: ", s.message()));
  }
  if (invalidation_channel.empty()) {
    return absl::InvalidArgumentError("RedisOptions.invalidation_channel is empty; expected a channel name");
  }
  if (subscriber_backoff_min <= Duration::zero() || subscriber_backoff_max < subscriber_backoff_min) {
    return absl::InvalidArgumentError(absl::StrCat("RedisOptions.subscriber_backoff_min/max are ",
                                                   subscriber_backoff_min.count(), "/", subscriber_backoff_max.count(),
                                                   " ns; expected 0 < min <= max"));
  }
  if (!user.empty() && password.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("RedisOptions.user is \"", user, "\" but password is empty; expected the ACL user's password"));
  }
  if (max_keys_per_message < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("RedisOptions.max_keys_per_message is ", max_keys_per_message, "; expected >= 0"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------------------------
// Invalidation messages: "BINV1|<origin>|<kind>|<prefix><name>(<key>)*" where each of prefix, name and key is a
// netstring "<decimal length>:<bytes>" and kind is K (name: a key without the prefix), T (name: a tag; keys: the
// full keys that carried it) or X (a tag whose keys were too many to list). Receivers with another key_prefix
// ignore the message.

namespace redis_internal {

std::string message_header(std::string_view origin) { return absl::StrCat("BINV1|", std::string(origin), "|"); }

void append_netstring(std::string* out, std::string_view s) {
  out->append(std::to_string(s.size())).append(":").append(s);
}

namespace {
// Reads "<n>:<bytes>" from the front of *s.
bool take_netstring(std::string_view* s, std::string_view* out) {
  const size_t colon = s->find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 12) return false;
  size_t n = 0;
  auto [p, ec] = std::from_chars(s->data(), s->data() + colon, n);
  if (ec != std::errc() || p != s->data() + colon || n > s->size() - colon - 1) return false;
  *out = s->substr(colon + 1, n);
  s->remove_prefix(colon + 1 + n);
  return true;
}
}  // namespace

ParsedMessage parse_message(std::string_view msg) {
  ParsedMessage out;
  constexpr std::string_view kMagic = "BINV1|";
  if (msg.substr(0, kMagic.size()) != kMagic) return out;
  msg.remove_prefix(kMagic.size());
  const size_t bar = msg.find('|');
  if (bar == std::string_view::npos || msg.size() < bar + 3 || msg[bar + 2] != '|') return out;
  out.origin = std::string(msg.substr(0, bar));
  const char kind = msg[bar + 1];
  msg.remove_prefix(bar + 3);
  if (kind != 'K' && kind != 'T' && kind != 'X') return out;
  out.inv.kind = kind == 'K' ? Invalidation::Kind::kKey : Invalidation::Kind::kTag;
  out.inv.keys_complete = kind != 'X';
  std::string_view prefix, name;
  if (!take_netstring(&msg, &prefix) || !take_netstring(&msg, &name)) return out;
  out.prefix = std::string(prefix);
  out.inv.name = std::string(name);
  while (!msg.empty()) {
    std::string_view key;
    if (!take_netstring(&msg, &key)) return out;
    out.inv.keys.emplace_back(key);
  }
  out.valid = true;
  return out;
}

}  // namespace redis_internal

#if defined(BRISK_HAVE_REDIS)

using redis_internal::Command;
using redis_internal::Connection;
using redis_internal::Failure;
using redis_internal::RealClock;
using redis_internal::Reply;

static int64_t to_ms(Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

// Deletes a tag's keys and set, then publishes the message; KEYS[1] = tag set; ARGV = channel, message header,
// key prefix, max keys to list, tag.
static constexpr std::string_view kInvalidateTagScript = R"lua(
local members = redis.call('SMEMBERS', KEYS[1])
local deleted = 0
for i = 1, #members, 512 do
  deleted = deleted + redis.call('DEL', unpack(members, i, math.min(i + 511, #members)))
end
redis.call('DEL', KEYS[1])
local head = string.len(ARGV[3]) .. ':' .. ARGV[3] .. string.len(ARGV[5]) .. ':' .. ARGV[5]
local parts
if #members <= tonumber(ARGV[4]) then
  parts = {ARGV[2], 'T|', head}
  for _, m in ipairs(members) do
    parts[#parts + 1] = string.len(m) .. ':' .. m
  end
else
  parts = {ARGV[2], 'X|', head}
end
redis.call('PUBLISH', ARGV[1], table.concat(parts))
return deleted
)lua";

RedisTier::Impl::Impl(RedisOptions o)
    : options(std::move(o)),
      address(absl::StrCat(options.host, ":", options.port)),
      value_prefix(options.key_prefix + ":"),
      tag_prefix(options.key_prefix + "#tag:"),
      breaker(options.breaker, options.clock) {
  std::random_device rd;
  const uint64_t id =
      (uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(RealClock::now().time_since_epoch().count());
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(id));
  origin = hex;
}

Status RedisTier::Impl::error(std::string_view what, const Status& cause) const {
  return Status(cause.code(), absl::StrCat("redis ", address, ": ", std::string(what), ": ", cause.message()));
}

Status RedisTier::Impl::auth_error(std::string_view reply) const {
  const std::string as = options.password.empty() ? std::string("without a password (RedisOptions.password is empty)")
                         : options.user.empty()   ? std::string("with RedisOptions.password as the default user")
                                                  : absl::StrCat("as RedisOptions.user \"", options.user, "\"");
  return absl::PermissionDeniedError(absl::StrCat("redis ", address, ": authentication ", as,
                                                  " refused: ", std::string(reply),
                                                  "; expected RedisOptions.user/password to match the server's "
                                                  "ACL or requirepass"));
}

StatusOr<std::unique_ptr<Connection>> RedisTier::Impl::open_connection(Duration connect_budget,
                                                                       RealClock::time_point deadline,
                                                                       Failure* failure) {
  BRISK_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn,
                         Connection::connect(options.host, options.port, connect_budget, failure));
  if (options.password.empty()) return conn;
  Command auth = {"AUTH", options.password};
  if (!options.user.empty()) auth = {"AUTH", options.user, options.password};
  std::vector<Reply> replies;
  BRISK_RETURN_IF_ERROR(conn->execute({&auth, 1}, deadline, &replies, failure));
  const redisReply* r = replies[0].get();
  if (r->type == REDIS_REPLY_ERROR) {
    auth_failures.fetch_add(1, std::memory_order_relaxed);
    *failure = Failure::kProtocol;
    return auth_error(std::string_view(r->str, r->len));
  }
  return conn;
}

void RedisTier::Impl::note_connected() {
  connects.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu);
  if (dropped_unreplaced > 0) {
    --dropped_unreplaced;
    reconnects.fetch_add(1, std::memory_order_relaxed);
  }
}

Status RedisTier::Impl::call(std::span<const Command> commands, std::vector<Reply>* replies) {
  const std::string what = redis_internal::describe_command(commands.front());
  CircuitBreaker::Permit permit = breaker.try_acquire();
  if (!permit) {
    return absl::UnavailableError(
        absl::StrCat("redis ", address, ": ", what, ": circuit breaker open after ", options.breaker.failure_threshold,
                     " consecutive failures; calls fail fast for ", to_ms(options.breaker.open_duration),
                     " ms (breaker.open_duration), then one probe is let through"));
  }
  // The whole call, pool wait included, stays within connect_timeout + command_timeout.
  const auto start = RealClock::now();
  const auto overall = start + options.connect_timeout + options.command_timeout;
  std::unique_ptr<Connection> conn;
  {
    std::unique_lock<std::mutex> lock(mu);
    const bool got = pool_cv.wait_until(lock, start + options.command_timeout,
                                        [&] { return !idle.empty() || open < options.pool_size; });
    if (!got) {
      lock.unlock();
      pool_exhausted.fetch_add(1, std::memory_order_relaxed);
      errors.fetch_add(1, std::memory_order_relaxed);
      breaker.record_neutral(permit);
      return absl::UnavailableError(absl::StrCat("redis ", address, ": ", what, ": all ", options.pool_size,
                                                 " connections stayed busy for ", to_ms(options.command_timeout),
                                                 " ms (command_timeout); expected a free one (raise pool_size)"));
    }
    if (!idle.empty()) {
      conn = std::move(idle.back());
      idle.pop_back();
    } else {
      ++open;  // this slot is ours; connect outside the lock
    }
  }
  auto give_back_slot = [&] {
    std::lock_guard<std::mutex> lock(mu);
    --open;
    ++dropped_unreplaced;
    pool_cv.notify_one();
  };
  if (!conn) {
    Failure failure;
    const Duration budget = std::min<Duration>(options.connect_timeout, overall - RealClock::now());
    auto made = open_connection(budget, overall, &failure);
    if (!made.ok()) {
      {
        std::lock_guard<std::mutex> lock(mu);
        --open;
        pool_cv.notify_one();
      }
      errors.fetch_add(1, std::memory_order_relaxed);
      if (failure == Failure::kTimeout) timeouts.fetch_add(1, std::memory_order_relaxed);
      breaker.record_failure(permit);  // a refused AUTH too: a wrong password must not cost a round trip per call
      if (made.status().code() == absl::StatusCode::kPermissionDenied) return made.status();
      return error(what, made.status());
    }
    conn = std::move(*made);
    note_connected();
  }
  commands_sent.fetch_add(1, std::memory_order_relaxed);
  Failure failure;
  const auto deadline = std::min(RealClock::now() + options.command_timeout, overall);
  Status s = conn->execute(commands, deadline, replies, &failure);
  if (!s.ok()) {
    conn.reset();  // a late reply could still arrive on it
    give_back_slot();
    errors.fetch_add(1, std::memory_order_relaxed);
    if (failure == Failure::kTimeout) {
      timeouts.fetch_add(1, std::memory_order_relaxed);
      s = absl::DeadlineExceededError(
          absl::StrCat(s.message(), " (command_timeout ", to_ms(options.command_timeout), " ms)"));
    }
    breaker.record_failure(permit);
    return error(what, s);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    idle.push_back(std::move(conn));
    pool_cv.notify_one();
  }
  breaker.record_success(permit);
  // A server error reply (WRONGTYPE, a script error...) is the caller's failure, not the server's health.
  for (size_t i = 0; i < replies->size(); ++i) {
    const redisReply* r = (*replies)[i].get();
    if (r->type == REDIS_REPLY_ERROR) {
      errors.fetch_add(1, std::memory_order_relaxed);
      const std::string_view text(r->str, r->len);
      if (text.substr(0, 6) == "NOAUTH") {  // the server wants a password that this tier was not given
        auth_failures.fetch_add(1, std::memory_order_relaxed);
        return auth_error(text);
      }
      return absl::InternalError(absl::StrCat("redis ", address, ": ", redis_internal::describe_command(commands[i]),
                                              ": server replied with an error: ", std::string(r->str, r->len)));
    }
  }
  return absl::OkStatus();
}

std::string RedisTier::Impl::value_key(std::string_view key) const {
  std::string k = value_prefix;
  k.append(key);
  return k;
}

std::string RedisTier::Impl::tag_key(std::string_view tag) const {
  std::string k = tag_prefix;
  k.append(tag);
  return k;
}

RedisTier::RedisTier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RedisTier::~RedisTier() { impl_->stop_subscriber(); }

static Status tls_unavailable() {
#if defined(BRISK_HAVE_HIREDIS_SSL)
  return absl::UnimplementedError(
      "RedisOptions.tls is true, but brisk's Redis connections do not drive hiredis_ssl yet; expected tls = false "
      "(or a TLS proxy such as stunnel on loopback)");
#else
  return absl::UnimplementedError(
      "RedisOptions.tls is true, but libbrisk was built against a hiredis without SSL support (no hiredis_ssl; "
      "Debian's hiredis 0.14 has none); expected tls = false, or a TLS proxy such as stunnel on loopback");
#endif
}

StatusOr<std::unique_ptr<RedisTier>> RedisTier::create(RedisOptions options) {
  BRISK_RETURN_IF_ERROR(options.validate());
  if (options.tls) return tls_unavailable();
  return std::unique_ptr<RedisTier>(new RedisTier(std::make_unique<Impl>(std::move(options))));
}

StatusOr<std::optional<std::string>> RedisTier::get(std::string_view key) {
  const std::string k = impl_->value_key(key);
  const Command cmd = {"GET", k};
  std::vector<Reply> replies;
  BRISK_RETURN_IF_ERROR(impl_->call({&cmd, 1}, &replies));
  const redisReply* r = replies[0].get();
  if (r->type == REDIS_REPLY_NIL) return std::optional<std::string>();
  if (r->type != REDIS_REPLY_STRING) {
    return absl::InternalError(
        absl::StrCat("redis ", impl_->address, ": GET ", k, ": reply of type ", r->type, "; expected a string or nil"));
  }
  return std::optional<std::string>(std::string(r->str, r->len));
}

StatusOr<std::optional<RedisTier::ValueWithTtl>> RedisTier::get_with_ttl(std::string_view key) {
  const std::string k = impl_->value_key(key);
  const Command cmds[] = {{"GET", k}, {"PTTL", k}};
  std::vector<Reply> replies;
  BRISK_RETURN_IF_ERROR(impl_->call(cmds, &replies));
  const redisReply* v = replies[0].get();
  const redisReply* t = replies[1].get();
  if (v->type == REDIS_REPLY_NIL) return std::optional<ValueWithTtl>();
  if (v->type != REDIS_REPLY_STRING || t->type != REDIS_REPLY_INTEGER) {
    return absl::InternalError(absl::StrCat("redis ", impl_->address, ": GET/PTTL ", k, ": replies of types ", v->type,
                                            "/", t->type, "; expected a string and an integer"));
  }
  ValueWithTtl out{std::string(v->str, v->len), Duration(0)};
  if (t->integer > 0) out.ttl = std::chrono::milliseconds(t->integer);
  return std::optional<ValueWithTtl>(std::move(out));
}

namespace {

// The MGET (and, with_ttl, one PTTL per key) of get_many(): the commands view `full_keys`.
std::vector<Command> many_commands(const std::vector<std::string>& full_keys, bool with_ttl) {
  std::vector<Command> cmds;
  cmds.reserve(with_ttl ? 1 + full_keys.size() : 1);
  Command mget;
  mget.reserve(1 + full_keys.size());
  mget.push_back("MGET");
  for (const std::string& k : full_keys) mget.push_back(k);
  cmds.push_back(std::move(mget));
  if (with_ttl) {
    for (const std::string& k : full_keys) cmds.push_back({"PTTL", k});
  }
  return cmds;
}

// One MGET reply: an array of n strings or nils. `address` names the server in the error.
Status check_mget_reply(const redisReply* r, size_t n, const std::string& address) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements != n) {
    return absl::InternalError(absl::StrCat("redis ", address, ": MGET of ", n, " keys: reply of type ", r->type,
                                            " with ", r->type == REDIS_REPLY_ARRAY ? r->elements : 0,
                                            " elements; expected an array of ", n, " strings or nils"));
  }
  return absl::OkStatus();
}

// One round trip for `keys`: full receives them as stored, replies[0] the checked MGET array and, with_ttl,
// replies[1 + i] key i's PTTL.
Status call_mget(RedisTier::Impl& impl, std::span<const std::string> keys, bool with_ttl,
                 std::vector<std::string>& full, std::vector<Reply>& replies) {
  full.reserve(keys.size());
  for (const std::string& k : keys) full.push_back(impl.value_key(k));
  BRISK_RETURN_IF_ERROR(impl.call(many_commands(full, with_ttl), &replies));
  return check_mget_reply(replies[0].get(), keys.size(), impl.address);
}

}  // namespace

StatusOr<std::vector<std::optional<std::string>>> RedisTier::get_many(std::span<const std::string> keys) {
  std::vector<std::optional<std::string>> out;
  if (keys.empty()) return out;
  std::vector<std::string> full;
  std::vector<Reply> replies;
  BRISK_RETURN_IF_ERROR(call_mget(*impl_, keys, /*with_ttl=*/false, full, replies));
  const redisReply* r = replies[0].get();
  out.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const redisReply* e = r->element[i];
    if (e->type == REDIS_REPLY_STRING) out[i].emplace(e->str, e->len);  // nil (or anything else): no value
  }
  return out;
}

StatusOr<std::vector<std::optional<RedisTier::ValueWithTtl>>> RedisTier::get_many_with_ttl(
    std::span<const std::string> keys) {
  std::vector<std::optional<ValueWithTtl>> out;
  if (keys.empty()) return out;
  std::vector<std::string> full;
  std::vector<Reply> replies;
  BRISK_RETURN_IF_ERROR(call_mget(*impl_, keys, /*with_ttl=*/true, full, replies));
  const redisReply* r = replies[0].get();
  out.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const redisReply* e = r->element[i];
    const redisReply* t = replies[1 + i].get();
    if (e->type != REDIS_REPLY_STRING) continue;
    if (t->type != REDIS_REPLY_INTEGER) {
      return absl::InternalError(absl::StrCat("redis ", impl_->address, ": PTTL ", full[i], ": reply of type ", t->type,
                                              "; expected an integer"));
    }
    ValueWithTtl v{std::string(e->str, e->len), Duration(0)};
    if (t->integer > 0) v.ttl = std::chrono::milliseconds(t->integer);
    out[i].emplace(std::move(v));
  }
  return out;
}

Status RedisTier::set(std::string_view key, std::string_view bytes, Duration ttl, std::span<const std::string> tags) {
  const std::string k = impl_->value_key(key);
  int64_t ms = 0;
  if (ttl > Duration::zero()) ms = std::max<int64_t>(1, (ttl.count() + 999999) / 1000000);
  const std::string ms_text = std::to_string(ms);
  std::vector<std::string> tag_keys;
  tag_keys.reserve(tags.size());
  for (const std::string& t : tags) tag_keys.push_back(impl_->tag_key(t));
  std::vector<Command> cmds;
  cmds.reserve(1 + 3 * tags.size());
  if (ms > 0) {
    cmds.push_back({"SET", k, bytes, "PX", ms_text});
  } else {
    cmds.push_back({"SET", k, bytes});
  }
  for (const std::string& tk : tag_keys) {
    cmds.push_back({"SADD", tk, k});
    if (ms > 0) {
      // A tag set lives as long as its longest-lived member: NX sets a first expiry, GT only extends it.
      cmds.push_back({"PEXPIRE", tk, ms_text, "NX"});
      cmds.push_back({"PEXPIRE", tk, ms_text, "GT"});
    } else {
      cmds.push_back({"PERSIST", tk});
    }
  }
  std::vector<Reply> replies;
  return impl_->call(cmds, &replies);
}

Status RedisTier::del(std::string_view key) {
  const std::string k = impl_->value_key(key);
  std::string msg = redis_internal::message_header(impl_->origin);
  msg.append("K|");
  redis_internal::append_netstring(&msg, impl_->options.key_prefix);
  redis_internal::append_netstring(&msg, key);
  const Command cmds[] = {{"DEL", k}, {"PUBLISH", impl_->options.invalidation_channel, msg}};
  std::vector<Reply> replies;
  return impl_->call(cmds, &replies);
}

StatusOr<size_t> RedisTier::invalidate_tag(std::string_view tag) {
  const std::string tk = impl_->tag_key(tag);
  const std::string header = redis_internal::message_header(impl_->origin);
  const std::string max_keys = std::to_string(impl_->options.max_keys_per_message);
  const Command cmd = {"EVAL", kInvalidateTagScript,      "1",      tk, impl_->options.invalidation_channel,
                       header, impl_->options.key_prefix, max_keys, tag};
  std::vector<Reply> replies;
  BRISK_RETURN_IF_ERROR(impl_->call({&cmd, 1}, &replies));
  const redisReply* r = replies[0].get();
  if (r->type != REDIS_REPLY_INTEGER || r->integer < 0) {
    return absl::InternalError(absl::StrCat("redis ", impl_->address, ": EVAL (invalidate tag ", std::string(tag),
                                            "): reply of type ", r->type, "; expected a count"));
  }
  return static_cast<size_t>(r->integer);
}

Status RedisTier::subscribe(std::function<void(const Invalidation&)> callback) {
  return impl_->start_subscriber(std::move(callback));
}

RedisStats RedisTier::stats() const {
  RedisStats s;
  s.commands = impl_->commands_sent.load(std::memory_order_relaxed);
  s.errors = impl_->errors.load(std::memory_order_relaxed);
  s.timeouts = impl_->timeouts.load(std::memory_order_relaxed);
  s.breaker_opens = impl_->breaker.opens();
  s.short_circuited = impl_->breaker.short_circuited();
  s.pool_exhausted = impl_->pool_exhausted.load(std::memory_order_relaxed);
  s.connects = impl_->connects.load(std::memory_order_relaxed);
  s.reconnects = impl_->reconnects.load(std::memory_order_relaxed);
  s.messages_received = impl_->messages_received.load(std::memory_order_relaxed);
  s.messages_ignored = impl_->messages_ignored.load(std::memory_order_relaxed);
  s.auth_failures = impl_->auth_failures.load(std::memory_order_relaxed);
  s.subscribed = impl_->subscribed.load(std::memory_order_acquire);
  s.breaker_state = impl_->breaker.state();
  return s;
}

const RedisOptions& RedisTier::options() const { return impl_->options; }
std::string RedisTier::address() const { return impl_->address; }

#else  // !BRISK_HAVE_REDIS: the tier compiles, and create() says why it cannot work.

RedisTier::RedisTier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RedisTier::~RedisTier() = default;

static Status not_built() {
  return absl::UnimplementedError(
      "the Redis tier is not available: libbrisk was built without hiredis (install libhiredis-dev and rebuild "
      "with BRISK_WITH_REDIS=ON)");
}

StatusOr<std::unique_ptr<RedisTier>> RedisTier::create(RedisOptions options) {
  BRISK_RETURN_IF_ERROR(options.validate());
  return not_built();
}
StatusOr<std::optional<std::string>> RedisTier::get(std::string_view) { return not_built(); }
StatusOr<std::optional<RedisTier::ValueWithTtl>> RedisTier::get_with_ttl(std::string_view) { return not_built(); }
StatusOr<std::vector<std::optional<std::string>>> RedisTier::get_many(std::span<const std::string>) {
  return not_built();
}
StatusOr<std::vector<std::optional<RedisTier::ValueWithTtl>>> RedisTier::get_many_with_ttl(
    std::span<const std::string>) {
  return not_built();
}
Status RedisTier::set(std::string_view, std::string_view, Duration, std::span<const std::string>) {
  return not_built();
}
Status RedisTier::del(std::string_view) { return not_built(); }
StatusOr<size_t> RedisTier::invalidate_tag(std::string_view) { return not_built(); }
Status RedisTier::subscribe(std::function<void(const Invalidation&)>) { return not_built(); }
RedisStats RedisTier::stats() const { return {}; }
const RedisOptions& RedisTier::options() const { return impl_->options; }
std::string RedisTier::address() const { return absl::StrCat(impl_->options.host, ":", impl_->options.port); }

#endif  // BRISK_HAVE_REDIS

}  // namespace brisk::cache
