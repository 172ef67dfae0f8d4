// parallel_for on brisk's one OpenMP thread team: thread counts (global and scoped), static and dynamic schedules.
#include "brisk/core/parallel.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <chrono>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "brisk/core/internal/bounded_input.h"
#include "brisk/core/internal/contention.h"
#include "brisk/core/internal/reproducible.h"

namespace brisk {
namespace {

// A /proc or /sys file's text; "" when it is missing or unreadable (no such cgroup file: no quota there).
std::string file_text(const std::filesystem::path& path) {
  StatusOr<std::string> text = read_text_file_bounded(path.string(), 1 << 16, "cgroup file");
  return text.ok() ? *std::move(text) : std::string();
}

// This process's cgroup, from the text of /proc/self/cgroup: v2's ("0::/path") or v1's cpu controller's
// ("4:cpu,cpuacct:/path"); "" when there is none.
std::string own_cgroup(const std::string& proc_self_cgroup, bool v2) {
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::vector<absl::string_view> controllers =
        absl::StrSplit(absl::string_view(line).substr(first + 1, second - first - 1), ',');
    const bool wanted =
        v2 ? line.rfind("0::", 0) == 0 : std::find(controllers.begin(), controllers.end(), "cpu") != controllers.end();
    if (wanted) return line.substr(second + 1);
  }
  return "";
}

// The quota of one cgroup folder in CPUs, 0 when it has none: cgroup v2's cpu.max, or v1's cpu.cfs_quota_us
// (-1: none) over cpu.cfs_period_us, read as the same "<quota|max> <period>".
int folder_quota_cpus(const std::filesystem::path& dir, bool v2) {
  std::string text = file_text(dir / "cpu.max");
  if (!v2) {
    std::string quota = file_text(dir / "cpu.cfs_quota_us"), period = file_text(dir / "cpu.cfs_period_us");
    while (!quota.empty() && quota.back() == '\n') quota.pop_back();
    text = quota.empty() || period.empty() ? "" : (quota == "-1" ? "max" : quota) + " " + period;
  }
  if (text.empty()) return 0;
  const StatusOr<int> cpus = cpus_of_cgroup_cpu_max(text);
  return cpus.ok() ? *cpus : 0;
}

// The smallest quota of this process's cgroup and the cgroups above it, in CPUs; 0 when none has one. The walk
// starts at the mount's root, which is a container's own cgroup when it has a cgroup namespace. cgroup v2 first
// (/sys/fs/cgroup), else v1's cpu controller (/sys/fs/cgroup/cpu).
int cgroup_quota_cpus() {
  const std::string proc_self_cgroup = file_text("/proc/self/cgroup");
  for (const bool v2 : {true, false}) {
    const std::string own = own_cgroup(proc_self_cgroup, v2);
    if (own.empty() || own[0] != '/') continue;
    std::filesystem::path dir = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu";
    int cpus = folder_quota_cpus(dir, v2);
    for (const auto& part : std::filesystem::path(own).relative_path()) {
      if (part.empty() || part == "..") break;
      dir /= part;
      const int quota = folder_quota_cpus(dir, v2);
      if (quota > 0) cpus = cpus == 0 ? quota : std::min(cpus, quota);
    }
    if (cpus > 0) return cpus;
  }
  return 0;
}

// Cached for parallel_for's hot path: available_cpus() reads /proc and /sys.
int default_threads() {
  static const int n = available_cpus();
  return n;
}

std::atomic<int> g_num_threads{0};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Late: a member that starts 1 ms after its region opened waited for a CPU (a wake-up from sleep takes tens of
// microseconds on bare metal, now and then more on a virtual CPU). One thread for 250 ms after a second late region
// within 100 ms of the first, up to 4 s while the contention persists.
internal::ContentionGate& contention_gate() {
  static internal::ContentionGate gate(/*late_start_ns=*/1'000'000, /*base_hold_ns=*/250'000'000,
                                       /*confirm_window_ns=*/100'000'000);
  return gate;
}

// The latest start of a region's members, for the gate.
class MemberStarts {
 public:
  MemberStarts() : opened_(steady_ns()) {}
  void started() {
    const int64_t now = steady_ns();
    int64_t seen = latest_.load(std::memory_order_relaxed);
    while (now > seen && !latest_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }
  void report() const { contention_gate().region(opened_, latest_.load(std::memory_order_relaxed)); }

 private:
  const int64_t opened_;
  std::atomic<int64_t> latest_{0};
};
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

StatusOr<int> cpus_of_cgroup_cpu_max(std::string_view cpu_max) {
  const auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(absl::StrCat("cgroup cpu.max is \"", shown_text(cpu_max, 64), "\" (", why,
                                                   "); expected \"<quota|max> <period>\", e.g. \"150000 100000\""));
  };
  std::string_view text = cpu_max;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return bad("no period");
  const std::string_view quota_text = text.substr(0, space);
  const std::string_view period_text = text.substr(space + 1);
  const auto number = [](std::string_view t, int64_t& v) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return ec == std::errc() && end == t.data() + t.size() && !t.empty();
  };
  int64_t period = 0;
  if (!number(period_text, period) || period <= 0) return bad("the period is not a positive integer");
  if (quota_text == "max") return 0;
  int64_t quota = 0;
  if (!number(quota_text, quota) || quota <= 0) return bad("the quota is neither \"max\" nor a positive integer");
  const int64_t cpus = quota / period + (quota % period != 0 ? 1 : 0);
  return static_cast<int>(std::min<int64_t>(cpus, 1 << 20));
}

int available_cpus() {
  const unsigned hw = std::thread::hardware_concurrency();
  int cpus = hw == 0 ? 1 : static_cast<int>(hw);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0 && CPU_COUNT(&mask) > 0) cpus = CPU_COUNT(&mask);
  if (const int quota = cgroup_quota_cpus(); quota > 0) cpus = std::min(cpus, quota);
  return std::max(cpus, 1);
}

int threads_or_available(int n) { return n > 0 ? n : available_cpus(); }

void set_num_threads(int n) {
  const int threads = threads_or_available(n);
  g_num_threads.store(threads, std::memory_order_relaxed);
  omp_set_num_threads(threads);
}

int num_threads() {
  if (contention_gate().contended(steady_ns())) return 1;
  if (t_num_threads > 0) return t_num_threads;
  const int n = g_num_threads.load(std::memory_order_relaxed);
  return n <= 0 ? std::min(default_threads(), omp_get_max_threads()) : n;
}

uint64_t late_parallel_regions() { return contention_gate().late_regions(); }

ScopedNumThreads::ScopedNumThreads(int n) : previous_(t_num_threads), previous_omp_(omp_get_max_threads()) {
  if (n <= 0) n = num_threads();
  t_num_threads = n;
  omp_set_num_threads(n);  // oneDNN sizes its teams from the calling thread's setting
}

ScopedNumThreads::~ScopedNumThreads() {
  t_num_threads = previous_;
  omp_set_num_threads(previous_omp_);
}

namespace {

class Budget {
 public:
  static Budget& get() {
    static Budget* budget = new Budget();  // never destroyed: shares may end during exit
    return *budget;
  }
  void set(int threads) {
    std::lock_guard<std::mutex> lock(mu_);
    total_ = threads_or_available(threads);
    peak_ = in_use_;
    freed_.notify_all();
  }
  int take(int want) {
    std::unique_lock<std::mutex> lock(mu_);
    freed_.wait(lock, [&] { return in_use_ < total_; });
    const int got = std::min(std::max(want, 1), total_ - in_use_);
    in_use_ += got;
    peak_ = std::max(peak_, in_use_);
    return got;
  }
  void give_back(int n) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_use_ -= n;
    }
    freed_.notify_all();
  }
  int total() const {
    std::lock_guard<std::mutex> lock(mu_);
    return total_;
  }
  int in_use() const {
    std::lock_guard<std::mutex> lock(mu_);
    return in_use_;
  }
  int peak() const {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_;
  }

 private:
  Budget() : total_(available_cpus()) {}
  mutable std::mutex mu_;
  std::condition_variable freed_;
  int total_;
  int in_use_ = 0;
  int peak_ = 0;
};

thread_local int t_share_threads = 0;  // the threads of the ComputeShare this thread holds; 0: none

}  // namespace

void set_compute_budget(int threads) { Budget::get().set(threads); }
int compute_budget() { return Budget::get().total(); }
int compute_threads_in_use() { return Budget::get().in_use(); }
int compute_threads_peak() { return Budget::get().peak(); }

ComputeShare::ComputeShare(int want)
    : taken_(t_share_threads > 0 ? 0 : Budget::get().take(want <= 0 ? num_threads() : want)),
      threads_(taken_ > 0 ? taken_ : t_share_threads),
      scope_(threads_) {
  if (taken_ > 0) t_share_threads = taken_;
}

ComputeShare::~ComputeShare() {
  if (taken_ == 0) return;
  t_share_threads = 0;
  Budget::get().give_back(taken_);
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
  // Member t owns the t-th of `threads` even, contiguous shares and takes it front to back, a piece (a quarter of
  // it, or fewer pieces so that each holds at least a grain) at a time; a member done with its own share then takes
  // pieces from the others' fronts. With equal members each runs just its share, in order, as a static split does; a
  // member that is descheduled (a busy host) or slowed no longer holds the region's end, and a share whose member
  // never started (a team smaller than asked) is run by the others.
  constexpr int64_t kPiecesPerShare = 4;
  struct alignas(64) Share {  // one cache line each: the members claim pieces concurrently
    std::atomic<int64_t> next{0};
    int64_t begin = 0, size = 0, pieces = 1;
    int64_t piece_begin(int64_t j) const { return begin + size * j / pieces; }
  };
  // On the stack for the usual team sizes: no allocation per region on this hot path.
  constexpr int kStackShares = 16;
  Share stack_shares[kStackShares];
  std::unique_ptr<Share[]> heap_shares;
  Share* shares = stack_shares;
  if (threads > kStackShares) {
    heap_shares = std::make_unique<Share[]>(static_cast<size_t>(threads));
    shares = heap_shares.get();
  }
  for (int64_t t = 0; t < threads; ++t) {
    Share& s = shares[t];
    s.begin = begin + n * t / threads;
    s.size = begin + n * (t + 1) / threads - s.begin;  // >= grain: threads <= n / grain
    s.pieces = std::clamp<int64_t>(s.size / grain, 1, kPiecesPerShare);
  }
  RegionErrors errors;
  MemberStarts starts;
  const bool reproducible = internal::reproducible_arithmetic();  // the caller's, for every member
#pragma omp parallel num_threads(threads)
  {
    starts.started();
    const internal::ReproducibleScope scope(reproducible);
    const int t = omp_get_thread_num();
    for (int k = 0; k < threads; ++k) {
      Share& s = shares[(t + k) % threads];
      for (int64_t j = s.next.fetch_add(1, std::memory_order_relaxed); j < s.pieces;
           j = s.next.fetch_add(1, std::memory_order_relaxed)) {
        errors.run([&] { fn(s.piece_begin(j), s.piece_begin(j + 1)); });
      }
    }
  }
  starts.report();
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
  MemberStarts starts;
  const bool reproducible = internal::reproducible_arithmetic();
#pragma omp parallel num_threads(threads)
  {
    starts.started();
    const internal::ReproducibleScope scope(reproducible);
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t i = begin; i < end; ++i) errors.run([&] { fn(i); });
  }
  starts.report();
  errors.rethrow();
}

}  // namespace brisk
