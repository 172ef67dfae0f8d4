// A bounded write-behind queue in front of a RedisTier: the tiered cache hands it its L2 writes so that a
// caller never waits on Redis for a put. One background thread drains it in order. A second write of a key
// still queued replaces the first in place (latest value wins, the queue does not grow); when the queue is full
// a new write is dropped and counted (L2 is a cache: a dropped write only costs a later miss).
//
//   RedisWriteBehind writer(tier.get(), /*capacity=*/4096);
//   writer.enqueue("minilm:t1:hello", bytes, std::chrono::minutes(10), {"faq"});
//   writer.cancel_key("minilm:t1:hello");   // before deleting the key: no queued write may resurrect it
//   writer.flush(std::chrono::seconds(1));  // tests and shutdown: wait until everything queued was tried
//
// Invalidation order: cancel_key() / cancel_tag() drop queued writes of the key (of keys carrying the tag) and
// wait until a write of it that is already being sent has finished (bounded by the tier's timeouts), so a DEL
// issued afterwards is not overtaken by an older SET.
//
// Destruction stops the thread after the write in progress; writes still queued are abandoned (flush() first to
// keep them).
//
// Thread safety: every member may be called from any thread at once. The tier must outlive the queue.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "brisk/cache/redis_tier.h"
#include "brisk/core/export.h"

namespace brisk::cache {

struct WriteBehindStats {
  uint64_t enqueued = 0;   // writes accepted (replacements included)
  uint64_t coalesced = 0;  // of those, writes that replaced a queued write of the same key
  uint64_t written = 0;    // writes the tier accepted
  uint64_t failed = 0;     // writes the tier refused (down, breaker open, timeout)
  uint64_t dropped = 0;    // writes refused because the queue was full
  uint64_t cancelled = 0;  // queued writes removed by cancel_key / cancel_tag
  uint64_t queued = 0;     // writes waiting now
};

class BRISK_API RedisWriteBehind {
 public:
  RedisWriteBehind(RedisTier* tier, size_t capacity);
  ~RedisWriteBehind();
  RedisWriteBehind(const RedisWriteBehind&) = delete;
  RedisWriteBehind& operator=(const RedisWriteBehind&) = delete;

  // False when the queue is full and the write was dropped.
  bool enqueue(std::string key, std::string bytes, Duration ttl, std::vector<std::string> tags);
  void cancel_key(std::string_view key);
  void cancel_tag(std::string_view tag);
  // Waits until the queue is empty and no write is in progress; false when `timeout` passed first.
  bool flush(Duration timeout);
  WriteBehindStats stats() const;

 private:
  struct Write {
    std::string key;
    std::string bytes;
    Duration ttl{0};
    std::vector<std::string> tags;
  };
  void run();
  void wait_in_flight(std::unique_lock<std::mutex>& lock, const std::function<bool(const Write&)>& matches);

  RedisTier* const tier_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the writer waits for work
  std::condition_variable done_cv_;  // cancel / flush wait for the write in progress
  std::list<Write> queue_;
  absl::flat_hash_map<std::string, std::list<Write>::iterator> by_key_;
  const Write* in_flight_ = nullptr;  // the write being sent, owned by run()
  bool stop_ = false;
  WriteBehindStats stats_;
  std::thread thread_;
};

}  // namespace brisk::cache
