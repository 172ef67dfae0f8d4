// Parallel-for over an index range on brisk's worker threads. brisk uses one OpenMP thread team, the same one
// oneDNN runs on, so kernels and GEMMs never oversubscribe the cores.
//
//   brisk::set_num_threads(2);
//   brisk::parallel_for(0, rows, /*grain=*/16, [&](int64_t begin, int64_t end) { ... });
//
// Thread safety: parallel_for may be called from several threads at once; each call runs its own team.
// set_num_threads sets the process-wide default; ScopedNumThreads overrides it for the calling thread only.
// An exception thrown by fn is rethrown on the calling thread after the team has finished.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk {

// The CPUs this process may use, at least 1: the calling thread's affinity mask (sched_getaffinity: taskset,
// cpusets, a container's --cpuset-cpus), capped by the CPU quota of this process's cgroup and of every cgroup above
// it (cgroup v2's cpu.max, else v1's cpu.cfs_quota_us / cpu.cfs_period_us; rounded up: a container's --cpus=1.5
// gives 2). What set_num_threads(0) and RuntimeOptions::num_threads = 0 mean. Reads /proc and /sys on each call.
BRISK_API int available_cpus();
// A thread count as options give it: n when positive; 0 (or less) means available_cpus().
BRISK_API int threads_or_available(int n);

// The CPUs a cgroup v2 `cpu.max` file allows: "max 100000" (no quota) gives 0; "150000 100000" gives 2 (quota /
// period, rounded up). Text that is not "<quota|max> <period>" with a positive period is an error naming what was
// found.
BRISK_API StatusOr<int> cpus_of_cgroup_cpu_max(std::string_view cpu_max);

// Sets the worker count used by parallel_for and by oneDNN; n <= 0 means available_cpus().
BRISK_API void set_num_threads(int n);
// The worker count for calls made from this thread: 1 while the process is contended, i.e. for 250 ms (up to 4 s
// while it persists) after a second parallel region within 100 ms whose workers started more than 1 ms late because
// other work held their CPUs (a barrier would wait for them; see brisk/core/internal/contention.h), else the
// ScopedNumThreads or set_num_threads count.
BRISK_API int num_threads();
// Parallel regions whose workers started late (two within 100 ms make the process contended), since the process
// started.
BRISK_API uint64_t late_parallel_regions();

// Sets this thread's worker count (for parallel_for and oneDNN) for the guard's lifetime; n <= 0 keeps the
// current count. Lets two runtimes with different thread counts share a process.
class BRISK_API ScopedNumThreads {
 public:
  explicit ScopedNumThreads(int n);
  ~ScopedNumThreads();
  ScopedNumThreads(const ScopedNumThreads&) = delete;
  ScopedNumThreads& operator=(const ScopedNumThreads&) = delete;

 private:
  int previous_;
  int previous_omp_;
};

// One compute budget per process. Every CPU forward pass of brisk's encoder, in every Runtime of the process (a
// primary, its fallback, any other), runs inside a ComputeShare, which takes its threads from this budget: together
// they never run more compute threads than it holds, whatever each one's num_threads says. A share must not wait on
// other work while it is held (it would hold the budget).
//
//   brisk::set_compute_budget(0);   // the default: available_cpus()
//   { brisk::ComputeShare share(4); /* share.threads() threads: 1..4, no more than the budget has free */ }
//
// Thread safety: all of these may be called from any thread.
// Sets the budget; 0: available_cpus(). Shares already taken keep their threads; the peak restarts.
BRISK_API void set_compute_budget(int threads);
BRISK_API int compute_budget();
// Threads held by ComputeShares now, and the most held at once since the process started or the budget was set.
BRISK_API int compute_threads_in_use();
BRISK_API int compute_threads_peak();

// A forward pass's threads from the process's compute budget. Waits until at least one is free, then takes
// min(want, free) (want <= 0: num_threads()) and runs this thread's parallel work on them (as ScopedNumThreads
// does) until it is destroyed. A share taken on a thread that already holds one takes nothing and runs on the
// outer share's threads.
class BRISK_API ComputeShare {
 public:
  explicit ComputeShare(int want);
  ~ComputeShare();
  ComputeShare(const ComputeShare&) = delete;
  ComputeShare& operator=(const ComputeShare&) = delete;
  int threads() const { return threads_; }

 private:
  int taken_ = 0;  // from the budget; 0 for a nested share
  int threads_ = 0;
  ScopedNumThreads scope_;
};

// Splits [begin, end) into contiguous chunks of at least `grain` indices and calls fn(chunk_begin, chunk_end)
// on each, in parallel, each index exactly once. Each worker starts on its own even share of the range, front to
// back in a few chunks, and a worker done early takes chunks from the others' shares, so a worker that is slowed
// or descheduled does not hold the call's end. Runs inline when the range is smaller than two grains or when
// called from inside another parallel region.
BRISK_API void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Calls fn(i) for each i in [begin, end), handing indices out one at a time to whichever worker is free: for
// items of very different cost (attention over sequences of mixed lengths). Inline from a parallel region.
BRISK_API void parallel_for_dynamic(int64_t begin, int64_t end, const std::function<void(int64_t)>& fn);

}  // namespace brisk
