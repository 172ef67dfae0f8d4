// What one embed() call costs in forward passes, the model's normalisation choice, deadlines past the clock's
// range, the upper bounds of the count options, and the prompts by name.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "runtime/runtime_test_util.h"
#include "test_util.h"

namespace fs = std::filesystem;
using brisk::testing::make_runtime;
using brisk::testing::uncached_runtime_options;

namespace {

// n distinct texts, so that nothing in one call can share a result with another.
std::vector<std::string> distinct_texts(size_t n, size_t call) {
  std::vector<std::string> texts;
  for (size_t i = 0; i < n; ++i)
    texts.push_back("question " + std::to_string(call) + " about card " + std::to_string(i));
  return texts;
}

std::vector<std::string_view> views(const std::vector<std::string>& texts) { return {texts.begin(), texts.end()}; }

double norm(const float* v, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(v[i]) * v[i];
  return std::sqrt(s);
}

}  // namespace

TEST_CASE("one embed() call of max_batch_size texts is one forward pass", "[runtime][batch]") {
  auto rt = make_runtime(uncached_runtime_options());
  REQUIRE(rt->info().num_layers > 0);
  // Before, each text was queued on its own and a free executor could start a pass on the first few: 4 of 30
  // calls of 32 texts ran as 2 passes.
  for (size_t call = 0; call < 30; ++call) {
    const auto texts = distinct_texts(32, call);
    const uint64_t before = rt->forward_passes();
    REQUIRE(rt->embed(views(texts)).ok());
    INFO("call " << call);
    REQUIRE(rt->forward_passes() - before == 1);
  }
  const auto stats = nlohmann::json::parse(rt->stats_json());
  CHECK(stats.at("forward_passes").get<uint64_t>() == rt->forward_passes());
}

TEST_CASE("max_batch_size is the one limit on texts per pass", "[runtime][batch]") {
  brisk::RuntimeOptions opts = uncached_runtime_options();
  opts.batching.max_batch_size = 64;  // RuntimeOptions had a second limit of its own, capped by this one
  auto rt = make_runtime(opts);
  const auto t64 = distinct_texts(64, 0);
  uint64_t before = rt->forward_passes();
  REQUIRE(rt->embed(views(t64)).ok());
  CHECK(rt->forward_passes() - before == 1);
  const auto t130 = distinct_texts(130, 1);
  before = rt->forward_passes();
  auto e = rt->embed(views(t130));
  REQUIRE(e.ok());
  CHECK(rt->forward_passes() - before == 3);  // 64 + 64 + 2
  // Every row is its own text's embedding, not a neighbour's.
  const size_t dim = static_cast<size_t>(rt->embedding_dim());
  for (size_t i : {size_t{0}, size_t{63}, size_t{64}, size_t{129}}) {
    std::string_view one = t130[i];
    auto alone = rt->embed(std::span<const std::string_view>(&one, 1));
    REQUIRE(alone.ok());
    CHECK(brisk::testing::cosine(alone->data(), e->data() + i * dim, dim) > 0.99999);
  }
}

TEST_CASE("normalisation follows the model's modules.json unless overridden", "[runtime]") {
  brisk::testing::TempDir tmp;
  for (const auto& entry : fs::directory_iterator(brisk::testing::model_dir())) {
    if (entry.path().filename() != "modules.json") fs::create_symlink(entry.path(), tmp.path / entry.path().filename());
  }
  // Transformer + Pooling, no Normalize module: sentence-transformers returns unnormalised embeddings.
  tmp.write("modules.json", R"([
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  brisk::RuntimeOptions opts = uncached_runtime_options();
  opts.model_dir = tmp.path.string();
  auto plain = make_runtime(opts);
  CHECK_FALSE(plain->info().normalize);
  const auto e = brisk::testing::embed_one(*plain, "how do I reset my PIN?");
  CHECK(std::abs(norm(e.data(), e.size()) - 1.0) > 0.01);

  opts.normalize = true;  // the explicit override still wins
  auto forced = make_runtime(opts);
  CHECK(forced->info().normalize);
  const auto f = brisk::testing::embed_one(*forced, "how do I reset my PIN?");
  CHECK(norm(f.data(), f.size()) == Approx(1.0).epsilon(1e-5));

  auto minilm = make_runtime(uncached_runtime_options());  // all-MiniLM-L6-v2 lists Normalize
  CHECK(minilm->info().normalize);
}

TEST_CASE("prompt_for gives the model's prompt of a name, and names the ones it has when it has none of it",
          "[runtime]") {
  brisk::ModelInfo info;
  info.prompts = {{"query", "query: "}, {"passage", "passage: "}};
  CHECK(brisk::prompt_for(info, "query").value_or("?") == "query: ");
  CHECK(brisk::prompt_for(info, "passage").value_or("?") == "passage: ");
  auto other = brisk::prompt_for(info, "document");
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(other.status().message()) ==
        "prompt_name is \"document\"; expected one of the model's prompts: \"passage\", \"query\" "
        "(config_sentence_transformers.json)");
  auto none = brisk::prompt_for(brisk::ModelInfo{}, "query");
  REQUIRE_FALSE(none.ok());
  CHECK(std::string(none.status().message()).find("expected none: this model has no prompts") != std::string::npos);
}

TEST_CASE("a timeout past the clock's range means no deadline", "[runtime][batch]") {
  auto rt = make_runtime(uncached_runtime_options());
  for (auto timeout : {std::chrono::nanoseconds::max(), std::chrono::nanoseconds::max() / 2,
                       std::chrono::nanoseconds(std::chrono::hours(24 * 365 * 200))}) {
    std::promise<brisk::StatusOr<std::vector<float>>> done;
    auto id = rt->submit("far deadline", {.priority = 0, .timeout = timeout},
                         [&](uint64_t, brisk::StatusOr<std::vector<float>> e) { done.set_value(std::move(e)); });
    REQUIRE(id.ok());
    auto result = done.get_future().get();
    INFO(result.status().message());
    CHECK(result.ok());
  }
}

TEST_CASE("count options past their bounds are refused with the bound named", "[runtime]") {
  struct Case {
    const char* field;
    void (*set)(brisk::RuntimeOptions&);
  };
  const Case cases[] = {
      {"num_threads is 1000000", [](brisk::RuntimeOptions& o) { o.num_threads = 1000000; }},
      {"num_threads is 1025", [](brisk::RuntimeOptions& o) { o.num_threads = brisk::kMaxThreads + 1; }},
      {"batching.max_batch_size is 2147483647",
       [](brisk::RuntimeOptions& o) { o.batching.max_batch_size = 2147483647; }},
      {"batching.max_queue_size is 2147483647",
       [](brisk::RuntimeOptions& o) { o.batching.max_queue_size = 2147483647; }},
      {"cache.token_cache_entries is 2147483647",
       [](brisk::RuntimeOptions& o) { o.cache.token_cache_entries = 2147483647; }},
      // Issue 30: each within its own bound, together far past any machine.
      {"batching.executor_threads x num_threads (with the fallback's) is 262144 compute threads; expected at most 1024",
       [](brisk::RuntimeOptions& o) {
         o.batching.executor_threads = 256;
         o.num_threads = 1024;
       }},
      {"batching.executor_threads x num_threads (with the fallback's) is 1056 compute threads",
       [](brisk::RuntimeOptions& o) {
         o.batching.executor_threads = 1;
         o.num_threads = 1024;
         o.fallback = brisk::FallbackOptions{.model_dir = "unused", .classification_head = {}, .num_threads = 32};
       }},
      {"batching.max_queue_delay is 2147483 ms; expected at most 60000 ms",
       [](brisk::RuntimeOptions& o) { o.batching.max_queue_delay = std::chrono::microseconds(2147483647); }},
      // Every duration has a maximum (issue 30): a huge TTL would overflow now + ttl.
      {"cache.result_ttl is 2.56205e+06 h; expected at most 8784 h (366 days)",
       [](brisk::RuntimeOptions& o) { o.cache.result_ttl = std::chrono::nanoseconds::max(); }},
      {"cache.stale_ttl is 8785 h; expected at most 8784 h",
       [](brisk::RuntimeOptions& o) { o.cache.stale_ttl = std::chrono::hours(8785); }},
      {"RedisOptions.command_timeout is 3600000000000 ns; expected > 0 and at most 60000000000 ns (60 s)",
       [](brisk::RuntimeOptions& o) {
         o.cache.redis = brisk::cache::RedisOptions{};
         o.cache.redis->allow_unsigned = true;
         o.cache.redis->command_timeout = std::chrono::hours(1);
       }},
      {"BatchPolicy.adaptive.p99_target is 86400000 ms; expected > 0 and at most 3600000 ms (1 h)",
       [](brisk::RuntimeOptions& o) {
         o.batching.adaptive.enabled = true;
         o.batching.adaptive.p99_target = std::chrono::hours(24);
       }},
  };
  for (const Case& c : cases) {
    brisk::RuntimeOptions opts = brisk::testing::runtime_options();
    c.set(opts);
    auto rt = brisk::Runtime::create(opts);
    INFO(c.field);
    REQUIRE_FALSE(rt.ok());
    CHECK(rt.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(rt.status().message().find(c.field) != std::string::npos);
  }
}
