// Inputs built to exhaust the stack or memory: JSON nested hundreds of thousands of levels deep in every JSON
// file brisk reads, and a config claiming far more layers than its weights file holds. Each is a quick error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/safetensors.h"
#include "brisk/model/tokenizer.h"
#include "brisk/model/weights.h"
#include "test_util.h"

namespace {

constexpr int kDepth = 300000;

std::string deep_array() { return std::string(kDepth, '[') + std::string(kDepth, ']'); }

}  // namespace

TEST_CASE("a deeply nested config.json value is an error, not a crash", "[loading][hostile]") {
  auto cfg = brisk::BertConfig::from_json_string(
      R"({"model_type": "bert", "vocab_size": 10, "hidden_size": )" + deep_array() + "}", "config.json");
  REQUIRE_FALSE(cfg.ok());
  // Refused while it is read (brisk/core/internal/bounded_input.h: no JSON value deeper than 64 levels is built).
  CHECK(cfg.status().message().find("config.json: arrays and objects are nested more than 64 levels deep") !=
        std::string::npos);
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
  CHECK(st.status().message().find("header") != std::string::npos);
  CHECK(st.status().message().find("nested more than 64 levels deep") != std::string::npos);
}

TEST_CASE("a deeply nested tokenizer.json normalizer is an error, not a crash", "[loading][hostile]") {
  brisk::testing::TempDir dir;
  dir.write("tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2,
      "[PAD]": 3, "a": 4}}, "normalizer": )" +
                                  deep_array() + "}");
  auto tok = brisk::WordPieceTokenizer::from_model_dir(dir.path.string());
  REQUIRE_FALSE(tok.ok());
  CHECK(tok.status().message().find("tokenizer.json") != std::string::npos);
  CHECK(tok.status().message().find("nested more than 64 levels deep") != std::string::npos);
}

TEST_CASE("a tokenizer.json or tokenizer_config.json that is JSON but no object names its type", "[loading][hostile]") {
  brisk::testing::TempDir dir;
  dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
  struct Case {
    const char* file;
    const char* text;
    const char* type;
  };
  for (const Case& c : {Case{"tokenizer.json", "[1, 2]", "array"}, Case{"tokenizer.json", "\"x\"", "string"},
                        Case{"tokenizer.json", "null", "null"}, Case{"tokenizer_config.json", "42", "number"},
                        Case{"tokenizer_config.json", "true", "boolean"}}) {
    brisk::testing::TempDir model;
    model.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
    model.write(c.file, c.text);
    INFO(c.file << ": " << c.text);
    auto tok = brisk::WordPieceTokenizer::from_model_dir(model.path.string());
    REQUIRE_FALSE(tok.ok());
    const std::string message(tok.status().message());
    CHECK(message.find(c.file) != std::string::npos);
    CHECK(message.find(std::string("is a JSON ") + c.type + "; expected a JSON object") != std::string::npos);
    CHECK(message.find("not valid JSON") == std::string::npos);
  }
  // Broken JSON is still called that.
  dir.write("tokenizer.json", "{ not json");
  auto broken = brisk::WordPieceTokenizer::from_model_dir(dir.path.string());
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.status().message().find("not valid JSON") != std::string::npos);
}

TEST_CASE("a config with millions of layers fails before allocating them", "[loading][hostile]") {
  const auto dir = brisk::testing::test_data_dir() / "tiny_bert_st";
  auto config = brisk::BertConfig::from_json_file((dir / "config.json").string());
  REQUIRE(config.ok());
  config->num_hidden_layers = int64_t{1} << 24;
  auto weights = brisk::EncoderWeights::load(dir.string(), *config);
  REQUIRE_FALSE(weights.ok());
  CHECK(weights.status().message().find("num_hidden_layers = 16777216") != std::string::npos);
}

// Issue 30: a NaN in an f32 parameter (here a LayerNorm weight) reached every output; it is refused at load, naming
// the tensor and the element.
TEST_CASE("a NaN in an f32 tensor is refused at load, naming the tensor and the element", "[loading][hostile]") {
  const auto dir = brisk::testing::test_data_dir() / "tiny_bert_st";
  auto config = brisk::BertConfig::from_json_file((dir / "config.json").string());
  REQUIRE(config.ok());
  auto weights = brisk::EncoderWeights::load(dir.string(), *config);
  REQUIRE(weights.ok());
  brisk::Tensor gamma = brisk::Tensor::empty(weights->layers[1].output_ln_gamma.shape(), brisk::DType::kF32).value();
  std::copy_n(weights->layers[1].output_ln_gamma.data<float>(), gamma.numel(), gamma.data<float>());
  gamma.data<float>()[2] = std::nanf("");
  weights->layers[1].output_ln_gamma = gamma;
  auto encoder = brisk::BertEncoder::create(*config, *weights, brisk::Device::kCPU);
  REQUIRE_FALSE(encoder.ok());
  CHECK_THAT(std::string(encoder.status().message()),
             Catch::Contains("encoder.layer.1.output.LayerNorm.weight [8] holds nan at element 2; expected finite"));
}
