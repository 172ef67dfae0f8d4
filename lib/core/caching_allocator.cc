// CachingAllocator: the host-side bookkeeping of device memory (free lists, the cap, the counters), and the
// OUT_OF_MEMORY status the allocators return. Device-independent: the CUDA allocator (allocator_cuda.cc) is one of
// these over cudaMalloc/cudaFree, the tests run it over malloc.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "brisk/core/allocator.h"

namespace brisk {

namespace {

constexpr size_t kSmallGranularity = 512;
constexpr size_t kLargeGranularity = size_t{2} << 20;
constexpr size_t kLargeThreshold = size_t{1} << 20;  // up to here 512-byte steps, above it 2 MiB steps

size_t round_up(size_t bytes, size_t granularity) { return (bytes + granularity - 1) / granularity * granularity; }

std::string limit_text(size_t limit) { return limit == 0 ? std::string("0 (no cap)") : absl::StrCat(limit); }

}  // namespace

Status out_of_memory_error(std::string_view message) {
  Status s = absl::ResourceExhaustedError(absl::string_view(message.data(), message.size()));
  s.SetPayload(kOutOfMemoryPayload, absl::Cord("1"));
  return s;
}

bool is_out_of_memory(const Status& status) {
  return status.code() == absl::StatusCode::kResourceExhausted && status.GetPayload(kOutOfMemoryPayload).has_value();
}

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes == 0) return kSmallGranularity;  // a distinct block, as malloc(0) may give
  if (bytes <= kLargeThreshold) return round_up(bytes, kSmallGranularity);
  if (bytes > std::numeric_limits<size_t>::max() - (kLargeGranularity - 1)) return std::numeric_limits<size_t>::max();
  return round_up(bytes, kLargeGranularity);
}

struct CachingAllocator::State {
  std::unique_ptr<Backend> backend;
  std::string name;
  mutable std::mutex mu;
  // Notified whenever returning_bytes or reserved_bytes drops: an allocation that does not fit waits for those.
  std::condition_variable settled;
  // Freed blocks by size; a multimap because a forward pass frees many blocks of one size.
  struct Cached {
    void* ptr;
    void* fence;  // Backend::fence() at the free: reuse waits for it
  };
  std::multimap<size_t, Cached> cached;
  absl::flat_hash_map<void*, size_t> in_use;  // handed-out block -> its size
  DeviceMemoryStats stats;
  // Bytes on their way to or from the backend, whose calls run without `mu` (cudaMalloc and cudaFree synchronise
  // the device): blocks taken out of the cache or in-use list and not yet freed, and blocks being allocated. Both
  // count as held, so that the cap holds while they are in flight.
  size_t returning_bytes = 0;
  size_t reserved_bytes = 0;

  size_t held() const { return stats.in_use_bytes + stats.cached_bytes + returning_bytes + reserved_bytes; }

  // Whether taking `block` more bytes from the backend keeps what is held within the cap.
  bool fits(size_t block) const {
    const size_t limit = stats.limit_bytes;
    return limit == 0 || (block <= limit && held() <= limit - block);
  }

  // Empties the cache into `out` (under mu): the fences are dropped here, the blocks count as returning until
  // return_blocks() has given them to the backend.
  void take_cached(std::vector<void*>& out) {
    for (const auto& [size, block] : cached) {
      backend->drop(block.fence);
      out.push_back(block.ptr);
    }
    cached.clear();
    returning_bytes += stats.cached_bytes;
    stats.cached_bytes = 0;
  }

  // Gives `blocks` (`bytes` in all) to the backend. Called without mu; takes it at the end to settle the count.
  void return_blocks(const std::vector<void*>& blocks, size_t bytes) {
    for (void* ptr : blocks) backend->raw_free(ptr);
    if (bytes == 0) return;
    {
      std::lock_guard<std::mutex> lock(mu);
      returning_bytes -= bytes;
    }
    settled.notify_all();
  }

  void hand_out(void* ptr, size_t block, bool from_cache) {
    in_use.emplace(ptr, block);
    stats.in_use_bytes += block;
    stats.peak_in_use_bytes = std::max(stats.peak_in_use_bytes, stats.in_use_bytes);
    ++stats.allocations;
    if (from_cache) ++stats.cache_hits;
  }

  Status fail(std::string message) {
    ++stats.failures;
    return out_of_memory_error(message);
  }
};

namespace {

// Returns the whole cache of `s` to the backend, the backend calls outside the lock.
void release_all_cached(CachingAllocator::State& s, std::unique_lock<std::mutex>& lock) {
  std::vector<void*> blocks;
  const size_t bytes = s.stats.cached_bytes;
  s.take_cached(blocks);
  lock.unlock();
  s.return_blocks(blocks, bytes);
  lock.lock();
}

}  // namespace

CachingAllocator::CachingAllocator(std::unique_ptr<Backend> backend, std::string name)
    : state_(std::make_unique<State>()) {
  state_->backend = std::move(backend);
  state_->name = std::move(name);
}

CachingAllocator::~CachingAllocator() {
  if (state_->backend == nullptr) return;
  std::unique_lock<std::mutex> lock(state_->mu);
  release_all_cached(*state_, lock);
}

StatusOr<void*> CachingAllocator::allocate(size_t bytes) {
  State& s = *state_;
  const size_t block = round_size(bytes);
  std::unique_lock<std::mutex> lock(s.mu);
  if (s.backend == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(s.name, ": the allocator has no backend; expected one"));
  }
  if (block == std::numeric_limits<size_t>::max()) {
    return s.fail(absl::StrCat(s.name, ": allocating ", bytes,
                               " bytes is past the largest block size; expected at most ",
                               std::numeric_limits<size_t>::max() - (kLargeGranularity - 1), " bytes"));
  }
  for (;;) {
    // Best fit among cached blocks, but never one more than twice the request: handing a 64 MiB block to a
    // 512-byte request would keep it from the large requests it was cached for.
    if (auto it = s.cached.lower_bound(block); it != s.cached.end() && it->first - block <= block) {
      const size_t size = it->first;
      void* ptr = it->second.ptr;
      s.backend->wait(it->second.fence);
      s.cached.erase(it);
      s.stats.cached_bytes -= size;
      s.hand_out(ptr, size, /*from_cache=*/true);
      return ptr;
    }
    if (s.fits(block)) break;
    // New memory over the cap. The cache goes back first: memory held for sizes nobody asks for is the cheapest to
    // give up (the next pass re-allocates what it needs). Then memory other threads are returning or failing to
    // allocate right now, which may make room; the lock is released while they finish.
    if (!s.cached.empty()) {
      release_all_cached(s, lock);
    } else if (s.returning_bytes > 0 || s.reserved_bytes > 0) {
      s.settled.wait(lock);
    } else {
      return s.fail(absl::StrCat(s.name, ": allocating ", bytes, " bytes (a ", block, "-byte block) would hold ",
                                 s.held() + block, " bytes, over device_memory_limit ", s.stats.limit_bytes,
                                 " (in use ", s.stats.in_use_bytes,
                                 " bytes, the cache already returned); expected allocations within the limit: "
                                 "a smaller batch, or a higher device_memory_limit"));
    }
  }
  // The block is reserved against the cap while the backend allocates it without the lock.
  s.reserved_bytes += block;
  lock.unlock();
  void* ptr = s.backend->raw_allocate(block);
  lock.lock();
  if (ptr == nullptr && !s.cached.empty()) {
    // The device itself is full (other processes, fragmentation): return the cache and try once more.
    release_all_cached(s, lock);
    lock.unlock();
    ptr = s.backend->raw_allocate(block);
    lock.lock();
  }
  s.reserved_bytes -= block;
  s.settled.notify_all();
  if (ptr == nullptr) {
    return s.fail(absl::StrCat(s.name, ": allocating ", bytes, " bytes (a ", block,
                               "-byte block) failed: the device is out of memory (in use ", s.stats.in_use_bytes,
                               " bytes through brisk, the cache already returned, device_memory_limit ",
                               limit_text(s.stats.limit_bytes),
                               "); expected a smaller batch, or more free device memory (other processes may "
                               "hold it)"));
  }
  ++s.stats.backend_allocations;
  s.hand_out(ptr, block, /*from_cache=*/false);
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  auto it = s.in_use.find(ptr);
  if (it == s.in_use.end()) {
    ++s.stats.invalid_frees;  // not ours, or freed twice: freeing it again would corrupt the cache
    return;
  }
  const size_t size = it->second;
  s.in_use.erase(it);
  s.stats.in_use_bytes -= size;
  // Over a lowered cap the block goes back to the backend, so that what is held shrinks towards the cap.
  if (s.stats.limit_bytes != 0 && s.held() + size > s.stats.limit_bytes) {
    s.returning_bytes += size;
    lock.unlock();
    s.return_blocks({ptr}, size);
    return;
  }
  s.cached.emplace(size, State::Cached{ptr, s.backend->fence()});
  s.stats.cached_bytes += size;
}

void CachingAllocator::set_limit(size_t bytes) {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->stats.limit_bytes = bytes;
  if (bytes != 0 && state_->held() > bytes) release_all_cached(*state_, lock);
}

void CachingAllocator::release_cached() {
  std::unique_lock<std::mutex> lock(state_->mu);
  release_all_cached(*state_, lock);
}

DeviceMemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

}  // namespace brisk
