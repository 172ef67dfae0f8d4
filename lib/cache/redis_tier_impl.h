// Internal to libbrisk: RedisTier's state, shared by redis_tier.cc (pool and commands) and redis_subscriber.cc.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "brisk/cache/redis_tier.h"
#include "redis_connection.h"

namespace brisk::cache {

namespace redis_internal {

// One decoded invalidation message; valid is false for anything that is not one.
struct ParsedMessage {
  bool valid = false;
  std::string origin;
  std::string prefix;
  Invalidation inv;
};
ParsedMessage parse_message(std::string_view msg);
std::string message_header(std::string_view origin);
void append_netstring(std::string* out, std::string_view s);

}  // namespace redis_internal

#if defined(BRISK_HAVE_REDIS)

struct RedisTier::Impl {
  explicit Impl(RedisOptions o);

  // Runs the commands as one pipelined round trip on a pooled connection, through the breaker, within
  // connect_timeout + command_timeout; one reply per command in *replies. A server error reply is an error.
  Status call(std::span<const redis_internal::Command> commands, std::vector<redis_internal::Reply>* replies);
  Status error(std::string_view what, const Status& cause) const;
  // A new connection within connect_budget, authenticated (AUTH before `deadline`) when a password is set.
  // A refused AUTH is PERMISSION_DENIED and counted in auth_failures.
  StatusOr<std::unique_ptr<redis_internal::Connection>> open_connection(Duration connect_budget,
                                                                        redis_internal::RealClock::time_point deadline,
                                                                        redis_internal::Failure* failure);
  Status auth_error(std::string_view reply) const;
  void note_connected();
  std::string value_key(std::string_view key) const;
  std::string tag_key(std::string_view tag) const;

  Status start_subscriber(std::function<void(const Invalidation&)> callback);
  void stop_subscriber();
  void subscriber_loop();
  void deliver(const redis_internal::Reply& reply);
  bool wait_for_stop(Duration d);  // true when asked to stop

  const RedisOptions options;
  const std::string address;       // "host:port"
  const std::string value_prefix;  // "<key_prefix>:"
  const std::string tag_prefix;    // "<key_prefix>#tag:"
  std::string origin;              // this tier's id in its messages
  CircuitBreaker breaker;

  // The pool: `open` counts idle, checked-out and connecting connections.
  std::mutex mu;
  std::condition_variable pool_cv;
  std::vector<std::unique_ptr<redis_internal::Connection>> idle;
  int open = 0;
  int dropped_unreplaced = 0;  // connections dropped on error and not yet re-made (for `reconnects`)

  std::atomic<uint64_t> commands_sent{0}, errors{0}, timeouts{0}, pool_exhausted{0}, connects{0}, reconnects{0};
  std::atomic<uint64_t> messages_received{0}, messages_ignored{0}, auth_failures{0};
  std::atomic<bool> subscribed{false};

  // The subscriber.
  std::mutex sub_mu;
  std::condition_variable sub_cv;
  bool sub_started = false;
  bool first_attempt_done = false;
  Status first_auth_error;  // the first attempt's credentials were refused (subscribe() then fails)
  std::function<void(const Invalidation&)> callback;
  std::thread sub_thread;
  int stop_fd = -1;  // an eventfd: written once to stop the thread
  std::atomic<bool> stop{false};
};

#else

struct RedisTier::Impl {
  explicit Impl(RedisOptions o) : options(std::move(o)) {}
  const RedisOptions options;
};

#endif  // BRISK_HAVE_REDIS

}  // namespace brisk::cache
