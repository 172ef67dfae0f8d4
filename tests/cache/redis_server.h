// Test helper: a real redis-server on a free loopback port (bind 127.0.0.1, no persistence, its own temp dir),
// started in the constructor and stopped in the destructor, with the failures the Redis tier must survive:
// pause() (SIGSTOP: connections hang), resume() (SIGCONT), kill() (SIGKILL: connections refused) and restart()
// on the same port. raw() talks RESP directly (hiredis) to plant or inspect values. With RedisServerAuth the
// server demands a password (requirepass, for the default user) and knows one more ACL user with all rights;
// raw() then authenticates as the default user.
//
//   RedisServer server;                       // REQUIRE(server.ok()) — it waits until the server answers PING
//   RedisServer locked({.password = "pw", .acl_user = "app", .acl_password = "app-pw"});
//   RedisOptions opts; opts.port = server.port();
//   server.pause(); ... server.resume();
//   server.raw({"SET", "brisk:x", "garbage"});
//
// The server runs as a child of the thread that started it and dies with it (PR_SET_PDEATHSIG), so a crashed
// test leaves no server behind: start and restart it from the test's main thread.
// Thread safety: none; drive it from one thread.
#pragma once

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace brisk::testing {

// Slack on top of connect_timeout + command_timeout for a bound on blocking. The timeout contract promises that
// a call on a stalled or dead server returns; it does not promise how fast, so the slack is generous (a shared
// 2-core machine under sanitizers) and only tells a bounded call from one that stays blocked (the tests stall
// their servers for longer than this). Speed belongs in benchmarks.
inline constexpr std::chrono::nanoseconds kBlockingSlack = std::chrono::seconds(1);

struct RedisServerAuth {
  std::string password;  // requirepass; empty: none
  std::string acl_user;  // empty: no extra user
  std::string acl_password;
};

class RedisServer {
 public:
  explicit RedisServer(RedisServerAuth auth = {}) : auth_(std::move(auth)) {
    for (int attempt = 0; attempt < 5 && pid_ < 0; ++attempt) {
      port_ = free_port();
      if (port_ > 0) start();
    }
  }
  ~RedisServer() { stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  bool ok() const { return pid_ > 0; }
  int port() const { return port_; }
  std::filesystem::path log_file() const { return dir_.path / "redis.log"; }

  void pause() {
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
  }
  void resume() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
  }
  // SIGKILL: the server is gone at once; its clients see their connections reset.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Starts it again on the same port (empty: nothing was persisted). False when it does not come up.
  bool restart() {
    kill();
    for (int attempt = 0; attempt < 20 && pid_ < 0; ++attempt) {
      start();
      if (pid_ < 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return pid_ > 0;
  }

  // Runs one command on a fresh connection; nullopt when the server does not answer. Status and string replies
  // come back as their text, integers as decimal text, nil as "(nil)", errors as "ERR:<message>".
  std::optional<std::string> raw(const std::vector<std::string>& args) const {
    redisContext* c = connect();
    if (c == nullptr) return std::nullopt;
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    std::optional<std::string> out;
    if (r != nullptr) {
      switch (r->type) {
        case REDIS_REPLY_STRING:
        case REDIS_REPLY_STATUS: out = std::string(r->str, r->len); break;
        case REDIS_REPLY_INTEGER: out = std::to_string(r->integer); break;
        case REDIS_REPLY_NIL: out = "(nil)"; break;
        case REDIS_REPLY_ERROR: out = "ERR:" + std::string(r->str, r->len); break;
        case REDIS_REPLY_ARRAY: out = "(array " + std::to_string(r->elements) + ")"; break;
        default: out = "(other)"; break;
      }
      freeReplyObject(r);
    }
    redisFree(c);
    return out;
  }

  // KEYS pattern (fine for a test server's few keys); empty when the server does not answer.
  std::vector<std::string> keys(const std::string& pattern) const {
    std::vector<std::string> out;
    redisContext* c = connect();
    if (c == nullptr) return out;
    auto* r = static_cast<redisReply*>(redisCommand(c, "KEYS %b", pattern.data(), pattern.size()));
    if (r != nullptr && r->type == REDIS_REPLY_ARRAY) {
      for (size_t i = 0; i < r->elements; ++i) out.emplace_back(r->element[i]->str, r->element[i]->len);
    }
    if (r != nullptr) freeReplyObject(r);
    redisFree(c);
    return out;
  }

  bool ping() const {
    auto r = raw({"PING"});
    return r.has_value() && *r == "PONG";
  }

 private:
  // A connection with a 1 s timeout, authenticated as the default user when the server wants a password; null
  // when the server does not answer.
  redisContext* connect() const {
    timeval tv{1, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
    if (c == nullptr) return nullptr;
    if (c->err != 0) {
      redisFree(c);
      return nullptr;
    }
    redisSetTimeout(c, tv);
    if (!auth_.password.empty()) {
      auto* a = static_cast<redisReply*>(redisCommand(c, "AUTH %b", auth_.password.data(), auth_.password.size()));
      if (a != nullptr) freeReplyObject(a);
    }
    return c;
  }

  static int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    int port = -1;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    ::close(fd);
    return port;
  }

  void start() {
    const std::string port = std::to_string(port_);
    const std::string dir = dir_.path.string();
    const std::string log = log_file().string();
    std::vector<std::string> args = {
        "redis-server", "--port", port, "--bind",    "127.0.0.1", "--save",      "",  "--appendonly",
        "no",           "--dir",  dir,  "--logfile", log,         "--daemonize", "no"};
    if (!auth_.password.empty()) args.insert(args.end(), {"--requirepass", auth_.password});
    if (!auth_.acl_user.empty()) {
      args.insert(args.end(), {"--user", auth_.acl_user, "on", ">" + auth_.acl_password, "~*", "&*", "+@all"});
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::execv("/usr/bin/redis-server", argv.data());
      ::execvp("redis-server", argv.data());
      ::_exit(127);
    }
    if (pid < 0) return;
    // Up when it answers PING; gone when the child exited (e.g. the port was taken).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < give_up) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) return;
      pid_ = pid;
      if (ping()) return;
      pid_ = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGTERM);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < give_up) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    kill();
  }

  RedisServerAuth auth_;
  TempDir dir_;
  int port_ = -1;
  pid_t pid_ = -1;
};

}  // namespace brisk::testing
