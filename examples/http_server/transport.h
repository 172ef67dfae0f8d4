// Transport: the HTTP example's connection layer, an httplib::Server whose connections are served the way a
// service facing untrusted clients needs, where cpp-httplib 0.11 does not:
//   - Pipelining: one buffered stream per connection, so requests sent back to back are all answered, in order
//     (httplib's per-request stream dropped the bytes it had read past the first request).
//   - Idle connections do not hold a worker: a connection with no request pending is parked on an epoll thread and
//     goes back to the pool when its next request arrives, or is closed after TransportOptions::keep_alive.
//   - Byte caps while reading: a request head over max_head_bytes, or a body (chunked included) past
//     max_body_bytes plus its framing, fails the read instead of growing a buffer.
//   - A refused request whose body is left unread (close_after_response()) closes its connection after the response
//     with a bounded lingering read, so that the body is never taken for the next request and the client reads the
//     answer instead of a reset.
//
//   brisk_http::Transport server({.threads = 16, .max_body_bytes = 2 << 20});
//   service.install(server);              // routes, as on any httplib::Server
//   server.bind_and_listen("127.0.0.1", 8080);
//   server.listen_after_bind();
//
// Thread safety: as httplib::Server. close_after_response() and over_limit() act on the connection served by
// the calling thread, so they are called from httplib's handlers (pre-routing, route, error, Expect handlers).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace brisk_http {

struct TransportOptions {
  size_t threads = 16;                            // workers: requests served at once (idle connections need none)
  size_t max_body_bytes = size_t{2} << 20;        // a body's decoded cap is the handler's; this bounds its raw bytes
  size_t max_head_bytes = size_t{64} << 10;       // request line and headers
  std::chrono::milliseconds read_timeout{5000};   // per read of a request
  std::chrono::milliseconds write_timeout{5000};  // per write of a response
  std::chrono::milliseconds keep_alive{5000};     // a parked connection with no new request is closed after it
  // A worker waits this long for a connection's next request before it parks the connection: a client that sends
  // its next request as soon as it has an answer skips the trip through the epoll thread.
  std::chrono::milliseconds park_after{2};
  std::chrono::milliseconds linger{5000};  // at most this long reading what a refused client still sends
};

class Transport : public httplib::Server {
 public:
  explicit Transport(TransportOptions options);

  // Binds host:port (port 0: a free one) and listens with a backlog of SOMAXCONN (httplib's is 5: a burst of new
  // connections beyond it waits for SYN-ACK retransmits, seconds). The port, or -1.
  int bind_and_listen(const std::string& host, int port);

  // The connection of the calling handler closes once this response is written (with "Connection: close").
  static void close_after_response(httplib::Response& res);
  // Whether a read of the calling handler's request failed because its head or body went past its byte cap.
  enum class OverLimit { kNone, kHead, kBody };
  static OverLimit over_limit();

  const TransportOptions& options() const { return options_; }

  // Connections parked now (idle, holding no worker), and those closed idle after keep_alive.
  size_t parked() const { return parked_.load(std::memory_order_relaxed); }
  uint64_t closed_idle() const { return closed_idle_.load(std::memory_order_relaxed); }

 private:
  class Pool;
  bool process_and_close_socket(socket_t sock) override;

  TransportOptions options_;
  std::atomic<Pool*> pool_{nullptr};  // set while listening (httplib owns it)
  std::atomic<size_t> parked_{0};
  std::atomic<uint64_t> closed_idle_{0};
};

}  // namespace brisk_http
