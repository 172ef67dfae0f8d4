// parallel_for on brisk's one OpenMP thread team: thread counts (global and scoped), static and dynamic schedules.
#include "brisk/core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace brisk {
namespace {

// Cached: glibc answers hardware_concurrency() by reading /sys on every call.
int hardware_threads() {
  static const int n = [] {
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
  }();
  return n;
}

std::atomic<int> g_num_threads{0};
thread_local int t_num_threads = 0;  // a ScopedNumThreads override on this thread; 0 when none

// An exception must not leave an OpenMP region (that terminates the process): the first one is kept and
// rethrown on the calling thread once the region has ended.
class RegionErrors {
 public:
  template <typename F>
  void run(F&& f) {
    try {
      f();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!first_) first_ = std::current_exception();
    }
  }
  void rethrow() {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr first_;
};

}  // namespace

void set_num_threads(int n) {
  const int threads = n <= 0 ? hardware_threads() : n;
  g_num_threads.store(threads, std::memory_order_relaxed);
  omp_set_num_threads(threads);
}

int num_threads() {
  if (t_num_threads > 0) return t_num_threads;
  const int n = g_num_threads.load(std::memory_order_relaxed);
  return n <= 0 ? std::min(hardware_threads(), omp_get_max_threads()) : n;
}

ScopedNumThreads::ScopedNumThreads(int n) : previous_(t_num_threads), previous_omp_(omp_get_max_threads()) {
  if (n <= 0) n = num_threads();
  t_num_threads = n;
  omp_set_num_threads(n);  // oneDNN sizes its teams from the calling thread's setting
}

ScopedNumThreads::~ScopedNumThreads() {
  t_num_threads = previous_;
  omp_set_num_threads(previous_omp_);
}

void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t n = end - begin;
  const int threads = static_cast<int>(std::min<int64_t>(num_threads(), n / grain));
  if (threads <= 1 || omp_in_parallel()) {
    fn(begin, end);
    return;
  }
  RegionErrors errors;
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t chunk_begin = begin + n * t / nt;
    const int64_t chunk_end = begin + n * (t + 1) / nt;
    if (chunk_begin < chunk_end) errors.run([&] { fn(chunk_begin, chunk_end); });
  }
  errors.rethrow();
}

void parallel_for_dynamic(int64_t begin, int64_t end, const std::function<void(int64_t)>& fn) {
  if (end <= begin) return;
  const int threads = static_cast<int>(std::min<int64_t>(num_threads(), end - begin));
  if (threads <= 1 || omp_in_parallel()) {
    for (int64_t i = begin; i < end; ++i) fn(i);
    return;
  }
  RegionErrors errors;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t i = begin; i < end; ++i) errors.run([&] { fn(i); });
  errors.rethrow();
}

}  // namespace brisk
