// Runtime::count_tokens against Hugging Face's tokenizer (tests/data/golden_minilm.json, made by
// tests/data/make_golden.py): the token count of each golden text is the length of transformers' ids, whether or not
// the runtime's max_seq_len would truncate the text.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "brisk/runtime/runtime.h"
#include "runtime/runtime_test_util.h"
#include "test_util.h"

TEST_CASE("count_tokens gives transformers' token count before truncation", "[runtime]") {
  std::ifstream in(brisk::testing::test_data_dir() / "golden_minilm.json");
  REQUIRE(in.good());
  const nlohmann::json golden = nlohmann::json::parse(in);
  REQUIRE(golden.at("max_seq_len").get<int>() == 512);  // the golden ids are untruncated below 512 tokens

  brisk::RuntimeOptions opts = brisk::testing::uncached_runtime_options();
  opts.max_seq_len = 12;  // shorter than many golden texts: their count must not stop at 12
  opts.cache.token_cache_entries = 64;
  auto rt = brisk::testing::make_runtime(opts);
  size_t longer_than_limit = 0;
  for (const auto& item : golden.at("items")) {
    const std::string text = item.at("text").get<std::string>();
    const size_t expected = item.at("ids").size();
    if (expected >= 512) continue;  // transformers truncated it
    INFO(text);
    for (int pass = 0; pass < 2; ++pass) {  // the second pass is served by the token cache
      auto n = rt->count_tokens(text);
      REQUIRE(n.ok());
      CHECK(*n == expected);
    }
    if (expected > 12) ++longer_than_limit;
  }
  CHECK(longer_than_limit >= 5);
}

TEST_CASE("count_tokens refuses invalid UTF-8 as submit does", "[runtime]") {
  auto rt = brisk::testing::make_runtime(brisk::testing::uncached_runtime_options());
  auto n = rt->count_tokens("abc\xff");
  REQUIRE_FALSE(n.ok());
  CHECK(n.status().code() == absl::StatusCode::kInvalidArgument);
  auto empty = rt->count_tokens("");
  REQUIRE(empty.ok());
  CHECK(*empty == 2);  // [CLS] [SEP]
}
