// One Redis connection (hiredis): connect with a timeout; each command bounded by its deadline (poll).
#include "redis_connection.h"

#if defined(BRISK_HAVE_REDIS)

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"

namespace brisk::cache::redis_internal {
namespace {

timeval to_timeval(Duration d) {
  if (d < Duration::zero()) d = Duration::zero();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  timeval tv;
  tv.tv_sec = static_cast<time_t>(us / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(us % 1000000);
  if (tv.tv_sec == 0 && tv.tv_usec == 0) tv.tv_usec = 1;  // hiredis treats 0 as "no timeout"
  return tv;
}

}  // namespace

Connection::~Connection() {
  if (context_ != nullptr) redisFree(context_);
}

int Connection::fd() const { return context_->fd; }

StatusOr<std::unique_ptr<Connection>> Connection::connect(const std::string& host, int port, Duration timeout,
                                                          Failure* failure) {
  *failure = Failure::kNone;
  const auto start = RealClock::now();
  redisContext* c = redisConnectWithTimeout(host.c_str(), port, to_timeval(timeout));
  if (c == nullptr) {
    *failure = Failure::kIo;
    return absl::ResourceExhaustedError("cannot allocate a hiredis context");
  }
  if (c->err != 0) {
    std::string why = c->errstr;
    redisFree(c);
    const bool timed_out = RealClock::now() - start >= timeout * 9 / 10 || why.find("timed out") != std::string::npos;
    *failure = timed_out ? Failure::kTimeout : Failure::kIo;
    if (timed_out) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
      return absl::DeadlineExceededError(absl::StrCat("connect timed out after ", ms, " ms (connect_timeout): ", why));
    }
    return absl::UnavailableError(absl::StrCat("connect failed: ", why));
  }
  // A socket timeout as a second line of defence: every read and write below is preceded by poll().
  redisSetTimeout(c, to_timeval(timeout));
  redisEnableKeepAlive(c);
  return std::unique_ptr<Connection>(new Connection(c));
}

bool Connection::wait_ready(short events, RealClock::time_point deadline) const {
  for (;;) {
    const auto left = deadline - RealClock::now();
    if (left <= Duration::zero()) return false;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    pollfd p{context_->fd, events, 0};
    const int r = ppoll(&p, 1, &ts, nullptr);
    if (r > 0) return true;  // ready, or an error/hang-up the next read or write reports
    if (r < 0 && errno != EINTR) return true;
  }
}

Status Connection::send_all(const std::string& bytes, RealClock::time_point deadline, Failure* failure) {
  size_t off = 0;
  while (off < bytes.size()) {
    if (!wait_ready(POLLOUT, deadline)) {
      *failure = Failure::kTimeout;
      return absl::DeadlineExceededError("timed out writing the command");
    }
    const ssize_t n = ::send(context_->fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      *failure = Failure::kIo;
      return absl::UnavailableError(absl::StrCat("write failed: ", std::strerror(errno)));
    }
    off += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

Status Connection::execute(std::span<const Command> commands, RealClock::time_point deadline,
                           std::vector<Reply>* replies, Failure* failure) {
  *failure = Failure::kNone;
  replies->clear();
  std::string out;
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const Command& cmd : commands) {
    argv.clear();
    lens.clear();
    for (std::string_view a : cmd) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    char* formatted = nullptr;
    const int len = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), argv.data(), lens.data());
    if (len < 0 || formatted == nullptr) {
      *failure = Failure::kProtocol;
      return absl::ResourceExhaustedError("cannot format the command");
    }
    out.append(formatted, static_cast<size_t>(len));
    redisFreeCommand(formatted);
  }
  BRISK_RETURN_IF_ERROR(send_all(out, deadline, failure));

  while (replies->size() < commands.size()) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(context_, &raw) != REDIS_OK) {
      *failure = Failure::kProtocol;
      return absl::InternalError(absl::StrCat("bad reply: ", context_->errstr));
    }
    if (raw != nullptr) {
      replies->emplace_back(static_cast<redisReply*>(raw));
      continue;
    }
    if (!wait_ready(POLLIN, deadline)) {
      *failure = Failure::kTimeout;
      return absl::DeadlineExceededError("timed out waiting for the reply");
    }
    if (redisBufferRead(context_) != REDIS_OK) {
      *failure = Failure::kIo;
      return absl::UnavailableError(absl::StrCat("read failed: ", context_->errstr));
    }
  }
  return absl::OkStatus();
}

Status Connection::read_available(std::vector<Reply>* replies, Failure* failure) {
  *failure = Failure::kNone;
  if (redisBufferRead(context_) != REDIS_OK) {
    *failure = Failure::kIo;
    return absl::UnavailableError(absl::StrCat("read failed: ", context_->errstr));
  }
  return take_buffered(replies, failure);
}

Status Connection::take_buffered(std::vector<Reply>* replies, Failure* failure) {
  *failure = Failure::kNone;
  for (;;) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(context_, &raw) != REDIS_OK) {
      *failure = Failure::kProtocol;
      return absl::InternalError(absl::StrCat("bad reply: ", context_->errstr));
    }
    if (raw == nullptr) return absl::OkStatus();
    replies->emplace_back(static_cast<redisReply*>(raw));
  }
}

std::string describe_command(const Command& command, size_t args) {
  std::string s;
  for (size_t i = 0; i < command.size() && i < args; ++i) {
    if (i > 0) s += ' ';
    std::string_view a = command[i];
    if (a.size() > 80) {
      s.append(a.substr(0, 77)).append("...");
    } else {
      s.append(a);
    }
  }
  return s;
}

}  // namespace brisk::cache::redis_internal

#endif  // BRISK_HAVE_REDIS
