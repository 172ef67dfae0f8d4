// RedisTier's subscriber thread: its own connection SUBSCRIBEd to the invalidation channel, waiting in poll() on
// that socket and on an eventfd that the destructor writes, so that it stops at once whatever the server does.
// A lost connection is remade with exponential backoff; after a gap a kAll is delivered, since messages
// published meanwhile are gone.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "redis_tier_impl.h"

namespace brisk::cache {

#if defined(BRISK_HAVE_REDIS)

using redis_internal::Command;
using redis_internal::Connection;
using redis_internal::Failure;
using redis_internal::RealClock;
using redis_internal::Reply;

Status RedisTier::Impl::start_subscriber(std::function<void(const Invalidation&)> cb) {
  if (!cb) return absl::InvalidArgumentError("RedisTier::subscribe: the callback is empty; expected a function");
  {
    std::lock_guard<std::mutex> lock(sub_mu);
    if (sub_started) {
      return absl::FailedPreconditionError("RedisTier::subscribe called twice; expected one subscriber per tier");
    }
    stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd < 0) {
      return absl::InternalError(absl::StrCat("RedisTier::subscribe: eventfd failed: ", std::strerror(errno)));
    }
    sub_started = true;
    callback = std::move(cb);
  }
  sub_thread = std::thread([this] { subscriber_loop(); });
  // Normally the subscription is live when this returns; with the server down the thread keeps trying.
  Status refused;
  {
    std::unique_lock<std::mutex> lock(sub_mu);
    sub_cv.wait_for(lock, options.connect_timeout + options.command_timeout, [&] { return first_attempt_done; });
    refused = first_auth_error;
  }
  // A server that is down may come back; one that refuses our credentials will not accept them later.
  if (!refused.ok()) stop_subscriber();
  return refused;
}

void RedisTier::Impl::stop_subscriber() {
  if (!sub_thread.joinable()) return;
  stop.store(true, std::memory_order_release);
  const uint64_t one = 1;
  while (::write(stop_fd, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
  sub_thread.join();
  ::close(stop_fd);
  stop_fd = -1;
}

bool RedisTier::Impl::wait_for_stop(Duration d) {
  const int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  pollfd p{stop_fd, POLLIN, 0};
  const int r = ::poll(&p, 1, ms);
  return (r > 0) || stop.load(std::memory_order_acquire);
}

void RedisTier::Impl::deliver(const Reply& reply) {
  const redisReply* r = reply.get();
  // Pub/sub pushes are ["message", channel, payload]; anything else (subscribe acks) is not an invalidation.
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || r->element[0]->type != REDIS_REPLY_STRING ||
      std::string_view(r->element[0]->str, r->element[0]->len) != "message" ||
      r->element[2]->type != REDIS_REPLY_STRING) {
    return;
  }
  redis_internal::ParsedMessage m =
      redis_internal::parse_message(std::string_view(r->element[2]->str, r->element[2]->len));
  if (!m.valid || m.origin == origin || m.prefix != options.key_prefix) {
    messages_ignored.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (m.inv.kind == Invalidation::Kind::kTag) {
    // Keys arrive in full; hand out those under this prefix, without it.
    std::vector<std::string> keys;
    keys.reserve(m.inv.keys.size());
    for (std::string& k : m.inv.keys) {
      if (k.size() >= value_prefix.size() && k.compare(0, value_prefix.size(), value_prefix) == 0) {
        keys.push_back(k.substr(value_prefix.size()));
      }
    }
    m.inv.keys = std::move(keys);
  }
  messages_received.fetch_add(1, std::memory_order_relaxed);
  callback(m.inv);
}

void RedisTier::Impl::subscriber_loop() {
  Duration backoff = options.subscriber_backoff_min;
  bool gap = false;  // the channel was not watched for a while: messages may be lost
  bool ever = false;
  auto attempt_done = [&](const Status& auth) {
    std::lock_guard<std::mutex> lock(sub_mu);
    if (!first_attempt_done) {
      first_auth_error = auth;
      first_attempt_done = true;
      sub_cv.notify_all();
    }
  };
  while (!stop.load(std::memory_order_acquire)) {
    Failure failure;
    std::unique_ptr<Connection> conn;
    std::vector<Reply> replies;
    auto made = open_connection(options.connect_timeout,
                                RealClock::now() + options.connect_timeout + options.command_timeout, &failure);
    Status auth;  // a refusal of our credentials, as opposed to a server that is down
    if (!made.ok() && made.status().code() == absl::StatusCode::kPermissionDenied) auth = made.status();
    if (made.ok()) {
      conn = std::move(*made);
      connects.fetch_add(1, std::memory_order_relaxed);
      const Command cmd = {"SUBSCRIBE", options.invalidation_channel};
      Status s = conn->execute({&cmd, 1}, RealClock::now() + options.command_timeout, &replies, &failure);
      const redisReply* ack = s.ok() ? replies[0].get() : nullptr;
      if (ack != nullptr && ack->type == REDIS_REPLY_ERROR &&
          std::string_view(ack->str, ack->len).starts_with("NOAUTH")) {
        auth_failures.fetch_add(1, std::memory_order_relaxed);  // the server wants a password we were not given
        auth = auth_error(std::string_view(ack->str, ack->len));
      }
      if (ack == nullptr || ack->type != REDIS_REPLY_ARRAY || ack->elements != 3) conn.reset();
    }
    if (!conn) {
      gap = true;
      attempt_done(auth);
      if (wait_for_stop(backoff)) break;
      backoff = std::min(backoff * 2, options.subscriber_backoff_max);
      continue;
    }
    backoff = options.subscriber_backoff_min;
    if (gap) {
      if (ever) reconnects.fetch_add(1, std::memory_order_relaxed);
      Invalidation all;
      all.kind = Invalidation::Kind::kAll;
      messages_received.fetch_add(1, std::memory_order_relaxed);
      callback(all);
      gap = false;
    }
    subscribed.store(true, std::memory_order_release);  // after the kAll: "subscribed" means caught up
    ever = true;
    attempt_done(absl::OkStatus());
    replies.clear();
    Status s = conn->take_buffered(&replies, &failure);  // messages that came in with the ack
    for (const Reply& r : replies) deliver(r);
    while (s.ok() && !stop.load(std::memory_order_acquire)) {
      pollfd fds[2] = {{conn->fd(), POLLIN, 0}, {stop_fd, POLLIN, 0}};
      const int r = ::poll(fds, 2, -1);
      if (r < 0) {
        if (errno == EINTR) continue;
        s = absl::InternalError(absl::StrCat("poll failed: ", std::strerror(errno)));
        break;
      }
      if (fds[1].revents != 0) break;
      if (fds[0].revents == 0) continue;
      replies.clear();
      s = conn->read_available(&replies, &failure);
      for (const Reply& reply : replies) deliver(reply);
    }
    subscribed.store(false, std::memory_order_release);
    if (!s.ok()) gap = true;  // the connection broke; loop to reconnect
  }
  attempt_done(absl::OkStatus());
}

#endif  // BRISK_HAVE_REDIS

}  // namespace brisk::cache
