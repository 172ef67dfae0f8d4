// Issue 30: a non-finite output is never served nor cached. A host backend that returns NaN (or an infinity) for
// some texts: those requests fail with an error naming the backend and the element, the others in the same batch
// are served, nothing non-finite reaches the result cache (asking again runs the model again), and the runtime
// counts them (stats_json, Prometheus).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "test_util.h"

namespace {

// Rows of 8 copies of the sequence's token count; NaN in element 3 of a sequence of exactly 5 tokens (one word
// between [CLS] and [SEP] plus two), +infinity everywhere for one of 6 tokens.
class PoisonBackend final : public brisk::Backend {
 public:
  PoisonBackend() {
    info_.name = "poison";
    info_.output_dim = 8;
  }
  const brisk::BackendInfo& info() const override { return info_; }
  brisk::Status run(const brisk::PackedSequences& batch, std::span<float> out) const override {
    runs_.fetch_add(1);
    for (int64_t i = 0; i < batch.size(); ++i) {
      const int64_t n = batch.length(i);
      float* row = out.data() + i * 8;
      std::fill_n(row, 8, static_cast<float>(n));
      if (n == 5) row[3] = std::nanf("");
      if (n == 6) std::fill_n(row, 8, std::numeric_limits<float>::infinity());
    }
    return absl::OkStatus();
  }
  size_t estimate_activation_bytes(const brisk::BatchShape&) const override { return 0; }
  mutable std::atomic<int> runs_{0};

 private:
  brisk::BackendInfo info_;
};

}  // namespace

TEST_CASE("a non-finite output is neither served nor cached, and is counted", "[runtime][hostile]") {
  brisk::RuntimeOptions o = brisk::testing::runtime_options();
  auto backend = std::make_unique<PoisonBackend>();
  const PoisonBackend* poison = backend.get();
  auto rt = brisk::Runtime::create(o, std::move(backend));
  REQUIRE(rt.ok());
  // "hello" is 3 tokens with [CLS] and [SEP]; "hello hello hello" 5; "hello hello hello hello" 6.
  std::vector<float> out(8);
  std::vector<std::string_view> good = {"hello"};
  REQUIRE((*rt)->embed(good, out).ok());
  CHECK(out[0] == 3.0f);

  std::vector<std::string_view> nan_text = {"hello hello hello"};
  for (int attempt = 0; attempt < 2; ++attempt) {
    const brisk::Status s = (*rt)->embed(nan_text, out);
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(std::string(s.message()), Catch::Contains("the poison backend of model"));
    CHECK_THAT(std::string(s.message()), Catch::Contains("produced nan at element 3 of 8"));
    CHECK_THAT(std::string(s.message()), Catch::Contains("neither served nor cached"));
  }
  const int runs_after_nan = poison->runs_.load();
  // A batch of three: the infinite one fails, its neighbours are served.
  std::vector<std::promise<brisk::StatusOr<std::vector<float>>>> answers(3);
  const char* texts[] = {"hello hello", "hello hello hello hello", "hello"};
  for (int i = 0; i < 3; ++i) {
    auto id = (*rt)->submit(texts[i], {}, [&answers, i](uint64_t, brisk::StatusOr<std::vector<float>> r) {
      answers[static_cast<size_t>(i)].set_value(std::move(r));
    });
    REQUIRE(id.ok());
  }
  auto first = answers[0].get_future().get();
  auto second = answers[1].get_future().get();
  auto third = answers[2].get_future().get();
  REQUIRE(first.ok());
  CHECK((*first)[0] == 4.0f);
  REQUIRE_FALSE(second.ok());
  CHECK_THAT(std::string(second.status().message()), Catch::Contains("produced inf at element 0 of 8"));
  REQUIRE(third.ok());  // "hello" again: from the cache

  const nlohmann::json stats = nlohmann::json::parse((*rt)->stats_json());
  CHECK(stats["nonfinite_outputs"] == 3);
  CHECK(poison->runs_.load() > runs_after_nan);
  CHECK_THAT((*rt)->metrics_prometheus(), Catch::Contains("brisk_runtime_nonfinite_outputs_total"));
  // A CPU runtime never takes the CUDA int8 fallback; the count is there for every runtime.
  CHECK(stats["cuda_int8_fallback_calls"] == 0);
  CHECK_THAT((*rt)->metrics_prometheus(), Catch::Contains("brisk_cuda_int8_fallback_calls_total"));
  // The NaN text was never cached: asking again runs the backend again.
  const int runs_before = poison->runs_.load();
  CHECK_FALSE((*rt)->embed(nan_text, out).ok());
  CHECK(poison->runs_.load() == runs_before + 1);
}
