// Runtime options, errors and concurrency.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace {

brisk::RuntimeOptions default_options() {
  brisk::RuntimeOptions opts;
  opts.model_dir = brisk::testing::model_dir().string();
  opts.num_threads = brisk::testing::compute_threads();
  return opts;
}

}  // namespace

TEST_CASE("bad runtime options are rejected with the option named", "[runtime]") {
  brisk::RuntimeOptions opts = default_options();
  opts.model_dir = "/nonexistent/brisk/model";
  auto missing = brisk::Runtime::create(opts);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(missing.status().message().find("/nonexistent/brisk/model") != std::string::npos);

  opts = default_options();
  opts.max_seq_len = 1;
  auto short_seq = brisk::Runtime::create(opts);
  REQUIRE_FALSE(short_seq.ok());
  CHECK(short_seq.status().message().find("max_seq_len") != std::string::npos);

  opts = default_options();
  opts.batching.max_batch_size = 0;
  auto no_batch = brisk::Runtime::create(opts);
  REQUIRE_FALSE(no_batch.ok());
  CHECK(no_batch.status().message().find("max_batch_size") != std::string::npos);

  opts = default_options();
  opts.model_dir = (brisk::testing::model_dir() / "config.json").string();
  auto file = brisk::Runtime::create(opts);
  REQUIRE_FALSE(file.ok());
  CHECK(file.status().message().find("is a file but not a quantized model file") != std::string::npos);
  // ... and why not: config.json is no safetensors file (its first 8 bytes are no header length it could have).
  CHECK(file.status().message().find("header length is") != std::string::npos);

  opts = default_options();
  opts.model_dir = "";
  CHECK_FALSE(brisk::Runtime::create(opts).ok());
}

TEST_CASE("a model directory without weights names the missing file", "[runtime]") {
  brisk::testing::TempDir tmp;
  const fs::path& dir = tmp.path;
  fs::copy_file(brisk::testing::model_dir() / "config.json", dir / "config.json");
  fs::copy_file(brisk::testing::model_dir() / "vocab.txt", dir / "vocab.txt");
  brisk::RuntimeOptions opts = default_options();
  opts.model_dir = dir.string();
  auto rt = brisk::Runtime::create(opts);
  REQUIRE_FALSE(rt.ok());
  CHECK(rt.status().message().find("model.safetensors") != std::string::npos);
}

TEST_CASE("a max-pooling model is refused at create unless pooling is overridden", "[runtime]") {
  brisk::testing::TempDir tmp;
  for (const char* f : {"config.json", "vocab.txt", "model.safetensors"}) {
    fs::create_symlink(brisk::testing::model_dir() / f, tmp.path / f);
  }
  // The Pooling module's directory comes from modules.json, and the error names the file that asked for max.
  tmp.write("modules.json", R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
                                {"path": "pool_max", "type": "sentence_transformers.models.Pooling"}])");
  tmp.write("pool_max/config.json", R"({"word_embedding_dimension": 384, "pooling_mode_mean_tokens": false,
                                        "pooling_mode_cls_token": false, "pooling_mode_max_tokens": true})");
  brisk::RuntimeOptions opts = default_options();
  opts.model_dir = tmp.path.string();
  auto rt = brisk::Runtime::create(opts);
  REQUIRE_FALSE(rt.ok());
  CHECK(rt.status().message().find("max pooling") != std::string::npos);
  CHECK(rt.status().message().find("pool_max/config.json") != std::string::npos);
  opts.pooling = brisk::Pooling::kMean;
  CHECK(brisk::Runtime::create(opts).ok());
}

TEST_CASE("a truncated model.safetensors fails cleanly", "[runtime]") {
  brisk::testing::TempDir tmp;
  const fs::path& dir = tmp.path;
  for (const char* f : {"config.json", "vocab.txt"}) fs::copy_file(brisk::testing::model_dir() / f, dir / f);
  {
    std::ifstream in(brisk::testing::model_dir() / "model.safetensors", std::ios::binary);
    std::vector<char> head(1 << 20);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    out.write(head.data(), in.gcount());
  }
  brisk::RuntimeOptions opts = default_options();
  opts.model_dir = dir.string();
  auto rt = brisk::Runtime::create(opts);
  REQUIRE_FALSE(rt.ok());
  CHECK(rt.status().message().find("model.safetensors") != std::string::npos);
}

TEST_CASE("invalid UTF-8 names the text and leaves the runtime usable", "[runtime]") {
  auto rt = brisk::Runtime::create(default_options());
  REQUIRE(rt.ok());
  std::vector<std::string_view> texts = {"good text", "bad \xff byte"};
  auto bad = (*rt)->embed(texts);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("text 1") != std::string::npos);
  texts.pop_back();
  CHECK((*rt)->embed(texts).ok());

  std::vector<float> small(10);
  CHECK_FALSE((*rt)->embed(texts, small).ok());
  CHECK((*rt)->embed(std::span<const std::string_view>()).value().empty());
}

TEST_CASE("replace_invalid_utf8 embeds invalid UTF-8 as the text without the bad bytes", "[runtime]") {
  brisk::RuntimeOptions opts = default_options();
  opts.replace_invalid_utf8 = true;
  auto rt = brisk::Runtime::create(opts);
  REQUIRE(rt.ok());
  auto bad = (*rt)->embed(std::vector<std::string_view>{"bad \xff byte"});
  REQUIRE(bad.ok());
  auto clean = (*rt)->embed(std::vector<std::string_view>{"bad  byte"});
  REQUIRE(clean.ok());
  CHECK(*bad == *clean);
}

TEST_CASE("max_seq_len truncates and cls pooling differs from mean", "[runtime]") {
  brisk::RuntimeOptions opts = default_options();
  opts.max_seq_len = 8;
  auto rt8 = brisk::Runtime::create(opts);
  REQUIRE(rt8.ok());
  CHECK((*rt8)->info().max_seq_len == 8);
  std::vector<std::string_view> texts = {"one two three four five six seven eight nine ten eleven",
                                         "one two three four five six seven"};
  auto e = (*rt8)->embed(texts);
  REQUIRE(e.ok());
  // Both texts share their first 6 word pieces, so after truncation to [CLS] + 6 + [SEP] they are identical.
  for (int i = 0; i < 384; ++i) REQUIRE((*e)[i] == Approx((*e)[384 + i]).margin(1e-5));

  auto model_default = brisk::Runtime::create(default_options());
  REQUIRE(model_default.ok());
  CHECK((*model_default)->info().max_seq_len == 256);  // sentence_bert_config.json, as sentence-transformers

  opts = default_options();
  opts.pooling = brisk::Pooling::kCls;
  auto cls = brisk::Runtime::create(opts);
  REQUIRE(cls.ok());
  CHECK((*cls)->info().pooling == brisk::Pooling::kCls);
  auto mean = brisk::Runtime::create(default_options());
  REQUIRE(mean.ok());
  CHECK((*mean)->info().pooling == brisk::Pooling::kMean);  // from 1_Pooling/config.json
  auto a = (*cls)->embed(texts).value();
  auto b = (*mean)->embed(texts).value();
  double d = 0;
  for (int i = 0; i < 384; ++i) d += std::abs(a[i] - b[i]);
  CHECK(d > 0.1);
}

TEST_CASE("concurrent embed calls on one runtime agree", "[runtime]") {
  // Caches off: every call below is a forward pass, so the passes of several threads really overlap the callers.
  auto rt = brisk::Runtime::create(brisk::testing::uncached_runtime_options());
  REQUIRE(rt.ok());
  std::vector<std::string_view> texts = {"transfer money abroad", "what are the opening hours", "block my card"};
  const auto expected = (*rt)->embed(texts).value();
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        auto got = (*rt)->embed(texts);
        if (!got.ok()) {
          mismatches.fetch_add(1);
          continue;
        }
        for (size_t j = 0; j < expected.size(); ++j) {
          if (std::abs((*got)[j] - expected[j]) > 1e-5f) {
            mismatches.fetch_add(1);
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(mismatches.load() == 0);
  // 21 calls of 3 texts, none answered by a cache: at least one pass each when no two calls shared one, and at
  // least 63 / 32 = 2 passes even if they all had.
  CHECK((*rt)->forward_passes() >= 2);
  CHECK((*rt)->batch_stats().submitted == 21 * texts.size());
}
