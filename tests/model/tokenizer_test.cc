// WordPieceTokenizer against Hugging Face golden ids (tests/data/golden_minilm.json, made by make_golden.py),
// plus the WordPiece algorithm on a synthetic vocabulary, invalid UTF-8, hostile vocabularies and batching.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/model/tokenizer.h"
#include "test_util.h"

namespace fs = std::filesystem;
using brisk::TokenizerOptions;
using brisk::WordPieceTokenizer;

namespace {

struct GoldenItem {
  std::string text;
  std::vector<int32_t> ids, cased_ids;
};

struct Golden {
  std::vector<GoldenItem> items, token_items;
  int max_seq_len = 0;
};

const Golden& golden() {
  static const Golden g = [] {
    Golden out;
    const fs::path path = brisk::testing::test_data_dir() / "golden_minilm.json";
    std::ifstream in(path);
    if (!in) FAIL("cannot open " << path << "; expected the golden file that tests/data/make_golden.py writes");
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) FAIL(path << " is not valid JSON");
    out.max_seq_len = j.at("max_seq_len").get<int>();
    for (const auto& it : j.at("items")) out.items.push_back({it.at("text"), it.at("ids"), {}});
    for (const auto& it : j.at("token_items"))
      out.token_items.push_back({it.at("text"), it.at("ids"), it.at("cased_ids")});
    return out;
  }();
  return g;
}

WordPieceTokenizer minilm() {
  const fs::path dir = brisk::testing::model_dir();
  auto tok = WordPieceTokenizer::from_model_dir(dir.string());
  if (!tok.ok()) {
    FAIL("cannot load the tokenizer from " << dir << ": " << tok.status().message()
                                           << " (scripts/setup installs the model; BRISK_MODEL_DIR overrides)");
  }
  return *std::move(tok);
}

using brisk::testing::TempDir;

WordPieceTokenizer synthetic(std::vector<std::string> extra, TokenizerOptions opts = {}) {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  tokens.insert(tokens.end(), extra.begin(), extra.end());
  auto tok = WordPieceTokenizer::from_tokens(tokens, std::move(opts));
  REQUIRE(tok.ok());
  return *std::move(tok);
}

std::vector<std::string> pieces(const WordPieceTokenizer& tok, std::string_view text) {
  auto t = tok.tokenize(text);
  REQUIRE(t.ok());
  return *t;
}

std::string msg(const brisk::Status& s) { return std::string(s.message()); }

}  // namespace

TEST_CASE("tokenizer: ids equal Hugging Face for every golden sentence", "[tokenizer]") {
  const Golden& g = golden();
  REQUIRE(g.items.size() >= 60);
  REQUIRE(g.max_seq_len == 512);
  const WordPieceTokenizer tok = minilm();
  CHECK(tok.vocab_size() == 30522);
  CHECK(tok.cls_id() == 101);
  CHECK(tok.sep_id() == 102);
  CHECK(tok.pad_id() == 0);
  CHECK(tok.unk_id() == 100);
  CHECK(tok.mask_id() == 103);
  for (const auto& item : g.items) {
    INFO("text: " << item.text);
    auto ids = tok.encode(item.text, g.max_seq_len);
    REQUIRE(ids.ok());
    CHECK(*ids == item.ids);
  }
}

TEST_CASE("tokenizer: random texts equal Hugging Face, uncased and cased rules", "[tokenizer]") {
  const Golden& g = golden();
  REQUIRE(g.token_items.size() >= 100);
  const WordPieceTokenizer tok = minilm();
  TokenizerOptions cased_opts;
  cased_opts.lowercase = false;
  cased_opts.strip_accents = false;
  auto cased = WordPieceTokenizer::from_vocab_file((brisk::testing::model_dir() / "vocab.txt").string(), cased_opts);
  REQUIRE(cased.ok());
  for (const auto& item : g.token_items) {
    INFO("text: " << item.text);
    auto ids = tok.encode(item.text, g.max_seq_len);
    REQUIRE(ids.ok());
    CHECK(*ids == item.ids);
    auto cids = cased->encode(item.text, g.max_seq_len);
    REQUIRE(cids.ok());
    CHECK(*cids == item.cased_ids);
  }
}

TEST_CASE("tokenizer: vocab.txt + default options give the same ids as tokenizer.json", "[tokenizer]") {
  auto tok = WordPieceTokenizer::from_vocab_file((brisk::testing::model_dir() / "vocab.txt").string());
  REQUIRE(tok.ok());
  for (const auto& item : golden().items) {
    INFO("text: " << item.text);
    auto ids = tok->encode(item.text, 512);
    REQUIRE(ids.ok());
    CHECK(*ids == item.ids);
  }
}

TEST_CASE("tokenizer: truncation keeps CLS ... SEP", "[tokenizer]") {
  const WordPieceTokenizer tok = minilm();
  const GoldenItem* longest = &golden().items[0];
  for (const auto& it : golden().items)
    if (it.ids.size() > longest->ids.size()) longest = &it;
  REQUIRE(longest->ids.size() == 512);  // the golden text itself was truncated by HF
  for (int max_len : {2, 3, 16, 511}) {
    auto ids = tok.encode(longest->text, max_len);
    REQUIRE(ids.ok());
    REQUIRE(ids->size() == static_cast<size_t>(max_len));
    CHECK(ids->front() == 101);
    CHECK(ids->back() == 102);
    // The kept pieces are the first pieces of the untruncated text.
    CHECK(std::equal(ids->begin() + 1, ids->end() - 1, longest->ids.begin() + 1));
  }
  auto short_ids = tok.encode("hello world", 512);
  REQUIRE(short_ids.ok());
  CHECK(*short_ids == std::vector<int32_t>{101, 7592, 2088, 102});
  for (int bad : {1, 0, -5}) {
    auto r = tok.encode("hello", bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(msg(r.status()), Catch::Contains("max_seq_len") && Catch::Contains(">= 2"));
  }
}

TEST_CASE("tokenizer: encode_batch pads with PAD and masks", "[tokenizer]") {
  const WordPieceTokenizer tok = minilm();
  std::vector<std::string_view> texts = {"hello world", "", "How do I reset my online banking password?"};
  auto b = tok.encode_batch(texts, 512);
  REQUIRE(b.ok());
  REQUIRE(b->batch == 3);
  REQUIRE(b->seq_len == 11);
  CHECK(b->lengths == std::vector<int32_t>{4, 2, 11});
  REQUIRE(b->input_ids.size() == 33);
  REQUIRE(b->attention_mask.size() == 33);
  REQUIRE(b->token_type_ids.size() == 33);
  const std::vector<int32_t> row0 = {101, 7592, 2088, 102, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<int32_t> row1 = {101, 102, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  CHECK(std::vector<int32_t>(b->input_ids.begin(), b->input_ids.begin() + 11) == row0);
  CHECK(std::vector<int32_t>(b->input_ids.begin() + 11, b->input_ids.begin() + 22) == row1);
  CHECK(std::vector<int32_t>(b->input_ids.begin() + 22, b->input_ids.end()) == golden().items[0].ids);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 11; ++c) {
      CHECK(b->attention_mask[r * 11 + c] == (c < b->lengths[r] ? 1 : 0));
      CHECK(b->token_type_ids[r * 11 + c] == 0);
    }
  }
  // Truncation applies per row; std::string texts work too.
  std::vector<std::string> owned = {golden().items[0].text, "hi"};
  auto t = tok.encode_batch(std::span<const std::string>(owned), 5);
  REQUIRE(t.ok());
  CHECK(t->seq_len == 5);
  CHECK(t->lengths == std::vector<int32_t>{5, 3});
  CHECK(t->input_ids[4] == 102);

  auto empty = tok.encode_batch(std::span<const std::string_view>(), 128);
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().code() == absl::StatusCode::kInvalidArgument);
  std::vector<std::string_view> with_bad = {"fine", "also fine", "bad \xFF byte"};
  auto bad = tok.encode_batch(with_bad, 128);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(msg(bad.status()), Catch::Contains("text 2") && Catch::Contains("byte offset 4"));
}

TEST_CASE("tokenizer: invalid UTF-8 is an error naming the byte offset", "[tokenizer]") {
  const WordPieceTokenizer tok = minilm();
  struct Case {
    std::string text;
    size_t offset;
    const char* why;
  };
  const Case cases[] = {
      {"ab\x80"
       "cd",
       2, "continuation"},                      // lone continuation byte
      {"x\xC0\xAFy", 1, "overlong"},            // overlong 2-byte '/'
      {"\xE0\x80\xAF", 0, "overlong"},          // overlong 3-byte '/'
      {"\xF0\x80\x80\xAF", 0, "overlong"},      // overlong 4-byte '/'
      {"hi \xE2\x82", 3, "truncated"},          // truncated 3-byte sequence at the end
      {"hi \xE2\x82 there", 3, "truncated"},    // truncated in the middle
      {"ok \xED\xA0\x80 ok", 3, "surrogate"},   // U+D800 encoded in UTF-8
      {"\xF4\x90\x80\x80", 0, "U+10FFFF"},      // above U+10FFFF
      {"caf\xC3\xA9 \xFF", 6, "never occurs"},  // after a valid 2-byte character
  };
  for (const auto& c : cases) {
    INFO("case at offset " << c.offset << " (" << c.why << ")");
    auto r = tok.encode(c.text, 512);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(msg(r.status()), Catch::Contains("byte offset " + std::to_string(c.offset) + " ") &&
                                    Catch::Contains(c.why) && Catch::Contains("UTF-8"));
    // Advice a caller of the CLI, C API or Runtime can follow: no C++-only type names.
    CHECK_THAT(msg(r.status()), Catch::Contains("pass valid UTF-8 or enable replace_invalid_utf8") &&
                                    !Catch::Contains("TokenizerOptions"));
    CHECK_FALSE(tok.tokenize(c.text).ok());
  }
  // Invalid bytes past the truncation point are still an error: validity does not depend on max_seq_len.
  const std::string tail = "hello " + std::string(1000, ' ') + "world \x80";
  auto r = tok.encode(tail, 3);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(msg(r.status()), Catch::Contains("byte offset " + std::to_string(tail.size() - 1)));
}

TEST_CASE("tokenizer: from_model_dir takes replace_invalid_utf8 and refuses a file", "[tokenizer]") {
  const std::string dir = brisk::testing::model_dir().string();
  CHECK_FALSE(WordPieceTokenizer::from_model_dir(dir).value().encode("bad \xff byte", 16).ok());
  auto ids = WordPieceTokenizer::from_model_dir(dir, /*replace_invalid_utf8=*/true).value().encode("bad \xff", 16);
  REQUIRE(ids.ok());
  CHECK(ids->size() == 3);  // [CLS] bad [SEP]: the bad byte is dropped
  auto file = WordPieceTokenizer::from_model_dir((brisk::testing::model_dir() / "vocab.txt").string());
  REQUIRE_FALSE(file.ok());
  CHECK_THAT(msg(file.status()), Catch::Contains("is a file; expected a folder"));
}

TEST_CASE("tokenizer: replace_invalid_utf8 turns each maximal ill-formed subpart into U+FFFD", "[tokenizer]") {
  TokenizerOptions opts;
  opts.replace_invalid_utf8 = true;
  auto tok = WordPieceTokenizer::from_vocab_file((brisk::testing::model_dir() / "vocab.txt").string(), opts);
  REQUIRE(tok.ok());
  // clean_text drops U+FFFD, so the bad bytes vanish and the neighbours join, as in HF with errors="replace".
  auto a = tok->pre_tokenize("hel\x80lo wor\xE2\x82ld \xED\xA0\x80!");
  REQUIRE(a.ok());
  CHECK(*a == std::vector<std::string>{"hello", "world", "!"});
  auto ids = tok->encode(std::string(1000, '\xFF'), 512);
  REQUIRE(ids.ok());
  CHECK(*ids == std::vector<int32_t>{101, 102});
  // Without clean_text the replacement characters stay visible: one per maximal subpart, as Python's
  // errors="replace" gives them (e2 82 is one; c0 and af are one each, since c0 starts no sequence).
  opts.clean_text = false;
  auto raw = WordPieceTokenizer::from_vocab_file((brisk::testing::model_dir() / "vocab.txt").string(), opts);
  REQUIRE(raw.ok());
  auto b = raw->pre_tokenize("a\xE2\x82z \xC0\xAF");
  REQUIRE(b.ok());
  CHECK(*b == std::vector<std::string>{"a\xEF\xBF\xBDz", "\xEF\xBF\xBD\xEF\xBF\xBD"});
}

TEST_CASE("tokenizer: WordPiece on a synthetic vocabulary", "[tokenizer]") {
  const WordPieceTokenizer tok = synthetic({"un", "##aff", "##able", "a", "ab", "##c", "##bc", "##b", "runn", "##ing",
                                            "caf", "##\xC3\xA9", ",", "\xC3", "##\xA9", "x", "##x"});
  CHECK(pieces(tok, "unaffable") == std::vector<std::string>{"un", "##aff", "##able"});
  // Longest match first: "ab" + "##c", not "a" + "##bc".
  CHECK(pieces(tok, "abc") == std::vector<std::string>{"ab", "##c"});
  CHECK(pieces(tok, "abbc") == std::vector<std::string>{"ab", "##bc"});
  // One unmatched rest makes the whole word [UNK], pieces before it included.
  CHECK(pieces(tok, "unaffablez running") == std::vector<std::string>{"[UNK]", "runn", "##ing"});
  CHECK(pieces(tok, "UnAffable, RUNNING") == std::vector<std::string>{"un", "##aff", "##able", ",", "runn", "##ing"});
  auto ids = tok.encode("unaffable", 8);
  REQUIRE(ids.ok());
  CHECK(*ids == std::vector<int32_t>{2, 5, 6, 7, 3});
  // Word of 100 code points is split; 101 is [UNK] (max_input_chars_per_word counts code points, not bytes).
  CHECK(pieces(tok, std::string(100, 'x')).size() == 100);
  CHECK(pieces(tok, std::string(101, 'x')) == std::vector<std::string>{"[UNK]"});

  TokenizerOptions cased;
  cased.lowercase = false;
  cased.strip_accents = false;
  cased.max_input_chars_per_word = 4;
  const WordPieceTokenizer raw = synthetic({"caf", "##\xC3\xA9", "\xC3", "##\xA9", "x", "##x"}, cased);
  CHECK(pieces(raw, "caf\xC3\xA9") == std::vector<std::string>{"caf", "##\xC3\xA9"});  // "café": 4 code points
  CHECK(pieces(raw, "xxxxx") == std::vector<std::string>{"[UNK]"});
  // Pieces never split a UTF-8 sequence, even when its bytes alone are tokens.
  CHECK(pieces(raw, "\xC3\xA9") == std::vector<std::string>{"[UNK]"});
  // Repeated vocabulary entries: the later id wins, like HF's vocab dict.
  const WordPieceTokenizer dup = synthetic({"dup", "other", "dup"});
  CHECK(dup.token_to_id("dup") == 7);
  CHECK(dup.token_to_id("missing") == dup.unk_id());
  CHECK(dup.id_to_token(5) == "dup");
  CHECK(dup.id_to_token(-1).empty());
  CHECK(dup.id_to_token(dup.vocab_size()).empty());
}

TEST_CASE("tokenizer: normalisation options", "[tokenizer]") {
  const WordPieceTokenizer tok = minilm();
  auto words = tok.pre_tokenize(" Héllo,\tWORLD!\n\xE4\xBD\xA0\xE5\xA5\xBD  naïve [MASK]x ");
  REQUIRE(words.ok());
  CHECK(*words ==
        std::vector<std::string>{"hello", ",", "world", "!", "\xE4\xBD\xA0", "\xE5\xA5\xBD", "naive", "[MASK]", "x"});
  TokenizerOptions o;
  o.lowercase = false;
  o.strip_accents = true;
  o.recognize_special_tokens = false;
  o.tokenize_chinese_chars = false;
  auto cased = WordPieceTokenizer::from_vocab_file((brisk::testing::model_dir() / "vocab.txt").string(), o);
  REQUIRE(cased.ok());
  CHECK(cased->options().lowercase == false);
  auto w = cased->pre_tokenize("H\xC3\xA9llo \xE4\xBD\xA0\xE5\xA5\xBD [MASK]");
  REQUIRE(w.ok());
  CHECK(*w == std::vector<std::string>{"Hello", "\xE4\xBD\xA0\xE5\xA5\xBD", "[", "MASK", "]"});
}

TEST_CASE("tokenizer: hostile texts", "[tokenizer]") {
  const WordPieceTokenizer tok = minilm();
  auto empty = tok.encode("", 512);
  REQUIRE(empty.ok());
  CHECK(*empty == std::vector<int32_t>{101, 102});
  CHECK(pieces(tok, "").empty());
  CHECK(pieces(tok, " \t\r\n\x0b\x0c ").empty());
  // Embedded NULs are dropped (clean_text), joining their neighbours.
  CHECK(pieces(tok, std::string_view("hel\0lo", 6)) == std::vector<std::string>{"hello"});
  CHECK(pieces(tok, std::string(100, '\0')).empty());
  // 1 MB of text: full tokenize, and encode stops at max_seq_len.
  std::string big;
  while (big.size() < (1u << 20)) big += "where is my parcel? ";
  auto all = tok.tokenize(big);
  REQUIRE(all.ok());
  CHECK(all->size() == big.size() / 20 * 5);
  auto ids = tok.encode(big, 512);
  REQUIRE(ids.ok());
  CHECK(ids->size() == 512);
  // 1 MB without a break is one over-long word; 1 MB of CJK is one token per character.
  CHECK(pieces(tok, std::string(1 << 20, 'a')) == std::vector<std::string>{"[UNK]"});
  std::string cjk;
  while (cjk.size() < (1u << 20)) cjk += "\xE7\x9A\x84";  // 的
  auto c = tok.encode(cjk, 100000000);
  REQUIRE(c.ok());
  CHECK(c->size() == cjk.size() / 3 + 2);
}

TEST_CASE("tokenizer: hostile vocabulary files give clear errors", "[tokenizer]") {
  TempDir tmp;
  auto missing = WordPieceTokenizer::from_vocab_file((tmp.path / "nope.txt").string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(msg(missing.status()), Catch::Contains("nope.txt"));

  auto dir = WordPieceTokenizer::from_vocab_file(tmp.path.string());
  REQUIRE_FALSE(dir.ok());
  CHECK_THAT(msg(dir.status()), Catch::Contains("directory"));

  auto empty = WordPieceTokenizer::from_vocab_file(tmp.write("empty.txt", ""));
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(msg(empty.status()), Catch::Contains("empty.txt") && Catch::Contains("empty"));

  struct Lacking {
    const char* content;
    const char* token;
  };
  const Lacking lacking[] = {{"[PAD]\n[CLS]\n[SEP]\nhello\n", "[UNK]"},
                             {"[PAD]\n[UNK]\n[SEP]\nhello\n", "[CLS]"},
                             {"[PAD]\n[UNK]\n[CLS]\nhello\n", "[SEP]"},
                             {"[UNK]\n[CLS]\n[SEP]\nhello\n", "[PAD]"},
                             {"\n\n\n\n", "[UNK]"}};
  for (const auto& l : lacking) {
    INFO("lacking " << l.token);
    auto r = WordPieceTokenizer::from_vocab_file(tmp.write("lacking.txt", l.content));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(msg(r.status()), Catch::Contains("lacking.txt") && Catch::Contains(std::string("\"") + l.token));
  }
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 7919) & 0xFF));
  CHECK_FALSE(WordPieceTokenizer::from_vocab_file(tmp.write("garbage.txt", garbage)).ok());

  // CRLF line ends and a byte order mark are tolerated; no [MASK] is fine.
  auto crlf = WordPieceTokenizer::from_vocab_file(tmp.write("crlf.txt",
                                                            "\xEF\xBB\xBF[PAD]\r\n[UNK]\r\n[CLS]\r\n"
                                                            "[SEP]\r\nhello\r\n##s\r\n"));
  REQUIRE(crlf.ok());
  CHECK(crlf->mask_id() == -1);
  auto ids = crlf->encode("Hellos [MASK]", 16);
  REQUIRE(ids.ok());
  CHECK(*ids == std::vector<int32_t>{2, 4, 5, 1, 1, 1, 3});

  TokenizerOptions bad;
  bad.max_input_chars_per_word = 0;
  auto b = WordPieceTokenizer::from_vocab_file(tmp.write("ok.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n"), bad);
  REQUIRE_FALSE(b.ok());
  CHECK_THAT(msg(b.status()), Catch::Contains("max_input_chars_per_word"));
}

TEST_CASE("tokenizer: model directories", "[tokenizer]") {
  TempDir tmp;
  auto none = WordPieceTokenizer::from_model_dir((tmp.path / "absent").string());
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == absl::StatusCode::kNotFound);
  auto bare = WordPieceTokenizer::from_model_dir(tmp.path.string());
  REQUIRE_FALSE(bare.ok());
  CHECK_THAT(msg(bare.status()), Catch::Contains("tokenizer.json") && Catch::Contains("vocab.txt"));

  // vocab.txt + tokenizer_config.json (cased, custom unk name).
  tmp.write("vocab.txt", "[PAD]\n<unk>\n[CLS]\n[SEP]\nHello\n##s\nhello\n");
  tmp.write("tokenizer_config.json", R"({"do_lower_case": false, "unk_token": {"content": "<unk>"}})");
  auto cfg = WordPieceTokenizer::from_model_dir(tmp.path.string());
  REQUIRE(cfg.ok());
  CHECK(cfg->unk_id() == 1);
  CHECK(*cfg->encode("Hellos hello HELLO", 16) == std::vector<int32_t>{2, 4, 5, 6, 1, 3});

  // tokenizer.json takes precedence; broken or unsupported ones are errors naming the file.
  tmp.write("tokenizer.json", "{ not json");
  auto broken = WordPieceTokenizer::from_model_dir(tmp.path.string());
  REQUIRE_FALSE(broken.ok());
  CHECK_THAT(msg(broken.status()), Catch::Contains("tokenizer.json") && Catch::Contains("JSON"));
  tmp.write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}}})");
  auto bpe = WordPieceTokenizer::from_model_dir(tmp.path.string());
  REQUIRE_FALSE(bpe.ok());
  CHECK_THAT(msg(bpe.status()), Catch::Contains("WordPiece"));
  tmp.write("tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "[UNK]": 5}},
      "pre_tokenizer": {"type": "BertPreTokenizer"}})");
  auto gap = WordPieceTokenizer::from_model_dir(tmp.path.string());
  REQUIRE_FALSE(gap.ok());
  CHECK_THAT(msg(gap.status()), Catch::Contains("[UNK]") && Catch::Contains("unique ids"));
  tmp.write("tokenizer.json", R"({
      "added_tokens": [{"id": 0, "content": "[PAD]"}, {"id": 6, "content": "<extra>"}],
      "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                     "strip_accents": null, "lowercase": true},
      "pre_tokenizer": {"type": "BertPreTokenizer"},
      "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
      "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                "max_input_chars_per_word": 100,
                "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "hello": 4, "##s": 5}}})");
  auto tj = WordPieceTokenizer::from_model_dir(tmp.path.string());
  REQUIRE(tj.ok());
  CHECK(tj->vocab_size() == 7);
  CHECK(*tj->encode("HELLOS<extra>hello", 16) == std::vector<int32_t>{2, 4, 5, 6, 4, 3});
}

TEST_CASE("tokenizer: one tokenizer shared by many threads", "[tokenizer]") {
  const WordPieceTokenizer tok = minilm();
  const Golden& g = golden();
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const WordPieceTokenizer copy = tok;  // copies share the vocabulary
      std::vector<int32_t> ids;
      for (int round = 0; round < 20; ++round) {
        for (size_t i = t; i < g.items.size(); i += 2) {
          if (!copy.encode_into(g.items[i].text, 512, ids).ok() || ids != g.items[i].ids) ++mismatches;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(mismatches.load() == 0);
}
