// CUDA device memory for Tensor: one process-wide caching allocator, "cuda:0", over cudaMalloc/cudaFree. Compiled
// only when the build has CUDA.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "brisk/core/allocator.h"

namespace brisk {

namespace {

class CudaBackend final : public CachingAllocator::Backend {
 public:
  // Called without the allocator's lock, from any thread: cudaMalloc and cudaFree synchronise the device, and the
  // error they leave is the calling thread's own.
  void* raw_allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // clear the error, so that the next CUDA call does not report it
      return nullptr;
    }
    return p;
  }
  void raw_free(void* ptr) override {
    if (cudaFree(ptr) != cudaSuccess) cudaGetLastError();
  }
  // Events are pooled: creating one costs more than recording it. Called with the allocator's lock held.
  void* fence() override {
    cudaEvent_t event = nullptr;
    if (!events_.empty()) {
      event = events_.back();
      events_.pop_back();
    } else if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      cudaDeviceSynchronize();  // no event: order by waiting for everything instead
      return nullptr;
    }
    if (cudaEventRecord(event, cudaStreamPerThread) != cudaSuccess) {
      cudaGetLastError();
      cudaStreamSynchronize(cudaStreamPerThread);
    }
    return event;
  }
  void wait(void* fence) override {
    if (fence == nullptr) return;
    auto event = static_cast<cudaEvent_t>(fence);
    if (cudaStreamWaitEvent(cudaStreamPerThread, event, 0) != cudaSuccess) {
      cudaGetLastError();
      cudaEventSynchronize(event);
    }
    events_.push_back(event);
  }
  void drop(void* fence) override {
    if (fence != nullptr) events_.push_back(static_cast<cudaEvent_t>(fence));
  }

 private:
  std::vector<cudaEvent_t> events_;
};

// Leaked on purpose: static objects destroyed at exit may still free device memory into it, after a function-local
// static allocator would be gone. The driver reclaims everything when the process ends.
CachingAllocator& cuda_allocator() {
  static auto* allocator = new CachingAllocator(std::make_unique<CudaBackend>(), "cuda:0");
  return *allocator;
}

struct CudaProbe {
  int count = 0;
  std::string error;  // why cudaGetDeviceCount failed, if it did
};

// Once: the visible devices do not change during a process (CUDA_VISIBLE_DEVICES is read when CUDA starts).
const CudaProbe& cuda_probe() {
  static const CudaProbe probe = [] {
    CudaProbe p;
    const cudaError_t err = cudaGetDeviceCount(&p.count);
    if (err != cudaSuccess) {
      p.error = cudaGetErrorString(err);
      p.count = 0;
      cudaGetLastError();  // clear the sticky "no device" error
    }
    return p;
  }();
  return probe;
}

}  // namespace

StatusOr<void*> cuda_allocate(size_t bytes) {
  const CudaProbe& probe = cuda_probe();
  if (probe.count == 0) {
    return absl::NotFoundError(absl::StrCat("cuda:0: no CUDA device is visible (cuda_device_count() is 0",
                                            probe.error.empty() ? "" : ": ", probe.error,
                                            "); expected a machine with an NVIDIA GPU"));
  }
  return cuda_allocator().allocate(bytes);
}

void cuda_deallocate(void* ptr) { cuda_allocator().deallocate(ptr); }

int cuda_device_count_impl() { return cuda_probe().count; }

Status cuda_set_memory_limit(size_t bytes) {
  cuda_allocator().set_limit(bytes);
  return absl::OkStatus();
}

DeviceMemoryStats cuda_memory_stats() { return cuda_allocator().stats(); }

void cuda_release_cached() { cuda_allocator().release_cached(); }

}  // namespace brisk
