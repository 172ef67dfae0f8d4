// WordPieceTokenizer's added tokens against Hugging Face tokenizers (tests/data/tiny_wordpiece_added, made by
// make_wordpiece_added_golden.py): tokens with normalized true matched in the normalised text by their normalised
// content, tokens with normalized false in the raw text, lstrip / rstrip, split_special_tokens, truncation; and the
// single_word flag refused with an error naming it.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/model/tokenizer.h"
#include "golden_json.h"

using brisk::WordPieceTokenizer;
using nlohmann::json;

namespace {

WordPieceTokenizer load(bool recognize_special_tokens = true) {
  const std::string text = brisk::testing::read_test_file("tiny_wordpiece_added/tokenizer.json");
  auto tok = WordPieceTokenizer::from_model_files({{"tokenizer.json", text}}, false, "tiny_wordpiece_added");
  INFO(tok.status().message());
  REQUIRE(tok.ok());
  if (recognize_special_tokens) return *tok;
  // The same tokenizer.json with split_special_tokens, through the options it was read into.
  brisk::TokenizerOptions o = tok->options();
  o.recognize_special_tokens = false;
  std::vector<std::string> tokens;
  for (int id = 0; id < tok->vocab_size(); ++id) tokens.emplace_back(tok->id_to_token(id));
  auto split = WordPieceTokenizer::from_tokens(std::move(tokens), std::move(o));
  INFO(split.status().message());
  REQUIRE(split.ok());
  return *split;
}

}  // namespace

TEST_CASE("wordpiece added tokens: normalized ones match the normalised text, the others the raw text, as HF",
          "[tokenizer]") {
  const WordPieceTokenizer tok = load();
  const json golden = brisk::testing::read_json("tiny_wordpiece_added/golden.json");
  const int max_length = golden["max_length"].get<int>();
  // The flags as tokenizer.json has them: transformers' add_tokens writes normalized true.
  std::map<std::string, brisk::AddedToken> added;
  for (const brisk::AddedToken& a : tok.options().added_tokens) added[a.content] = a;
  CHECK(added.at("COVID19").normalized);
  CHECK_FALSE(added.at("COVID19").special);
  CHECK_FALSE(added.at("New-York").normalized);
  CHECK(added.at("<raw>").lstrip);
  CHECK(added.at("[CLS]").special);
  for (const json& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    INFO("text: \"" << text << "\"");
    auto ids = tok.encode(text, 512);
    REQUIRE(ids.ok());
    CHECK(*ids == c["ids"].get<std::vector<int32_t>>());
    auto truncated = tok.encode(text, max_length);
    REQUIRE(truncated.ok());
    CHECK(*truncated == c["truncated_ids"].get<std::vector<int32_t>>());
  }
}

TEST_CASE("wordpiece added tokens: split_special_tokens stops matching the special ones only", "[tokenizer]") {
  const WordPieceTokenizer tok = load(/*recognize_special_tokens=*/false);
  const json golden = brisk::testing::read_json("tiny_wordpiece_added/golden.json");
  for (const json& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    INFO("text: \"" << text << "\"");
    auto ids = tok.encode(text, 512);
    REQUIRE(ids.ok());
    CHECK(*ids == c["split_special_ids"].get<std::vector<int32_t>>());
  }
}

TEST_CASE("wordpiece added tokens: single_word is refused, naming the token, never ignored", "[tokenizer]") {
  json j = json::parse(brisk::testing::read_test_file("tiny_wordpiece_added/tokenizer.json"));
  json* entry = nullptr;
  for (json& a : j["added_tokens"]) {
    if (a["content"] == "zqxj") entry = &a;
  }
  REQUIRE(entry != nullptr);
  (*entry)["single_word"] = true;
  auto tok = WordPieceTokenizer::from_model_files({{"tokenizer.json", j.dump()}}, false, "patched");
  REQUIRE_FALSE(tok.ok());
  CHECK_THAT(std::string(tok.status().message()), Catch::Contains("zqxj") && Catch::Contains("single_word"));
  // A normalized token that normalises to nothing could never match: refused too.
  (*entry)["single_word"] = false;
  (*entry)["content"] = "\x01";  // a control character: clean_text drops it
  auto empty = WordPieceTokenizer::from_model_files({{"tokenizer.json", j.dump()}}, false, "patched");
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(std::string(empty.status().message()), Catch::Contains("empty once normalised"));
}
