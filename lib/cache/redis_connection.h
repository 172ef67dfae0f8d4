// Internal to libbrisk (never installed): one hiredis connection driven with deadlines. hiredis 0.14's blocking
// calls cannot be bounded as a whole (a socket timeout bounds each read(), not a call) and its write() raises
// SIGPIPE on a closed socket, so commands are formatted with hiredis, sent with send(MSG_NOSIGNAL), and
// replies are read through hiredis's parser only after poll() says bytes are there, against one deadline.
//
// Thread safety: a Connection is used by one thread at a time (the pool hands it out).
#pragma once

#if defined(BRISK_HAVE_REDIS)

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/clock.h"
#include "brisk/core/status.h"

namespace brisk::cache::redis_internal {

struct ReplyDeleter {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// One command: its arguments (the first is the command name).
using Command = std::vector<std::string_view>;

// Why a call failed, for the tier's stats and breaker.
enum class Failure : uint8_t { kNone, kIo, kTimeout, kProtocol };

using RealClock = std::chrono::steady_clock;

class Connection {
 public:
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects within `timeout`. On failure *failure says whether it timed out.
  static StatusOr<std::unique_ptr<Connection>> connect(const std::string& host, int port, Duration timeout,
                                                       Failure* failure);

  // Sends the commands in one write and reads one reply per command, all before `deadline`. After a failure
  // the connection is unusable (a reply may still be on its way) and must be dropped.
  Status execute(std::span<const Command> commands, RealClock::time_point deadline, std::vector<Reply>* replies,
                 Failure* failure);

  // Subscriber use: reads the bytes available now (call after poll() reported fd() readable) and appends every
  // complete reply to *replies.
  Status read_available(std::vector<Reply>* replies, Failure* failure);
  // Appends the complete replies already buffered (read with an earlier reply) without reading the socket.
  Status take_buffered(std::vector<Reply>* replies, Failure* failure);

  int fd() const;

 private:
  explicit Connection(redisContext* context) : context_(context) {}
  Status send_all(const std::string& bytes, RealClock::time_point deadline, Failure* failure);
  // Waits until fd() is readable (or writable); false when the deadline passed first.
  bool wait_ready(short events, RealClock::time_point deadline) const;

  redisContext* context_;
};

// "SET brisk:key" style description of a command for error messages; long arguments are cut.
std::string describe_command(const Command& command, size_t args = 2);

}  // namespace brisk::cache::redis_internal

#endif  // BRISK_HAVE_REDIS
