// Tests of parallel_for and parallel_for_dynamic: coverage of every index, nesting, thread counts, exceptions, the ISA
// cap.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "brisk/core/cpu_features.h"
#include "brisk/core/parallel.h"

TEST_CASE("parallel_for covers every index exactly once", "[core]") {
  brisk::set_num_threads(2);
  for (int64_t n : {0, 1, 7, 100, 10007}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    brisk::parallel_for(0, n, 3, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) REQUIRE(hits[static_cast<size_t>(i)].load() == 1);
  }
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
