#include "brisk/core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
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

}  // namespace

void set_num_threads(int n) {
  const int threads = n <= 0 ? hardware_threads() : n;
  g_num_threads.store(threads, std::memory_order_relaxed);
  omp_set_num_threads(threads);
}

int num_threads() {
  const int n = g_num_threads.load(std::memory_order_relaxed);
  return n <= 0 ? std::min(hardware_threads(), omp_get_max_threads()) : n;
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
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t chunk_begin = begin + n * t / nt;
    const int64_t chunk_end = begin + n * (t + 1) / nt;
    if (chunk_begin < chunk_end) fn(chunk_begin, chunk_end);
  }
}

void parallel_for_dynamic(int64_t begin, int64_t end, const std::function<void(int64_t)>& fn) {
  if (end <= begin) return;
  const int threads = static_cast<int>(std::min<int64_t>(num_threads(), end - begin));
  if (threads <= 1 || omp_in_parallel()) {
    for (int64_t i = begin; i < end; ++i) fn(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t i = begin; i < end; ++i) fn(i);
}

}  // namespace brisk
