// HfTokenizer (the SentencePiece Unigram pipeline of XLM-R) against Hugging Face tokenizers 0.19: every line of
// tests/data/multilingual_texts.txt and the edge cases in tests/data/unigram_golden.json, made by
// tests/data/make_unigram_golden.py from a tiny Unigram model trained with sentencepiece on the first 400 lines and
// converted by transformers (tests/data/tiny_xlmr_tokenizer/tokenizer.json). Also the errors for unsupported stages,
// hostile tokenizer.json files and bad arguments.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/model/hf_tokenizer.h"
#include "brisk/model/text_tokenizer.h"
#include "test_util.h"

using brisk::HfTokenizer;
using nlohmann::json;

namespace {

const json& golden() {
  static const json g = json::parse(brisk::testing::read_test_file("unigram_golden.json"));
  return g;
}

std::string tokenizer_json() { return brisk::testing::read_test_file("tiny_xlmr_tokenizer/tokenizer.json"); }

const HfTokenizer& tiny() {
  static const HfTokenizer tok = [] {
    auto t = HfTokenizer::from_json(tokenizer_json(), "tiny_xlmr_tokenizer/tokenizer.json");
    if (!t.ok()) FAIL(t.status().message());
    return *t;
  }();
  return tok;
}

// tokenizer.json with `path` (a JSON pointer) replaced by `value`.
std::string patched(const std::string& path, const json& value) {
  json j = json::parse(tokenizer_json());
  j[json::json_pointer(path)] = value;
  return j.dump();
}

// A RobertaProcessing post-processor with these cls and sep ids.
json roberta(int64_t cls, int64_t sep) {
  return json{{"type", "RobertaProcessing"},
              {"cls", json::array({"<s>", cls})},
              {"sep", json::array({"</s>", sep})},
              {"trim_offsets", true},
              {"add_prefix_space", true}};
}

}  // namespace

TEST_CASE("hf tokenizer: the tiny XLM-R tokenizer loads with its stages and special ids", "[tokenizer][unigram]") {
  const HfTokenizer& tok = tiny();
  const json& g = golden();
  CHECK(tok.model_type() == "Unigram");
  CHECK(tok.vocab_size() == g["vocab_size"].get<int>());
  CHECK(tok.unk_id() == g["special_ids"]["<unk>"].get<int>());
  for (const char* name : {"<s>", "</s>", "<pad>", "<mask>"}) {
    CHECK(tok.added_token_id(name) == g["special_ids"][name].get<int>());
  }
  CHECK(tok.added_token_id("<nothing>") == -1);
  CHECK(tok.id_to_token(tok.unk_id()) == "<unk>");
  CHECK(tok.token_to_id("no such piece at all") == tok.unk_id());
  CHECK(tok.id_to_token(-1).empty());
  CHECK(tok.id_to_token(tok.vocab_size()).empty());
}

TEST_CASE("hf tokenizer: the normalizer equals tokenizers' on every multilingual line", "[tokenizer][unigram]") {
  const HfTokenizer& tok = tiny();
  size_t n = 0;
  for (const json& c : golden()["normalized"]) {
    const std::string text = c["text"].get<std::string>();
    auto got = tok.normalize(text);
    REQUIRE(got.ok());
    INFO("text: " << text);
    CHECK(*got == c["normalized"].get<std::string>());
    ++n;
  }
  CHECK(n >= 600);
}

TEST_CASE("hf tokenizer: ids and pieces equal tokenizers' on every multilingual line and edge case",
          "[tokenizer][unigram]") {
  const HfTokenizer& tok = tiny();
  size_t n = 0, with_unknown = 0;
  for (const json& c : golden()["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const auto want = c["ids"].get<std::vector<int32_t>>();
    INFO("text: " << text);
    auto ids = tok.encode(text, 100000);
    REQUIRE(ids.ok());
    CHECK(*ids == want);
    auto pieces = tok.tokenize(text);
    REQUIRE(pieces.ok());
    std::vector<std::string> want_pieces = c["tokens"].get<std::vector<std::string>>();
    want_pieces = std::vector<std::string>(want_pieces.begin() + 1, want_pieces.end() - 1);  // without <s>, </s>
    CHECK(*pieces == want_pieces);
    with_unknown += std::count(want.begin(), want.end(), tok.unk_id()) > 0 ? 1 : 0;
    ++n;
  }
  CHECK(n >= 620);
  CHECK(with_unknown >= 50);  // the held-out lines exercise unknown characters
}

TEST_CASE("hf tokenizer: literal special tokens in the text and the lstrip of the mask token", "[tokenizer][unigram]") {
  const HfTokenizer& tok = tiny();
  for (const json& c : golden()["special_in_text"]) {
    const std::string text = c["text"].get<std::string>();
    INFO("text: " << text);
    auto ids = tok.encode(text, 512);
    REQUIRE(ids.ok());
    CHECK(*ids == c["ids"].get<std::vector<int32_t>>());
  }
}

TEST_CASE("hf tokenizer: pairs and truncation follow the template and longest_first", "[tokenizer][unigram]") {
  const HfTokenizer& tok = tiny();
  for (const json& c : golden()["pairs"]) {
    const std::string a = c["first"].get<std::string>(), b = c["second"].get<std::string>();
    INFO(a << " | " << b);
    auto pair = tok.encode_pair(a, b, 100000);
    REQUIRE(pair.ok());
    CHECK(pair->ids == c["ids"].get<std::vector<int32_t>>());
    // <s> A </s></s> B </s>: B starts after the second </s>.
    auto first_alone = tok.encode(a, 100000);
    REQUIRE(first_alone.ok());
    CHECK(pair->second_start == static_cast<int32_t>(first_alone->size() + 1));
    // Truncated: at most max_seq_len ids, the template's 4 special tokens kept.
    auto cut = tok.encode_pair(a, b, 9);
    REQUIRE(cut.ok());
    CHECK(cut->ids.size() <= 9);
    CHECK(cut->ids.front() == 0);
    CHECK(cut->ids.back() == 2);
  }
  auto ids = tok.encode("a long enough sentence to be cut somewhere in the middle", 5);
  REQUIRE(ids.ok());
  CHECK(ids->size() == 5);
  CHECK(ids->front() == 0);
  CHECK(ids->back() == 2);
}

TEST_CASE("hf tokenizer: bad text and arguments are clear errors", "[tokenizer][unigram]") {
  const HfTokenizer& tok = tiny();
  auto bad = tok.encode(std::string("ab\xC3", 3), 16);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("not UTF-8 at byte 2"));
  CHECK_FALSE(tok.tokenize("\xFF").ok());
  CHECK_FALSE(tok.normalize("\xC0\x80").ok());
  auto short_len = tok.encode("hello", 2);
  REQUIRE_FALSE(short_len.ok());
  CHECK_THAT(std::string(short_len.status().message()), Catch::Contains("max_seq_len is 2"));
  auto pair = tok.encode_pair("a", std::string("\xE2\x82", 2), 16);
  REQUIRE_FALSE(pair.ok());
  CHECK_THAT(std::string(pair.status().message()), Catch::Contains("the second text is not UTF-8"));
  CHECK_FALSE(tok.encode_pair("a", "b", 4).ok());
}

TEST_CASE("hf tokenizer: a model directory's tokenizer.json picks it, and invalid UTF-8 can be replaced",
          "[tokenizer][unigram]") {
  auto from_dir = brisk::TextTokenizer::from_model_dir((brisk::testing::test_data_dir() / "tiny_xlmr").string());
  REQUIRE(from_dir.ok());
  CHECK(from_dir->kind() == "Unigram");
  CHECK(from_dir->wordpiece() == nullptr);
  CHECK(from_dir->pad_id() == 1);  // "<pad>"
  CHECK(from_dir->vocab_size() == tiny().vocab_size());
  CHECK_FALSE(from_dir->encode("ab\xC3 cd", 32).ok());  // refused by default, as WordPiece does
  const brisk::TextTokenizer replacing(tiny(), /*replace_invalid_utf8=*/true);
  auto replaced = replacing.encode("ab\xC3 cd\xFF", 32);
  REQUIRE(replaced.ok());
  CHECK(*replaced == tiny().encode("ab\xEF\xBF\xBD cd\xEF\xBF\xBD", 32).value());  // each bad byte is U+FFFD
  auto wordpiece = brisk::TextTokenizer::from_model_dir(brisk::testing::model_dir().string());  // all-MiniLM-L6-v2
  REQUIRE(wordpiece.ok());
  CHECK(wordpiece->kind() == "WordPiece");
}

TEST_CASE("hf tokenizer: a million spaces are one Replace match and no deep recursion", "[tokenizer][unigram]") {
  // XLM-R's Replace(" {2,}" -> U+2581) matched by hand: a regex engine that recurses per character would overflow the
  // stack here.
  std::string text(1000002, ' ');
  text.front() = 'a';
  text.back() = 'b';
  auto normalized = tiny().normalize(text);
  REQUIRE(normalized.ok());
  CHECK(*normalized ==
        "a\xE2\x96\x81"
        "b");
  auto ids = tiny().encode(text, 16);
  REQUIRE(ids.ok());
  CHECK(ids->size() <= 16);
}

TEST_CASE("hf tokenizer: unsupported stages and hostile files are refused with what is wrong named",
          "[tokenizer][unigram]") {
  struct Case {
    std::string json_text, message;
  };
  const std::vector<Case> cases = {
      {"", "not valid JSON"},
      {"[]", "not a JSON object"},
      {"{}", "has no model"},
      {patched("/model/type", "WordPiece"), "model \"WordPiece\" is not supported"},
      {patched("/model/byte_fallback", true), "byte_fallback"},
      {patched("/model/unk_id", 99999), "unk_id is 99999"},
      {patched("/model/vocab/5", json::array({"x"})), "vocab entry 5"},
      {patched("/model/vocab/6", json::array({"\u2581", -1.0})), "repeats piece"},
      {patched("/model/vocab", json::array()), "vocab is empty"},
      {patched("/normalizer/normalizers/0", json{{"type", "Lowercase"}}), "normalizer \"Lowercase\" is not supported"},
      {patched("/normalizer/normalizers/0/precompiled_charsmap", "!!!"), "not base64"},
      {patched("/normalizer/normalizers/0/precompiled_charsmap", "AQ=="), "at least 4"},
      {patched("/normalizer/normalizers/0/precompiled_charsmap", "/////w=="), "trie size"},
      {patched("/normalizer/normalizers/2/pattern", json{{"Regex", "\\s+"}}), "Regex \"\\s+\" is not supported"},
      {patched("/normalizer/normalizers/2/pattern", json{{"Regex", " {3,2}"}}), "Regex \" {3,2}\" is not supported"},
      {patched("/normalizer/normalizers/2/pattern", json{{"Regex", " *"}}), "Regex \" *\" is not supported"},
      {patched("/pre_tokenizer", json{{"type", "CharDelimiterSplit"}}), "pre-tokenizer \"CharDelimiterSplit\" is not"},
      {patched("/pre_tokenizer/prepend_scheme", "sometimes"), "prepend_scheme"},
      {patched("/post_processor", json{{"type", "BertProcessing"}}), "post-processor \"BertProcessing\""},
      {patched("/post_processor/single/0", json{{"SpecialToken", {{"id", "<cls>"}}}}), "\"<cls>\""},
      {patched("/added_tokens/0/single_word", true), "single_word"},
      {patched("/added_tokens/0/id", -5), "id out of"},
      // Ids past int32 would wrap (4294967296 to 0) and a negative one would pass the vocabulary check.
      {patched("/post_processor", roberta(0, 4294967296LL)), "RobertaProcessing sep id is 4294967296; expected"},
      {patched("/post_processor", roberta(-1, 2)), "RobertaProcessing cls id is -1; expected"},
      {patched("/post_processor", roberta(0, int64_t{1} << 30)), "RobertaProcessing sep id is 1073741824; expected"},
      {patched("/post_processor", roberta(0, 100000)), "token id 100000 is past the vocabulary"},
  };
  for (const Case& c : cases) {
    INFO("expect: " << c.message);
    auto t = HfTokenizer::from_json(c.json_text, "t.json");
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(std::string(t.status().message()), Catch::Contains(c.message));
  }
  auto roberta_ok = HfTokenizer::from_json(patched("/post_processor", roberta(0, 2)), "t.json");
  REQUIRE(roberta_ok.ok());
  CHECK(roberta_ok->encode("hello", 16).value() == tiny().encode("hello", 16).value());  // <s> ... </s> as before
  auto missing = HfTokenizer::from_file("/nonexistent/tokenizer.json");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("/nonexistent/tokenizer.json"));
}

TEST_CASE("hf tokenizer: a charsmap whose trie points anywhere never reads out of bounds", "[tokenizer][unigram]") {
  // A trie of 4 units whose offsets and values point past the arrays, and strings that end without a NUL.
  std::string blob(4, '\0');
  blob[0] = 16;
  for (uint32_t unit : {0xFFFFFF00u, 0x7FFFFFFFu, 0x80000141u, 0x0000FF41u}) {
    blob.append(reinterpret_cast<const char*>(&unit), 4);
  }
  blob += "abc";
  std::string encoded;
  static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < blob.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(blob[i]) << 16;
    if (i + 1 < blob.size()) v |= static_cast<uint8_t>(blob[i + 1]) << 8;
    if (i + 2 < blob.size()) v |= static_cast<uint8_t>(blob[i + 2]);
    encoded += kB64[(v >> 18) & 63];
    encoded += kB64[(v >> 12) & 63];
    encoded += i + 1 < blob.size() ? kB64[(v >> 6) & 63] : '=';
    encoded += i + 2 < blob.size() ? kB64[v & 63] : '=';
  }
  auto t = HfTokenizer::from_json(patched("/normalizer/normalizers/0/precompiled_charsmap", encoded), "t.json");
  REQUIRE(t.ok());
  for (const char* text : {"A", "AAAA", "héllo wörld", "日本語", "👍🏽"}) {
    auto ids = t->encode(text, 64);
    REQUIRE(ids.ok());
    for (int32_t id : *ids) CHECK((id >= 0 && id < t->vocab_size()));
  }
}
