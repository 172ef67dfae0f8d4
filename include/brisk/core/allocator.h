// Device memory allocation behind Tensor and the kernels' scratch. CPU memory is 64-byte aligned, straight from the
// C library. CUDA memory goes through one caching allocator per device: freed blocks are kept and reused (a
// forward pass allocates the same sizes every time, and cudaMalloc/cudaFree synchronise the device), and the
// memory it holds from the driver can be capped.
//
//   BRISK_ASSIGN_OR_RETURN(void* p, allocate(Device::kCUDA, bytes));   // OUT_OF_MEMORY past the cap
//   deallocate(Device::kCUDA, p);
//   set_device_memory_limit(Device::kCUDA, size_t{2} << 30);            // RuntimeOptions::device_memory_limit
//   DeviceMemoryStats s = device_memory_stats(Device::kCUDA);          // in_use_bytes back to 0 when all is freed
//
// An allocation that would take the memory held (in use plus cached) past the cap first returns every cached
// block to the driver; if it still does not fit it fails with an OUT_OF_MEMORY status (is_out_of_memory(); the
// C API's BRISK_OUT_OF_MEMORY) that names the request, the cap and what is in use. It never crashes, and a
// cudaMalloc failure below the cap reads the same way.
//
// A freed block may be handed out again before kernels still using it have finished: the free records an event on
// the freeing thread's stream and the next user's stream waits for it (Backend::fence), so executors on different
// streams never share a block in flight. Memory freed by host code must not be in use by a stream it did not
// queue work on.
//
// Without CUDA in the build, allocate(kCUDA) and set_device_memory_limit(kCUDA) are UNIMPLEMENTED naming
// BRISK_WITH_CUDA; with CUDA but no visible GPU, allocate(kCUDA) is NOT_FOUND naming cuda:0. There is one CUDA
// allocator, "cuda:0", for the process.
//
// Thread safety: all functions may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

BRISK_API StatusOr<void*> allocate(Device device, size_t bytes);
// nullptr is ignored; so is a pointer the device's allocator did not hand out (counted in invalid_frees).
BRISK_API void deallocate(Device device, void* ptr);

// Number of CUDA devices visible to this process; 0 in a build without CUDA or on a machine without a GPU.
BRISK_API int cuda_device_count();

// The counters of a device's caching allocator (all zero for the CPU, which does not cache).
struct DeviceMemoryStats {
  size_t in_use_bytes = 0;  // handed out and not yet freed (rounded block sizes)
  size_t cached_bytes = 0;  // freed blocks kept for reuse
  size_t peak_in_use_bytes = 0;
  size_t limit_bytes = 0;            // 0: no cap
  uint64_t allocations = 0;          // allocate() calls that succeeded
  uint64_t cache_hits = 0;           // of those, served from a cached block
  uint64_t failures = 0;             // OUT_OF_MEMORY results
  uint64_t backend_allocations = 0;  // blocks taken from the driver (cudaMalloc calls that succeeded)
  uint64_t invalid_frees = 0;        // deallocate() of a pointer not handed out (or freed twice): ignored
};

// Caps the memory the device's allocator holds (in use plus cached); 0 removes the cap. The cap is per process
// and device: the last call wins. Lowering it below what is held returns the cache to the driver at once, and
// fails nothing already allocated; later allocations that need new memory fail until enough is freed (blocks
// freed while over the cap go back to the driver, not to the cache). The CPU has no cap (INVALID_ARGUMENT).
BRISK_API Status set_device_memory_limit(Device device, size_t bytes);
BRISK_API DeviceMemoryStats device_memory_stats(Device device);
// Returns the device's cached blocks to the driver.
BRISK_API void release_cached_device_memory(Device device);

// The status of an allocation past the cap or past what the device has: RESOURCE_EXHAUSTED carrying the payload
// kOutOfMemoryPayload, so that callers (the C API) can tell it from an overloaded queue. The payload survives
// copies and StatusOr; a status rebuilt from the message alone loses it.
inline constexpr char kOutOfMemoryPayload[] = "brisk/out_of_memory";
BRISK_API Status out_of_memory_error(std::string_view message);
BRISK_API bool is_out_of_memory(const Status& status);

// The host-side logic of the caching allocator, unit-testable over any backing allocator: size rounding, the
// free lists, the cap and the counters. The CUDA allocator is one of these over cudaMalloc/cudaFree.
//
// Reuse: a request takes the smallest cached block of at least its rounded size, but only one at most twice that
// size (a 512-byte request never pins a 64 MiB block); otherwise it takes a new block of exactly the rounded size
// from the backend. Blocks are never split or merged.
//
// Locking: raw_allocate and raw_free run without the allocator's lock, because cudaMalloc and cudaFree synchronise
// the device: under the lock every other thread's allocate and deallocate, cache hits included, would wait for the
// whole device too. Bytes on their way to or from the backend count against the cap until the call returns, and an
// allocation that does not fit waits for those calls to finish before it fails, so the cap and the counters read
// as if the calls were made under the lock. fence, wait and drop are cheap (an event) and run under the lock.
class BRISK_API CachingAllocator {
 public:
  struct Backend {
    virtual ~Backend() = default;
    // nullptr when the device is out of memory. raw_allocate and raw_free are called without the allocator's lock,
    // from any thread, concurrently with each other and with fence/wait/drop: they must be thread-safe.
    virtual void* raw_allocate(size_t bytes) = 0;
    virtual void raw_free(void* ptr) = 0;
    // Stream order. A block is freed when its owner has queued its last use, which may not have run yet: fence()
    // marks that point on the freeing thread's queue (CUDA: an event on its stream), and whoever takes the block
    // from the cache first makes its own queue wait(fence) (cudaStreamWaitEvent), so that a block freed by one
    // executor is never written by another before the first is done with it. drop(fence) discards a fence whose
    // block went back to the backend (cudaFree waits for the device). A host backend needs none of this. These three
    // are called with the allocator's lock held, one at a time.
    virtual void* fence() { return nullptr; }
    virtual void wait(void* fence) { (void)fence; }
    virtual void drop(void* fence) { (void)fence; }
  };

  // `name` appears in error messages ("cuda:0").
  CachingAllocator(std::unique_ptr<Backend> backend, std::string name);
  ~CachingAllocator();  // returns every cached block; blocks still in use are a caller bug and are leaked
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (0 included: a distinct 512-byte block), or OUT_OF_MEMORY.
  StatusOr<void*> allocate(size_t bytes);
  // nullptr is ignored; a pointer not handed out by allocate() (or already freed) is ignored and counted.
  void deallocate(void* ptr);
  void set_limit(size_t bytes);
  void release_cached();
  DeviceMemoryStats stats() const;

  // Block size for a request: 512-byte granularity up to 1 MiB, 2 MiB granularity above (so that batches of
  // slightly different sizes reuse one block). 0 rounds to 512; a size that cannot be rounded without
  // overflowing gives SIZE_MAX, which no allocation satisfies.
  static size_t round_size(size_t bytes);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace brisk
