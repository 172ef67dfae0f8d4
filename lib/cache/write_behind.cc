// WriteBehind: the bounded queue and background thread that carry the tiered cache's L2 writes to Redis.
#include "brisk/cache/write_behind.h"

#include <algorithm>

namespace brisk::cache {

RedisWriteBehind::RedisWriteBehind(RedisTier* tier, size_t capacity)
    : tier_(tier), capacity_(std::max<size_t>(1, capacity)), thread_([this] { run(); }) {}

RedisWriteBehind::~RedisWriteBehind() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

bool RedisWriteBehind::enqueue(std::string key, std::string bytes, Duration ttl, std::vector<std::string> tags) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      *it->second = Write{std::move(key), std::move(bytes), ttl, std::move(tags)};
      ++stats_.enqueued;
      ++stats_.coalesced;
      return true;
    }
    if (queue_.size() >= capacity_) {
      ++stats_.dropped;
      return false;
    }
    queue_.push_back(Write{std::move(key), std::move(bytes), ttl, std::move(tags)});
    by_key_.emplace(queue_.back().key, std::prev(queue_.end()));
    ++stats_.enqueued;
  }
  work_cv_.notify_one();
  return true;
}

void RedisWriteBehind::wait_in_flight(std::unique_lock<std::mutex>& lock,
                                      const std::function<bool(const Write&)>& matches) {
  // The tier bounds every call; the cap here only guards against a tier that breaks that promise.
  const RedisOptions& o = tier_->options();
  const Duration cap = 2 * (o.connect_timeout + o.command_timeout) + std::chrono::seconds(1);
  done_cv_.wait_for(lock, cap, [&] { return in_flight_ == nullptr || !matches(*in_flight_); });
}

void RedisWriteBehind::cancel_key(std::string_view key) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = by_key_.find(std::string(key));  // absl's string_view is not std's here: no heterogeneous lookup
  if (it != by_key_.end()) {
    queue_.erase(it->second);
    by_key_.erase(it);
    ++stats_.cancelled;
  }
  wait_in_flight(lock, [&](const Write& w) { return w.key == key; });
}

void RedisWriteBehind::cancel_tag(std::string_view tag) {
  auto has_tag = [&](const Write& w) { return std::find(w.tags.begin(), w.tags.end(), tag) != w.tags.end(); };
  std::unique_lock<std::mutex> lock(mu_);
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (has_tag(*it)) {
      by_key_.erase(it->key);
      it = queue_.erase(it);
      ++stats_.cancelled;
    } else {
      ++it;
    }
  }
  wait_in_flight(lock, has_tag);
}

bool RedisWriteBehind::flush(Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return done_cv_.wait_for(lock, timeout, [&] { return queue_.empty() && in_flight_ == nullptr; });
}

WriteBehindStats RedisWriteBehind::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  WriteBehindStats s = stats_;
  s.queued = queue_.size();
  return s;
}

void RedisWriteBehind::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Write w = std::move(queue_.front());
    by_key_.erase(w.key);
    queue_.pop_front();
    in_flight_ = &w;
    lock.unlock();
    const Status s = tier_->set(w.key, w.bytes, w.ttl, w.tags);
    lock.lock();
    in_flight_ = nullptr;
    ++(s.ok() ? stats_.written : stats_.failed);
    done_cv_.notify_all();
  }
}

}  // namespace brisk::cache
