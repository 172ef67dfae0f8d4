// WordPieceTokenizer's added tokens against Hugging Face tokenizers (tests/data/tiny_wordpiece_added, made by
// make_wordpiece_added_golden.py): tokens with normalized true matched in the normalised text by their normalised
// content, tokens with normalized false in the raw text, lstrip / rstrip, split_special_tokens, truncation; WordPiece
// keeping to model.vocab (an added token past it is never a WordPiece piece); and the single_word flag refused with an
// error naming it.
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
  CHECK_FALSE(added.at("vaccines").normalized);
  CHECK_FALSE(added.at("world").normalized);
  // model.vocab's 32 tokens are WordPiece's; "vaccines" (id 41) is past them, "world" (16) among them.
  CHECK(tok.options().model_vocab_size == 32);
  CHECK(tok.token_to_id("vaccines") == 41);
  CHECK(tok.token_to_id("world") == 16);
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

TEST_CASE("wordpiece added tokens: WordPiece never produces an added token past model.vocab", "[tokenizer]") {
  const WordPieceTokenizer tok = load();
  // "vaccines" (normalized false, not in model.vocab) matches the raw text only; the lowercased "VACCINES" is
  // WordPiece's, which has no such piece. "world" (normalized false, in model.vocab) is WordPiece's too.
  auto pieces = tok.tokenize("VACCINES Vaccines vaccines WORLD");
  REQUIRE(pieces.ok());
  CHECK(*pieces == std::vector<std::string>{"vaccine", "##s", "vaccine", "##s", "vaccines", "world"});
  // The same through from_tokens: the ids past model_vocab_size are added tokens only.
  brisk::TokenizerOptions o = tok.options();
  std::vector<std::string> tokens;
  for (int id = 0; id < tok.vocab_size(); ++id) tokens.emplace_back(tok.id_to_token(id));
  auto same = WordPieceTokenizer::from_tokens(tokens, o);
  REQUIRE(same.ok());
  CHECK(*same->tokenize("Vaccines") == std::vector<std::string>{"vaccine", "##s"});
  // model_vocab_size 0: every token is WordPiece's (a vocab.txt), so the word matches the whole token.
  o.model_vocab_size = 0;
  auto all = WordPieceTokenizer::from_tokens(tokens, o);
  REQUIRE(all.ok());
  CHECK(*all->tokenize("Vaccines") == std::vector<std::string>{"vaccines"});
  // Past the tokens, or negative: refused, naming the option and the number of tokens.
  for (int bad : {tok.vocab_size() + 1, -1}) {
    o.model_vocab_size = bad;
    auto refused = WordPieceTokenizer::from_tokens(tokens, o);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(refused.status().message()),
               Catch::Contains("model_vocab_size is " + std::to_string(bad)) &&
                   Catch::Contains("at most " + std::to_string(tok.vocab_size())));
  }
}
