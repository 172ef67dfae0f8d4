// The HTTP example's connection layer (transport.h).
#include "transport.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "connections.h"

namespace brisk_http {
namespace {

using Clock = std::chrono::steady_clock;

// Waits up to `timeout` for `events` on fd; true when one came.
bool wait_for(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = poll(&p, 1, static_cast<int>(timeout.count()));
    if (n >= 0 || errno != EINTR) return n > 0;
  }
}

// One connection's stream for all of its requests: what a read takes from the socket past the current request stays
// buffered for the next one. Each request may read at most max_head bytes up to the end of its head and
// max_body_raw bytes after it; past that a read fails and over_limit() says why.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, const TransportOptions& o)
      : fd_(fd),
        read_timeout_(o.read_timeout),
        write_timeout_(o.write_timeout),
        max_head_(o.max_head_bytes),
        // Chunk sizes and line ends come on top of the body itself.
        max_body_raw_(o.max_body_bytes + o.max_body_bytes / 4 + (size_t{64} << 10)) {}

  bool buffered() const { return begin_ < end_; }
  void start_request() {
    in_body_ = false;
    used_ = 0;
    over_limit_ = false;
  }
  void head_done() {
    in_body_ = true;
    used_ = 0;
  }
  Transport::OverLimit over_limit() const {
    if (!over_limit_) return Transport::OverLimit::kNone;
    return in_body_ ? Transport::OverLimit::kBody : Transport::OverLimit::kHead;
  }

  bool is_readable() const override { return buffered() || wait_for(fd_, POLLIN, read_timeout_); }
  bool is_writable() const override { return wait_for(fd_, POLLOUT, write_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    const size_t cap = in_body_ ? max_body_raw_ : max_head_;
    if (used_ >= cap) {
      over_limit_ = true;
      return -1;
    }
    size = std::min(size, cap - used_);
    if (!buffered()) {
      if (!is_readable()) return -1;
      ssize_t n;
      do {
        n = recv(fd_, buf_, sizeof(buf_), 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buf_ + begin_, n);
    begin_ += n;
    used_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    if (get(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 || !endpoint_of(a, &ip, &port)) {
      ip.clear();
      port = 0;
    }
  }

  int fd_;
  std::chrono::milliseconds read_timeout_, write_timeout_;
  size_t max_head_, max_body_raw_;
  char buf_[16384];
  size_t begin_ = 0, end_ = 0;
  bool in_body_ = false;
  size_t used_ = 0;
  bool over_limit_ = false;
};

struct ServingState {
  ConnectionStream* stream = nullptr;
  bool close_after = false;
};
thread_local ServingState serving;

// Half-closes, then reads and drops what the client still sends (a refused body) until it closes or `linger` has
// passed, so that the response already written is read rather than lost to a reset.
void linger_close(int fd, std::chrono::milliseconds linger) {
  shutdown(fd, SHUT_WR);
  const auto deadline = Clock::now() + linger;
  char sink[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || !wait_for(fd, POLLIN, left)) break;
    const ssize_t n = recv(fd, sink, sizeof(sink), 0);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  close(fd);
}

void close_now(int fd) {
  shutdown(fd, SHUT_RDWR);
  close(fd);
}

}  // namespace

// httplib's task queue for this server: its workers, and the epoll thread that holds idle connections.
class Transport::Pool final : public httplib::TaskQueue {
 public:
  Pool(Transport& transport, size_t threads)
      : transport_(transport),
        workers_(threads),
        epoll_(epoll_create1(EPOLL_CLOEXEC)),
        wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
    parker_ = std::thread([this] { run(); });
  }
  ~Pool() override {
    stop_parking();
    transport_.pool_.store(nullptr);
    close(epoll_);
    close(wake_);
  }

  void enqueue(std::function<void()> fn) override { workers_.enqueue(std::move(fn)); }
  void shutdown() override {
    stop_parking();
    workers_.shutdown();
  }

  // Holds `fd` until it is readable (then a worker serves it) or idle past keep_alive (then it is closed). False when
  // the server is stopping: the caller closes it.
  bool park(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) return false;
    idle_until_[fd] = Clock::now() + transport_.options_.keep_alive;
    transport_.parked_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

 private:
  void stop_parking() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_, &one, sizeof(one));
    parker_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [fd, until] : idle_until_) close_now(fd);
    transport_.parked_.fetch_sub(idle_until_.size(), std::memory_order_relaxed);
    idle_until_.clear();
  }

  // Removes fd from the parked set; false when it was not there.
  bool unpark(int fd) {
    if (idle_until_.erase(fd) == 0) return false;
    epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    transport_.parked_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }

  void run() {
    std::vector<epoll_event> events(64);
    for (;;) {
      const int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), 100);
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd != wake_ && unpark(fd)) {
          workers_.enqueue([t = &transport_, fd] { t->process_and_close_socket(fd); });
        }
      }
      const auto now = Clock::now();
      std::vector<int> expired;
      for (const auto& [fd, until] : idle_until_)
        if (until < now) expired.push_back(fd);
      for (int fd : expired) {
        unpark(fd);
        close_now(fd);
        transport_.closed_idle_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  Transport& transport_;
  httplib::ThreadPool workers_;
  int epoll_, wake_;
  std::mutex mu_;
  bool stopping_ = false;
  std::unordered_map<int, Clock::time_point> idle_until_;
  std::thread parker_;
};

Transport::Transport(TransportOptions options) : options_(options) {
  new_task_queue = [this] {
    auto* pool = new Pool(*this, options_.threads);
    pool_.store(pool);
    return pool;
  };
  set_read_timeout(options_.read_timeout);
  set_write_timeout(options_.write_timeout);
  // Only what the Keep-Alive response header says: parking does the rest.
  set_keep_alive_timeout(std::chrono::duration_cast<std::chrono::seconds>(options_.keep_alive).count());
  set_keep_alive_max_count(100000);
  set_payload_max_length(options_.max_body_bytes);
  set_tcp_nodelay(true);  // small responses must not wait for Nagle and delayed ACKs
}

int Transport::bind_and_listen(const std::string& host, int port) {
  const int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (bound < 0 || ::listen(svr_sock_, SOMAXCONN) != 0) return -1;  // listen() again: only the backlog changes
  return bound;
}

void Transport::close_after_response(httplib::Response& res) {
  serving.close_after = true;
  res.set_header("Connection", "close");
}

Transport::OverLimit Transport::over_limit() {
  return serving.stream != nullptr ? serving.stream->over_limit() : OverLimit::kNone;
}

bool Transport::process_and_close_socket(socket_t sock) {
  ConnectionStream stream(sock, options_);
  serving = {&stream, false};
  bool linger = false;
  // While the server runs: once stopped, the request being read is answered and the connection closed.
  while (svr_sock_ != INVALID_SOCKET) {
    if (!stream.buffered() && !wait_for(sock, POLLIN, options_.park_after)) {
      serving = {};
      Pool* pool = pool_.load();
      if (pool != nullptr && pool->park(sock)) return true;
      break;
    }
    stream.start_request();
    serving.close_after = false;
    bool client_closes = false;
    const bool ok = process_request(stream, /*close_connection=*/false, client_closes,
                                    [&](httplib::Request&) { stream.head_done(); });
    if (serving.close_after) {
      linger = true;
      break;
    }
    if (!ok || client_closes) break;
  }
  serving = {};
  if (linger) {
    linger_close(sock, options_.linger);
  } else {
    close_now(sock);
  }
  return true;
}

}  // namespace brisk_http
