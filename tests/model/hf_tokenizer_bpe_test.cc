// HfTokenizer on byte-level BPE (the Qwen2 / Qwen3-Embedding tokenizer.json pipeline: NFC, Split on Qwen2's
// pattern, ByteLevel, BPE; a TemplateProcessing that appends <|endoftext|> in tokenizer_eos.json) against Hugging
// Face tokenizers 0.19: tests/data/bpe_golden.json, made by tests/data/make_bpe_golden.py from a tiny BPE trained
// with tokenizers on local text (tests/data/tiny_qwen_tokenizer/); the same vocabulary under GPT-2's and Llama 3's
// pre-tokenizers; the order of merges on words of up to 20000 characters (bpe_merge_order_golden.json, made by
// make_bpe_merge_order_golden.py) and of a merge listed twice (bpe_duplicate_merges/, made by
// make_bpe_duplicate_merges_golden.py); invalid UTF-8 replaced as Python does (utf8_replace_golden.json, made by
// make_utf8_replace_golden.py); and the errors for what is not supported.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "brisk/model/hf_tokenizer.h"
#include "brisk/model/text_tokenizer.h"
#include "test_util.h"

using brisk::HfTokenizer;
using nlohmann::json;

namespace {

const json& golden() {
  static const json g = json::parse(brisk::testing::read_test_file("bpe_golden.json"));
  return g;
}

std::string tokenizer_text(const char* file) {
  std::string path = "tiny_qwen_tokenizer/";
  path += file;
  return brisk::testing::read_test_file(path);
}

HfTokenizer load(const char* file) {
  auto t = HfTokenizer::from_json(tokenizer_text(file), file);
  if (!t.ok()) FAIL(t.status().message());
  return *t;
}

}  // namespace

TEST_CASE("hf tokenizer bpe: the tiny Qwen tokenizer loads as BPE with its special ids", "[tokenizer][bpe]") {
  const HfTokenizer tok = load("tokenizer.json");
  const json& g = golden();
  CHECK(tok.model_type() == "BPE");
  CHECK(tok.vocab_size() == g["vocab_size"].get<int>());
  CHECK(tok.unk_id() == -1);
  for (const auto& [name, id] : g["special_ids"].items()) CHECK(tok.added_token_id(name) == id.get<int>());
  CHECK(tok.token_to_id("\xC4\xA0") >= 0);  // "Ġ", the byte-level space
  CHECK(tok.token_to_id("no such token") == -1);
  CHECK(tok.id_to_token(tok.token_to_id("\xC4\xA0")) == "\xC4\xA0");
}

TEST_CASE("hf tokenizer bpe: ids and pieces equal tokenizers' on every multilingual line and edge case",
          "[tokenizer][bpe]") {
  const HfTokenizer tok = load("tokenizer.json");
  size_t n = 0;
  for (const json& c : golden()["cases"]) {
    const std::string text = c["text"].get<std::string>();
    INFO("text: " << text);
    auto ids = tok.encode(text, 100000);
    REQUIRE(ids.ok());
    CHECK(*ids == c["ids"].get<std::vector<int32_t>>());
    auto pieces = tok.tokenize(text);
    REQUIRE(pieces.ok());
    CHECK(*pieces == c["tokens"].get<std::vector<std::string>>());
    ++n;
  }
  CHECK(n >= 650);
}

TEST_CASE("hf tokenizer bpe: the end token is appended and pairs follow the template", "[tokenizer][bpe]") {
  const HfTokenizer tok = load("tokenizer_eos.json");
  for (const json& c : golden()["eos_cases"]) {
    const std::string text = c["text"].get<std::string>();
    INFO("text: " << text);
    auto ids = tok.encode(text, 100000);
    REQUIRE(ids.ok());
    CHECK(*ids == c["ids"].get<std::vector<int32_t>>());
  }
  for (const json& c : golden()["pairs"]) {
    INFO(c["first"].get<std::string>() << " | " << c["second"].get<std::string>());
    auto pair = tok.encode_pair(c["first"].get<std::string>(), c["second"].get<std::string>(), 100000);
    REQUIRE(pair.ok());
    CHECK(pair->ids == c["ids"].get<std::vector<int32_t>>());
  }
  // Truncation keeps the end token.
  auto cut = tok.encode("a sentence long enough to be cut before its end token", 4);
  REQUIRE(cut.ok());
  CHECK(cut->size() == 4);
  CHECK(cut->back() == tok.added_token_id("<|endoftext|>"));
}

TEST_CASE("hf tokenizer bpe: special tokens written in the text and their look-alikes", "[tokenizer][bpe]") {
  const HfTokenizer plain = load("tokenizer.json");
  const HfTokenizer eos = load("tokenizer_eos.json");
  for (const json& c : golden()["special_in_text"]) {
    const std::string text = c["text"].get<std::string>();
    INFO("text: " << text);
    auto ids = plain.encode(text, 512);
    REQUIRE(ids.ok());
    CHECK(*ids == c["ids"].get<std::vector<int32_t>>());
    auto with_end = eos.encode(text, 512);
    REQUIRE(with_end.ok());
    CHECK(*with_end == c["eos_ids"].get<std::vector<int32_t>>());
  }
}

TEST_CASE("hf tokenizer bpe: GPT-2's and Llama 3's pre-tokenizers on the same vocabulary equal tokenizers'",
          "[tokenizer][bpe]") {
  for (const char* name : {"gpt2", "llama3"}) {
    const json& v = golden()["variants"][name];
    json j = json::parse(tokenizer_text("tokenizer.json"));
    j["pre_tokenizer"] = v["pre_tokenizer"];
    auto tok = HfTokenizer::from_json(j.dump(), name);
    REQUIRE(tok.ok());
    size_t n = 0;
    for (const json& c : v["cases"]) {
      const std::string text = c["text"].get<std::string>();
      INFO(name << " text: " << text);
      auto ids = tok->encode(text, 100000);
      REQUIRE(ids.ok());
      CHECK(*ids == c["ids"].get<std::vector<int32_t>>());
      ++n;
    }
    CHECK(n >= 200);
  }
}

TEST_CASE("hf tokenizer bpe: a merge listed twice takes its last rank, as tokenizers does", "[tokenizer][bpe]") {
  // tests/data/bpe_duplicate_merges (make_bpe_duplicate_merges_golden.py): merges "b c", "a b", "c a", "b c"; with
  // the first rank "abc" would be a + bc, with tokenizers' last rank it is ab + c.
  const json g = json::parse(brisk::testing::read_test_file("bpe_duplicate_merges/golden.json"));
  auto tok = HfTokenizer::from_json(brisk::testing::read_test_file("bpe_duplicate_merges/tokenizer.json"), "dup");
  REQUIRE(tok.ok());
  REQUIRE(g["cases"].size() >= 8);
  for (const json& c : g["cases"]) {
    const std::string text = c["text"].get<std::string>();
    INFO(text);
    auto ids = tok->encode(text, 64);
    REQUIRE(ids.ok());
    CHECK(*ids == c["ids"].get<std::vector<int32_t>>());
  }
}

TEST_CASE("hf tokenizer bpe: merges on long words and overlapping runs come in tokenizers' order", "[tokenizer][bpe]") {
  // tests/data/bpe_merge_order_golden.json (make_bpe_merge_order_golden.py): merges where the same pair stands at
  // several places ("a a" in a run of "a") and two pairs make one token, on words of up to 20000 characters.
  const json g = json::parse(brisk::testing::read_test_file("bpe_merge_order_golden.json"));
  auto order = HfTokenizer::from_json(brisk::testing::read_test_file(g["tokenizer"].get<std::string>()), "order");
  REQUIRE(order.ok());
  size_t n = 0;
  for (const json& c : g["cases"]) {
    const std::string text = c["text"].get<std::string>();
    INFO("text of " << text.size() << " bytes: " << text.substr(0, 60));
    auto ids = order->encode(text, 100000);
    REQUIRE(ids.ok());
    CHECK(*ids == c["ids"].get<std::vector<int32_t>>());
    ++n;
  }
  CHECK(n >= 250);
  const HfTokenizer tiny = load("tokenizer.json");
  for (const json& r : g["runs"]) {
    REQUIRE(r["tokenizer"] == "tiny_qwen_tokenizer/tokenizer.json");
    const std::string unit = r["unit"].get<std::string>();
    const auto unit_ids = r["unit_ids"].get<std::vector<int32_t>>();
    std::string text;
    std::vector<int32_t> want;
    for (int i = 0; i < r["repeat"].get<int>(); ++i) {
      text += unit;
      want.insert(want.end(), unit_ids.begin(), unit_ids.end());
    }
    INFO("unit " << unit << " x " << r["repeat"].get<int>());
    auto ids = tiny.encode(text, 1 << 20);
    REQUIRE(ids.ok());
    CHECK(*ids == want);
  }
  const json& mixed = g["long_mixed"];
  REQUIRE(mixed["tokenizer"] == "tiny_qwen_tokenizer/tokenizer.json");
  auto ids = tiny.encode(mixed["text"].get<std::string>(), 1 << 20);
  REQUIRE(ids.ok());
  CHECK(*ids == mixed["ids"].get<std::vector<int32_t>>());
}

TEST_CASE("hf tokenizer bpe: replace_invalid_utf8 gives tokenizers' ids for Python's errors=replace text",
          "[tokenizer][bpe]") {
  // tests/data/utf8_replace_golden.json (make_utf8_replace_golden.py): one U+FFFD per maximal subpart of an
  // ill-formed sequence ("\xE2\x82" is one), and byte-level BPE shows each U+FFFD as tokens.
  const json g = json::parse(brisk::testing::read_test_file("utf8_replace_golden.json"));
  REQUIRE(g["tokenizer"] == "tiny_qwen_tokenizer/tokenizer.json");
  const brisk::TextTokenizer replacing(load("tokenizer.json"), /*replace_invalid_utf8=*/true);
  size_t n = 0;
  for (const json& c : g["cases"]) {
    const std::string bytes = absl::HexStringToBytes(c["hex"].get<std::string>());
    INFO("bytes " << c["hex"].get<std::string>());
    auto ids = replacing.encode(bytes, 100000);
    REQUIRE(ids.ok());
    CHECK(*ids == c["ids"].get<std::vector<int32_t>>());
    ++n;
  }
  CHECK(n >= 400);
  auto pair = replacing.encode_pair("a\xE2\x82", "\xF0\x9F\x98 b", 64);
  REQUIRE(pair.ok());
  CHECK(pair->ids == load("tokenizer.json").encode_pair("a\xEF\xBF\xBD", "\xEF\xBF\xBD b", 64).value().ids);
}

TEST_CASE("hf tokenizer bpe: unsupported BPE options and patterns are refused by name", "[tokenizer][bpe]") {
  const json base = json::parse(tokenizer_text("tokenizer.json"));
  auto patched = [&](const std::string& path, const json& value) {
    json j = base;
    j[json::json_pointer(path)] = value;
    return j.dump();
  };
  struct Case {
    std::string json_text, message;
  };
  const std::vector<Case> cases = {
      {patched("/model/dropout", 0.1), "dropout"},
      {patched("/model/unk_token", "<unk>"), "unk_token"},
      {patched("/model/continuing_subword_prefix", "##"), "continuing_subword_prefix"},
      {patched("/model/byte_fallback", true), "byte_fallback"},
      {patched("/model/vocab", json::array()), "no vocab object"},
      {patched("/model/vocab", json::object()), "vocab is empty"},
      {patched("/model/merges/0", "a b c"), "expected \"left right\""},
      {patched("/model/merges/0", "zz\xC4\xA0 qq"), "not in the vocabulary"},
      {patched("/model/vocab/\xC4\xA0", -3), "id -1"},
      {patched("/pre_tokenizer/pretokenizers/0/pattern", json{{"Regex", "\\w+"}}), "pattern {\"Regex\":\"\\\\w+\"}"},
      {patched("/pre_tokenizer/pretokenizers/0/behavior", "Removed"), "behavior Removed"},
      {patched("/pre_tokenizer/pretokenizers/0/invert", true), "inverted"},
  };
  for (const Case& c : cases) {
    INFO("expect: " << c.message);
    auto t = HfTokenizer::from_json(c.json_text, "t.json");
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(std::string(t.status().message()), Catch::Contains(c.message));
  }
}
