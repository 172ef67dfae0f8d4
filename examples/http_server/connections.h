// connections: what cpp-httplib 0.11 does not give a handler: the socket of the request being served (to see that
// its client hung up, so that the brisk requests are cancelled) and a deadline on each connection's request head
// and body (slowloris: httplib's read timeout is per recv(), so a byte every few seconds would hold a worker).
//
//   brisk_http::ConnectionGuard guard({.head_timeout = 5s, .body_timeout = 10s, .keep_alive = 5s});
//   // pre-routing: guard.head_received(key_of(req));  handler: guard.handler_started(key_of(req));
//   // logger:      guard.response_sent(key_of(req));
//   if (brisk_http::client_gone(req)) cancel();     // from the handler's thread only
//
// A connection is keyed by "peer ip:port|local ip:port". The guard's thread scans the process's sockets every
// scan_interval; a connection that is not in a handler and has passed its deadline (keep_alive + head_timeout after
// it was accepted or last answered; body_timeout after its head arrived) is shut down. It holds a dup() of the
// socket while it decides, so a descriptor reused by a new connection is never shut down by mistake.
//
// Thread safety: ConnectionGuard's members may be called from any thread; client_gone() from the handler's thread.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace brisk_http {

std::string connection_key(const httplib::Request& req);

// The IP (text) and port of an AF_INET or AF_INET6 address; false for any other family.
bool endpoint_of(const sockaddr_storage& address, std::string* ip, int* port);

// True when the client of `req`, served on the calling thread, has closed or reset its connection.
bool client_gone(const httplib::Request& req);

struct ConnectionGuardOptions {
  std::chrono::milliseconds head_timeout{5000};
  std::chrono::milliseconds body_timeout{10000};
  std::chrono::milliseconds keep_alive{5000};
  std::chrono::milliseconds scan_interval{250};
  int listen_port = 0;  // only sockets on this local port are the server's connections (not e.g. Redis's)
};

class ConnectionGuard {
 public:
  explicit ConnectionGuard(ConnectionGuardOptions options);
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  void head_received(const std::string& key);
  void handler_started(const std::string& key);
  void response_sent(const std::string& key);
  // Connections shut down for missing their deadline.
  uint64_t closed_slow() const { return closed_slow_.load(std::memory_order_relaxed); }

 private:
  struct State {
    std::chrono::steady_clock::time_point deadline;
    bool in_handler = false;
    bool seen = false;  // found by the last scan
  };
  void run();
  void scan();

  ConnectionGuardOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::unordered_map<std::string, State> states_;
  std::atomic<uint64_t> closed_slow_{0};
  std::thread thread_;
};

}  // namespace brisk_http
