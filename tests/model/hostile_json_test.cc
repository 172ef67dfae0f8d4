// JSON nested hundreds of thousands of levels deep, in every JSON file brisk reads, gives an error and never
// overflows the stack (error messages describe containers without recursing into them).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>

#include "brisk/model/config.h"
#include "brisk/model/safetensors.h"
#include "brisk/model/tokenizer.h"
#include "test_util.h"

namespace {

constexpr int kDepth = 300000;

std::string deep_array() { return std::string(kDepth, '[') + std::string(kDepth, ']'); }

}  // namespace

TEST_CASE("a deeply nested config.json value is an error, not a crash", "[loading][hostile]") {
  auto cfg = brisk::BertConfig::from_json_string(
      R"({"model_type": "bert", "vocab_size": 10, "hidden_size": )" + deep_array() + "}", "config.json");
  REQUIRE_FALSE(cfg.ok());
  CHECK(cfg.status().message().find("hidden_size") != std::string::npos);
}

TEST_CASE("a deeply nested safetensors shape is an error, not a crash", "[loading][hostile]") {
  brisk::testing::TempDir dir;
  const std::string header = R"({"x": {"dtype": "F32", "shape": [)" + deep_array() + R"(], "data_offsets": [0, 0]}})";
  std::string bytes(8, '\0');
  const uint64_t len = header.size();
  std::memcpy(bytes.data(), &len, sizeof len);
  bytes += header;
  auto st = brisk::SafetensorsFile::open(dir.write("deep.safetensors", bytes));
  REQUIRE_FALSE(st.ok());
  CHECK(st.status().message().find("'x'") != std::string::npos);
}

TEST_CASE("a deeply nested tokenizer.json normalizer is an error, not a crash", "[loading][hostile]") {
  brisk::testing::TempDir dir;
  dir.write("tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2,
      "[PAD]": 3, "a": 4}}, "normalizer": )" + deep_array() + "}");
  auto tok = brisk::WordPieceTokenizer::from_model_dir(dir.path.string());
  REQUIRE_FALSE(tok.ok());
  CHECK(tok.status().message().find("normalizer") != std::string::npos);
}
