// The HTTP example's connection tracking (connections.h).
#include "connections.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <vector>

namespace brisk_http {
namespace {

std::optional<std::string> address_of(const sockaddr_storage& a) {
  std::string ip;
  int port = 0;
  if (!endpoint_of(a, &ip, &port)) return std::nullopt;
  return ip + ":" + std::to_string(port);
}

// "peer|local" of a connected TCP socket, or nullopt for anything else.
std::optional<std::string> socket_key(int fd) {
  sockaddr_storage peer{}, local{};
  socklen_t peer_len = sizeof(peer), local_len = sizeof(local);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return std::nullopt;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return std::nullopt;
  auto p = address_of(peer), l = address_of(local);
  if (!p || !l) return std::nullopt;
  return *p + "|" + *l;
}

std::vector<int> open_fds() {
  std::vector<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  const int own = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && fd != own) fds.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  return fds;
}

// The descriptor of the connection `key`, served on this thread: found once per connection, then re-checked.
int fd_of(const std::string& key) {
  thread_local int cached_fd = -1;
  thread_local std::string cached_key;
  if (cached_fd >= 0 && cached_key == key && socket_key(cached_fd) == key) return cached_fd;
  for (int fd : open_fds()) {
    if (socket_key(fd) == key) {
      cached_fd = fd;
      cached_key = key;
      return fd;
    }
  }
  return -1;
}

}  // namespace

bool endpoint_of(const sockaddr_storage& a, std::string* ip, int* port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    *port = ntohs(in->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    *port = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  *ip = text;
  return true;
}

std::string connection_key(const httplib::Request& req) {
  return req.remote_addr + ":" + std::to_string(req.remote_port) + "|" + req.local_addr + ":" +
         std::to_string(req.local_port);
}

bool client_gone(const httplib::Request& req) {
  const int fd = fd_of(connection_key(req));
  if (fd < 0) return true;  // its socket is gone already
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  char c;
  return (p.revents & POLLIN) && recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // EOF; data is a pipelined request
}

ConnectionGuard::ConnectionGuard(ConnectionGuardOptions options) : options_(options), thread_([this] { run(); }) {}

ConnectionGuard::~ConnectionGuard() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ConnectionGuard::head_received(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  State& s = states_[key];
  s.deadline = std::chrono::steady_clock::now() + options_.body_timeout;
  s.in_handler = false;
}

void ConnectionGuard::handler_started(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  states_[key].in_handler = true;
}

void ConnectionGuard::response_sent(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  State& s = states_[key];
  s.deadline = std::chrono::steady_clock::now() + options_.keep_alive + options_.head_timeout;
  s.in_handler = false;
}

void ConnectionGuard::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, options_.scan_interval);
    if (stop_) break;
    lock.unlock();
    scan();
    lock.lock();
  }
}

void ConnectionGuard::scan() {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, s] : states_) s.seen = false;
  }
  for (int fd : open_fds()) {
    const int held = dup(fd);  // the socket cannot change under this descriptor
    if (held < 0) continue;
    std::optional<std::string> key = socket_key(held);
    int listening = 0;
    socklen_t len = sizeof(listening);
    const std::string port_suffix = ":" + std::to_string(options_.listen_port);
    if (!key || !key->ends_with(port_suffix) ||
        (getsockopt(held, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening)) {
      close(held);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, added] = states_.try_emplace(*key);
    if (added) it->second.deadline = now + options_.keep_alive + options_.head_timeout;  // newly accepted
    it->second.seen = true;
    if (!it->second.in_handler && it->second.deadline < now) {
      // Under the lock: a request head that arrives now waits for it and then finds the connection gone, instead of
      // being torn down inside its handler.
      shutdown(held, SHUT_RDWR);
      states_.erase(it);
      closed_slow_.fetch_add(1, std::memory_order_relaxed);
    }
    close(held);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(states_, [](const auto& kv) { return !kv.second.seen; });
  }
}

}  // namespace brisk_http
