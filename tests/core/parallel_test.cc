// Tests of parallel_for and parallel_for_dynamic: coverage of every index, nesting, thread counts, exceptions, the ISA
// cap.
#include <catch2/catch.hpp>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "brisk/core/cpu_features.h"
#include "brisk/core/internal/contention.h"
#include "brisk/core/parallel.h"
#include "test_skip.h"

TEST_CASE("parallel_for covers every index exactly once, in chunks of at least the grain", "[core]") {
  brisk::set_num_threads(2);
  for (int64_t n : {0, 1, 7, 100, 10007}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int64_t> smallest{n};
    brisk::parallel_for(0, n, 3, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      for (int64_t seen = smallest.load(); e - b < seen && !smallest.compare_exchange_weak(seen, e - b);) {
      }
    });
    for (int64_t i = 0; i < n; ++i) REQUIRE(hits[static_cast<size_t>(i)].load() == 1);
    INFO("n " << n);
    if (n >= 6) CHECK(smallest.load() >= 3);  // below two grains it runs inline, as one chunk
  }
}

TEST_CASE("parallel_for: a worker that stalls does not hold its share, the others take it", "[core]") {
  brisk::ScopedNumThreads two(2);
  // A busy host may have made the contention gate hold this process at one thread (for 4 s at most): wait it out.
  for (int waited_ms = 0; brisk::num_threads() < 2 && waited_ms < 6000; waited_ms += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (brisk::num_threads() < 2) {
    BRISK_SKIP("the contention gate held this process at one thread for 6 s (late parallel regions: a busy host)");
  }
  // The calling thread is member 0 of the region and owns [0, 32); its first chunk stalls 200 ms. The other member
  // runs its own share, then the rest of member 0's while it sleeps: every index once, most by the other thread.
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<int>> hits(64);
  std::atomic<int64_t> by_caller{0};
  std::atomic<bool> stalled{false};
  brisk::parallel_for(0, 64, 1, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() == caller) {
      by_caller.fetch_add(e - b);
      if (!stalled.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  });
  for (size_t i = 0; i < hits.size(); ++i) REQUIRE(hits[i].load() == 1);
  // A static split would leave the caller all 32 of its share; it ran its first chunk (8) and at most a few more.
  CHECK(by_caller.load() < 32);
}

TEST_CASE("parallel_for_dynamic covers every index exactly once", "[core]") {
  brisk::set_num_threads(2);
  for (int64_t n : {0, 1, 2, 33}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    brisk::parallel_for_dynamic(0, n, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
    for (int64_t i = 0; i < n; ++i) REQUIRE(hits[static_cast<size_t>(i)].load() == 1);
  }
}

TEST_CASE("nested parallel_for runs inline", "[core]") {
  brisk::set_num_threads(2);
  std::atomic<int64_t> sum{0};
  brisk::parallel_for(0, 4, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      brisk::parallel_for(0, 10, 1, [&](int64_t b2, int64_t e2) { sum.fetch_add(e2 - b2); });
    }
  });
  CHECK(sum.load() == 40);
}

TEST_CASE("set_num_threads is reflected by num_threads", "[core]") {
  brisk::set_num_threads(1);
  CHECK(brisk::num_threads() == 1);
  brisk::set_num_threads(0);
  CHECK(brisk::num_threads() >= 1);
}

// The affinity of the calling thread, which is what sched_getaffinity(0) and so available_cpus() read.
class PinnedToOneCpu {
 public:
  PinnedToOneCpu() {
    REQUIRE(sched_getaffinity(0, sizeof(saved_), &saved_) == 0);
    int first = 0;
    while (!CPU_ISSET(first, &saved_)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
  }
  ~PinnedToOneCpu() { sched_setaffinity(0, sizeof(saved_), &saved_); }
  int saved_count() const { return CPU_COUNT(&saved_); }

 private:
  cpu_set_t saved_;
};

TEST_CASE("num_threads 0 means the CPUs of the affinity mask (taskset -c 0 gives 1)", "[core]") {
  int before = 0;
  {
    PinnedToOneCpu pinned;
    before = pinned.saved_count();
    CHECK(brisk::available_cpus() == 1);
    CHECK(brisk::threads_or_available(0) == 1);
    CHECK(brisk::threads_or_available(-3) == 1);
    CHECK(brisk::threads_or_available(5) == 5);
    brisk::set_num_threads(0);
    CHECK(brisk::num_threads() == 1);
  }
  // Back on every CPU of the saved mask (capped by a cgroup quota, if this machine runs under one).
  CHECK(brisk::available_cpus() >= 1);
  CHECK(brisk::available_cpus() <= before);
  brisk::set_num_threads(0);
  CHECK(brisk::num_threads() == std::min(brisk::available_cpus(), before));
  brisk::set_num_threads(2);
}

TEST_CASE("a cgroup v2 cpu.max quota is read as CPUs, rounded up", "[core]") {
  CHECK(*brisk::cpus_of_cgroup_cpu_max("max 100000\n") == 0);
  CHECK(*brisk::cpus_of_cgroup_cpu_max("100000 100000\n") == 1);
  CHECK(*brisk::cpus_of_cgroup_cpu_max("150000 100000") == 2);   // docker --cpus=1.5
  CHECK(*brisk::cpus_of_cgroup_cpu_max("50000 100000\n") == 1);  // half a CPU still needs one thread
  CHECK(*brisk::cpus_of_cgroup_cpu_max("400000 100000\n") == 4);
  for (const char* bad : {"", "\n", "max", "100000", "max 0", "max -1", "-5 100000", "0 100000", "1.5 100000",
                          "max 100000 7", "abc 100000", "100000 abc", " 100000 100000"}) {
    const auto r = brisk::cpus_of_cgroup_cpu_max(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("expected \"<quota|max> <period>\"") != std::string::npos);
  }
}

TEST_CASE("ScopedNumThreads overrides the count on its own thread only", "[core]") {
  brisk::set_num_threads(2);
  std::atomic<int> inside{0}, other{0}, after{0};
  std::thread t([&] {
    {
      brisk::ScopedNumThreads one(1);
      inside = brisk::num_threads();
      std::thread([&] { other = brisk::num_threads(); }).join();
      std::atomic<int> calls{0};
      brisk::parallel_for(0, 1000, 1, [&](int64_t, int64_t) { calls.fetch_add(1); });
      CHECK(calls.load() == 1);  // one worker: the whole range in one call
    }
    after = brisk::num_threads();
  });
  t.join();
  CHECK(inside.load() == 1);
  CHECK(other.load() == 2);
  CHECK(after.load() == 2);
  CHECK(brisk::num_threads() == 2);
}

TEST_CASE("an exception thrown inside a parallel region reaches the caller", "[core]") {
  brisk::set_num_threads(2);
  CHECK_THROWS_AS(brisk::parallel_for(0, 100, 1,
                                      [](int64_t b, int64_t) {
                                        if (b > 0) throw std::runtime_error("worker failed");
                                      }),
                  std::runtime_error);
  CHECK_THROWS_AS(brisk::parallel_for_dynamic(0, 10,
                                              [](int64_t i) {
                                                if (i == 7) throw std::runtime_error("item failed");
                                              }),
                  std::runtime_error);
}

TEST_CASE("the ISA cap lowers the level the kernels see", "[core]") {
  const brisk::CpuIsa previous = brisk::set_cpu_isa_cap(brisk::CpuIsa::kScalar);
  CHECK(brisk::cpu_isa() == brisk::CpuIsa::kScalar);
  brisk::set_cpu_isa_cap(previous);
  CHECK(brisk::cpu_isa() <= brisk::detected_cpu_isa());
}

TEST_CASE("the contention gate holds one thread after two late regions, longer while it persists", "[core]") {
  using brisk::internal::ContentionGate;
  constexpr int64_t kMs = 1'000'000;
  ContentionGate gate(/*late_start_ns=*/1 * kMs, /*base_hold_ns=*/250 * kMs, /*confirm_window_ns=*/100 * kMs);
  CHECK_FALSE(gate.region(0, 1 * kMs));  // started exactly at the limit: not late
  CHECK_FALSE(gate.contended(2 * kMs));
  CHECK(gate.late_regions() == 0);

  // One late region alone (a slow wake-up) holds nothing; nor does another one more than 100 ms later.
  REQUIRE(gate.region(10 * kMs, 12 * kMs));
  CHECK(gate.late_regions() == 1);
  CHECK_FALSE(gate.contended(12 * kMs));
  REQUIRE(gate.region(112 * kMs, 114 * kMs));  // 102 ms after the first
  CHECK_FALSE(gate.contended(114 * kMs));

  // A second one within 100 ms of the last: contended, for 250 ms after it.
  REQUIRE(gate.region(150 * kMs, 152 * kMs));
  CHECK(gate.late_regions() == 3);
  CHECK(gate.contended(152 * kMs));
  CHECK(gate.contended(401 * kMs));
  CHECK_FALSE(gate.contended(402 * kMs));

  // The probe after the hold is late again: the contention persists, and one late probe doubles the hold, up to 16x.
  int64_t t = 402 * kMs;
  for (int64_t expected : {500, 1000, 2000, 4000, 4000}) {
    REQUIRE(gate.region(t, t + 2 * kMs));
    CHECK(gate.hold_ns() == expected * kMs);
    t += 2 * kMs + expected * kMs;
    CHECK(gate.contended(t - 1));
    CHECK_FALSE(gate.contended(t));
  }
  // Long after the last hold ended, a new episode needs two late regions again and starts at the base hold.
  t += 10'000 * kMs;
  REQUIRE(gate.region(t, t + 3 * kMs));
  CHECK_FALSE(gate.contended(t + 3 * kMs));
  REQUIRE(gate.region(t + 20 * kMs, t + 23 * kMs));
  CHECK(gate.contended(t + 23 * kMs));
  CHECK(gate.hold_ns() == 250 * kMs);
  CHECK(gate.late_regions() == 10);
}

TEST_CASE("the contention gate ignores regions in flight when it closed, and an on-time probe ends the episode",
          "[core]") {
  using brisk::internal::ContentionGate;
  constexpr int64_t kMs = 1'000'000;
  ContentionGate gate(/*late_start_ns=*/1 * kMs, /*base_hold_ns=*/250 * kMs, /*confirm_window_ns=*/100 * kMs);
  REQUIRE(gate.region(0, 2 * kMs));
  REQUIRE(gate.region(10 * kMs, 12 * kMs));  // confirmed: held until 262 ms
  REQUIRE(gate.contended(12 * kMs));
  // Other host threads' regions, opened before or during the hold, report late after it began: counted, but the
  // hold stays 250 ms (each used to double it, to 4 s, with no probe run).
  for (int64_t opened : {5, 11, 100, 261}) REQUIRE(gate.region(opened * kMs, (opened + 3) * kMs));
  CHECK(gate.late_regions() == 6);
  CHECK(gate.hold_ns() == 250 * kMs);
  CHECK(gate.contended(261 * kMs));
  CHECK_FALSE(gate.contended(262 * kMs));

  // The probe after the hold is on time: the episode is over. One late region after it is a new episode's first,
  // which holds nothing on its own (it used to count as persisting contention and hold 500 ms at once).
  CHECK_FALSE(gate.region(262 * kMs, 262 * kMs + 100'000));
  REQUIRE(gate.region(300 * kMs, 303 * kMs));
  CHECK_FALSE(gate.contended(303 * kMs));
  CHECK(gate.hold_ns() == 250 * kMs);
  REQUIRE(gate.region(350 * kMs, 352 * kMs));  // its second within 100 ms: contended, at the base hold
  CHECK(gate.contended(352 * kMs));
  CHECK(gate.hold_ns() == 250 * kMs);
}

TEST_CASE("compute shares never hold more threads than the process's budget", "[core]") {
  brisk::set_compute_budget(3);
  REQUIRE(brisk::compute_budget() == 3);
  REQUIRE(brisk::compute_threads_in_use() == 0);
  std::atomic<int> over{0}, empty{0}, wrong_count{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 6; ++c) {
    callers.emplace_back([&, c] {
      for (int i = 0; i < 50; ++i) {
        const brisk::ComputeShare share(1 + (c + i) % 3);  // wants 1, 2 or 3
        if (share.threads() < 1) empty.fetch_add(1);
        if (brisk::compute_threads_in_use() > 3) over.fetch_add(1);
        if (brisk::num_threads() != share.threads() && brisk::num_threads() != 1) wrong_count.fetch_add(1);
        std::atomic<int64_t> sum{0};
        brisk::parallel_for(0, 64, 1, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
        if (sum.load() != 64) wrong_count.fetch_add(1);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  CHECK(over.load() == 0);
  CHECK(empty.load() == 0);
  CHECK(wrong_count.load() == 0);
  CHECK(brisk::compute_threads_peak() <= 3);
  CHECK(brisk::compute_threads_peak() >= 1);
  CHECK(brisk::compute_threads_in_use() == 0);

  {  // a share takes what is free, at least one; a nested share takes nothing
    const brisk::ComputeShare outer(2);
    CHECK(outer.threads() == 2);
    {
      const brisk::ComputeShare nested(3);
      CHECK(nested.threads() == 2);
      CHECK(brisk::compute_threads_in_use() == 2);
    }
    int other = 0;
    std::thread([&] {
      const brisk::ComputeShare rest(3);  // one of three is free
      other = rest.threads();
    }).join();
    CHECK(other == 1);
    CHECK(brisk::compute_threads_in_use() == 2);
  }
  CHECK(brisk::compute_threads_in_use() == 0);
  brisk::set_compute_budget(0);
  CHECK(brisk::compute_budget() == brisk::available_cpus());
}
