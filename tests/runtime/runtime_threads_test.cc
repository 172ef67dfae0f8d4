// The runtime's compute threads in a host process: two runtimes share the process's compute budget; a host that
// uses OpenMP itself keeps its settings, and brisk called from inside the host's own parallel regions gives the same
// embeddings.
#include <catch2/catch.hpp>
#include <omp.h>

#include <atomic>
#include <cmath>
#include <string_view>
#include <thread>
#include <vector>

#include "brisk/core/parallel.h"
#include "runtime/runtime_test_util.h"
#include "test_skip.h"
#include "test_util.h"

using namespace brisk;

TEST_CASE("a host's OpenMP settings and its own parallel regions survive brisk's calls", "[runtime]") {
#if defined(__SANITIZE_THREAD__)
  BRISK_SKIP("libgomp is not built for ThreadSanitizer: a host OpenMP region would report its own internals");
#endif
  RuntimeOptions opts = testing::uncached_runtime_options();
  opts.num_threads = 2;
  const std::unique_ptr<Runtime> rt = testing::make_runtime(opts);
  const std::vector<std::string_view> texts = {"reset my password", "where is my parcel", "cancel the order",
                                               "open a savings account"};
  std::vector<std::vector<float>> alone;
  for (std::string_view t : texts) alone.push_back(testing::embed_one(*rt, t));

  const int host_before = omp_get_max_threads();
  omp_set_num_threads(3);  // the host's own setting, for its own regions
  const int host_dynamic = omp_get_dynamic();
  for (std::string_view t : texts) (void)testing::embed_one(*rt, t);
  CHECK(omp_get_max_threads() == 3);
  CHECK(omp_get_dynamic() == host_dynamic);

  // brisk inside the host's parallel region: each call runs on its calling thread, and the host's team is intact.
  std::vector<std::vector<float>> inside(texts.size());
  std::vector<int> team_sizes(texts.size());
#pragma omp parallel for num_threads(2) schedule(static, 1)
  for (int i = 0; i < static_cast<int>(texts.size()); ++i) {
    auto e = rt->embed(std::span<const std::string_view>(&texts[static_cast<size_t>(i)], 1));
    if (e.ok()) inside[static_cast<size_t>(i)] = std::move(*e);
    team_sizes[static_cast<size_t>(i)] = omp_get_num_threads();
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    REQUIRE(inside[i].size() == alone[i].size());
    for (size_t j = 0; j < alone[i].size(); ++j) CHECK(inside[i][j] == Approx(alone[i][j]).margin(1e-5));
    CHECK(team_sizes[i] == 2);
  }
  CHECK(omp_get_max_threads() == 3);
  omp_set_num_threads(host_before);
}

TEST_CASE("two runtimes under load never run more compute threads than the process's budget", "[runtime]") {
  const int threads = testing::compute_threads();
  set_compute_budget(threads);
  RuntimeOptions opts = testing::uncached_runtime_options();
  opts.num_threads = threads;  // each runtime alone would take the whole budget
  const std::unique_ptr<Runtime> a = testing::make_runtime(opts);
  const std::unique_ptr<Runtime> b = testing::make_runtime(opts);
  const std::vector<float> expected = testing::embed_one(*a, "where is my parcel");
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      const Runtime& rt = c % 2 == 0 ? *a : *b;
      for (int i = 0; i < 10; ++i) {
        const std::string_view text = "where is my parcel";
        auto e = rt.embed(std::span<const std::string_view>(&text, 1));
        if (!e.ok() || e->size() != expected.size()) {
          failures.fetch_add(1);
          continue;
        }
        for (size_t j = 0; j < expected.size(); ++j) {
          if (std::abs((*e)[j] - expected[j]) > 1e-5f) {
            failures.fetch_add(1);
            break;
          }
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  CHECK(failures.load() == 0);
  CHECK(compute_threads_peak() <= threads);
  CHECK(compute_threads_peak() >= 1);
  CHECK(compute_threads_in_use() == 0);
  set_compute_budget(0);
}
