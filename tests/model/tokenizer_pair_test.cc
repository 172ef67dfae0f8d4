// WordPieceTokenizer::encode_pair against Hugging Face pair encodings with truncation="longest_first"
// (tests/data/pair_tokens_golden.json, made by make_pair_golden.py with tokenizers and transformers), the
// longest_first rule against the table of HF tokenizers' own unit test, errors, and properties on random pairs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/model/tokenizer.h"
#include "test_util.h"

namespace fs = std::filesystem;
using brisk::EncodedPair;
using brisk::TokenizerOptions;
using brisk::WordPieceTokenizer;

namespace {

struct GoldenEncoding {
  int max_length = 0;
  std::vector<int32_t> ids, token_type_ids;
};

struct GoldenPair {
  std::string first, second;
  std::vector<GoldenEncoding> encodings;
};

std::vector<GoldenPair> golden_pairs() {
  const fs::path path = brisk::testing::test_data_dir() / "pair_tokens_golden.json";
  std::ifstream in(path);
  if (!in) FAIL("cannot open " << path << "; expected the golden file that tests/data/make_pair_golden.py writes");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) FAIL(path << " is not valid JSON");
  std::vector<GoldenPair> out;
  for (const auto& p : j.at("pairs")) {
    GoldenPair gp{p.at("first"), p.at("second"), {}};
    for (const auto& e : p.at("encodings"))
      gp.encodings.push_back({e.at("max_length"), e.at("ids"), e.at("token_type_ids")});
    out.push_back(std::move(gp));
  }
  return out;
}

// The all-MiniLM-L6-v2 tokenizer, or nullopt (with a warning) when the model is not installed.
std::optional<WordPieceTokenizer> minilm(bool replace_invalid_utf8 = false) {
  const fs::path dir = brisk::testing::model_dir();
  if (!fs::exists(dir / "tokenizer.json")) {
    brisk::testing::skip_test_case("no tokenizer.json in " + dir.string() +
                                   " (scripts/setup installs all-MiniLM-L6-v2; BRISK_MODEL_DIR overrides)");
    return std::nullopt;
  }
  auto tok = WordPieceTokenizer::from_model_dir(dir.string(), replace_invalid_utf8);
  if (!tok.ok()) FAIL("cannot load the tokenizer from " << dir << ": " << tok.status().message());
  return *std::move(tok);
}

// Single letters and "##s": a word is one letter (one piece) or a letter and "s" (two pieces); others are [UNK].
WordPieceTokenizer synthetic(bool replace_invalid_utf8 = false) {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "##s"};
  for (char c = 'a'; c <= 'z'; ++c) tokens.emplace_back(1, c);
  TokenizerOptions opts;
  opts.replace_invalid_utf8 = replace_invalid_utf8;
  auto tok = WordPieceTokenizer::from_tokens(tokens, opts);
  REQUIRE(tok.ok());
  return *std::move(tok);
}

std::string msg(const brisk::Status& s) { return std::string(s.message()); }

// The pieces of one text, without [CLS]/[SEP], never truncated.
std::vector<int32_t> pieces(const WordPieceTokenizer& tok, std::string_view text) {
  auto ids = tok.encode(text, 1 << 20);
  REQUIRE(ids.ok());
  return std::vector<int32_t>(ids->begin() + 1, ids->end() - 1);
}

}  // namespace

TEST_CASE("tokenizer pair: ids and token types equal Hugging Face longest_first for every golden pair",
          "[tokenizer][pair]") {
  const std::vector<GoldenPair> pairs = golden_pairs();
  REQUIRE(pairs.size() >= 60);
  const auto tok = minilm();
  if (!tok) return;
  size_t checked = 0, truncated = 0;
  for (const auto& p : pairs) {
    for (const auto& e : p.encodings) {
      INFO("first: " << p.first << "\nsecond: " << p.second << "\nmax_length: " << e.max_length);
      auto r = tok->encode_pair(p.first, p.second, e.max_length);
      REQUIRE(r.ok());
      CHECK(r->ids == e.ids);
      CHECK(r->token_type_ids() == e.token_type_ids);
      CHECK(r->ids.size() <= size_t(e.max_length));
      ++checked;
      truncated += r->ids.size() < pieces(*tok, p.first).size() + pieces(*tok, p.second).size() + 3;
    }
  }
  CHECK(checked >= 600);
  CHECK(truncated >= 200);  // the golden pairs exercise truncation, not only pairs that fit
}

TEST_CASE("tokenizer pair: longest_first_lengths matches the table of HF tokenizers' truncation test",
          "[tokenizer][pair]") {
  // tokenizers/src/utils/truncation.rs, truncate_encodings_longest_first: lengths 0, 2, 4, 8 and a max_length of 7
  // given to truncate_encodings (the budget left after the special tokens).
  struct Row {
    size_t a, b, keep_a, keep_b;
  };
  const Row rows[] = {{0, 0, 0, 0}, {0, 2, 0, 2}, {0, 4, 0, 4}, {0, 8, 0, 7}, {2, 0, 2, 0}, {2, 2, 2, 2},
                      {2, 4, 2, 4}, {2, 8, 2, 5}, {4, 0, 4, 0}, {4, 2, 4, 2}, {4, 4, 3, 4}, {4, 8, 3, 4},
                      {8, 0, 7, 0}, {8, 2, 5, 2}, {8, 4, 4, 3}, {8, 8, 3, 4}};
  for (const Row& r : rows) {
    INFO(r.a << " + " << r.b << " pieces, budget 7");
    const brisk::PairLengths k = brisk::longest_first_lengths(r.a, r.b, 7);
    CHECK(k.first == r.keep_a);
    CHECK(k.second == r.keep_b);
  }
  // truncate_encodings_empty: a budget of 0 empties both.
  for (size_t n : {0, 2, 4, 8}) {
    CHECK(brisk::longest_first_lengths(n, n, 0).first == 0);
    CHECK(brisk::longest_first_lengths(n, n, 0).second == 0);
  }
  // Lengths far beyond the budget do not overflow.
  const size_t huge = SIZE_MAX - 1;
  CHECK(brisk::longest_first_lengths(huge, huge, 5).first == 2);
  CHECK(brisk::longest_first_lengths(huge, huge, 5).second == 3);
  CHECK(brisk::longest_first_lengths(huge, 1, 5).first == 4);
}

TEST_CASE("tokenizer pair: max_seq_len below 3 is an error", "[tokenizer][pair]") {
  const WordPieceTokenizer tok = synthetic();
  for (int n : {2, 1, 0, -5}) {
    auto r = tok.encode_pair("a b", "c d", n);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(msg(r.status()), Catch::Contains("max_seq_len is " + std::to_string(n) + "; expected at least 3"));
  }
  auto three = tok.encode_pair("a b", "c d", 3);
  REQUIRE(three.ok());
  CHECK(three->ids == std::vector<int32_t>{tok.cls_id(), tok.sep_id(), tok.sep_id()});
  CHECK(three->second_start == 2);
  CHECK(three->token_type_ids() == std::vector<int32_t>{0, 0, 1});
}

TEST_CASE("tokenizer pair: invalid UTF-8 names the text and the offset in it", "[tokenizer][pair]") {
  const WordPieceTokenizer tok = synthetic();
  auto first = tok.encode_pair("a \xff b", "c", 16);
  REQUIRE_FALSE(first.ok());
  CHECK(first.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(msg(first.status()), Catch::StartsWith("encode_pair: first text: ") && Catch::Contains("byte offset 2"));

  auto second = tok.encode_pair("a b", "cd \xc3", 16);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(msg(second.status()), Catch::StartsWith("encode_pair: second text: ") && Catch::Contains("byte offset 3"));

  // Both bad: the first is reported. Bytes past the truncation point still count.
  auto both = tok.encode_pair("\x80", "\x80", 16);
  REQUIRE_FALSE(both.ok());
  CHECK_THAT(msg(both.status()), Catch::StartsWith("encode_pair: first text: "));
  const std::string long_tail = "a " + std::string(300, ' ') + "b c d e f g \xed\xa0\x80";  // a surrogate
  auto tail = tok.encode_pair("x", long_tail, 4);
  REQUIRE_FALSE(tail.ok());
  CHECK_THAT(msg(tail.status()), Catch::Contains("second text: ") &&
                                     Catch::Contains("byte offset " + std::to_string(long_tail.size() - 3)));

  // With replace_invalid_utf8 each bad byte becomes U+FFFD, which clean_text drops.
  const WordPieceTokenizer lenient = synthetic(/*replace_invalid_utf8=*/true);
  auto replaced = lenient.encode_pair("a \xff b", "cd \xc3", 16);
  auto clean = lenient.encode_pair("a  b", "cd ", 16);
  REQUIRE(replaced.ok());
  REQUIRE(clean.ok());
  CHECK(replaced->ids == clean->ids);
  CHECK(replaced->second_start == clean->second_start);
}

TEST_CASE("tokenizer pair: real tokenizer errors and replacement", "[tokenizer][pair]") {
  const auto strict = minilm();
  if (!strict) return;
  auto bad = strict->encode_pair("where is my parcel?", "it left the dep\xf4t", 32);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(msg(bad.status()), Catch::Contains("second text: ") && Catch::Contains("byte offset 15"));
  const auto lenient = minilm(/*replace_invalid_utf8=*/true);
  auto ok = lenient->encode_pair("where is my parcel?", "it left the dep\xf4t", 32);
  REQUIRE(ok.ok());
  CHECK(ok->ids.size() <= 32);
  CHECK(ok->ids[size_t(ok->second_start) - 1] == strict->sep_id());
}

TEST_CASE("tokenizer pair: random pairs keep the layout, never exceed max_seq_len and cut only when needed",
          "[tokenizer][pair]") {
  const WordPieceTokenizer tok = synthetic();
  std::mt19937 rng(20240611);
  auto random_text = [&](int max_words) {
    std::string s;
    const int n = std::uniform_int_distribution<int>(0, max_words)(rng);
    for (int i = 0; i < n; ++i) {
      s += char('a' + rng() % 26);
      if (rng() % 3 == 0) s += 's';  // a second piece, "##s"
      s += rng() % 5 == 0 ? ", " : " ";
    }
    return s;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    const std::string a = random_text(trial % 7 == 0 ? 80 : 20), b = random_text(trial % 5 == 0 ? 80 : 20);
    const int max_len = std::uniform_int_distribution<int>(3, 70)(rng);
    INFO("first: " << a << "\nsecond: " << b << "\nmax_seq_len: " << max_len);
    const std::vector<int32_t> pa = pieces(tok, a), pb = pieces(tok, b);
    auto r = tok.encode_pair(a, b, max_len);
    REQUIRE(r.ok());
    const std::vector<int32_t>& ids = r->ids;
    REQUIRE(ids.size() <= size_t(max_len));
    REQUIRE(r->second_start >= 2);
    REQUIRE(size_t(r->second_start) < ids.size());
    CHECK(ids.front() == tok.cls_id());
    CHECK(ids[size_t(r->second_start) - 1] == tok.sep_id());
    CHECK(ids.back() == tok.sep_id());
    const size_t ka = size_t(r->second_start) - 2, kb = ids.size() - size_t(r->second_start) - 1;
    // Each kept part is a prefix of that text's pieces.
    REQUIRE(ka <= pa.size());
    REQUIRE(kb <= pb.size());
    CHECK(std::equal(pa.begin(), pa.begin() + ptrdiff_t(ka), ids.begin() + 1));
    CHECK(std::equal(pb.begin(), pb.begin() + ptrdiff_t(kb), ids.begin() + r->second_start));
    const size_t budget = size_t(max_len) - 3;
    if (pa.size() + pb.size() <= budget) {
      CHECK(ka == pa.size());  // fits: nothing is cut
      CHECK(kb == pb.size());
    } else {
      CHECK(ka + kb == budget);  // the budget is used in full
      if (ka < pa.size() && kb < pb.size()) {
        // Both cut: an even split, the odd piece to the longer text (the second on a tie).
        CHECK(ka == (pa.size() > pb.size() ? budget - budget / 2 : budget / 2));
      } else {
        // One cut: the whole one fits in half the budget (rounded up), the cut one keeps at least half.
        const size_t whole = ka < pa.size() ? kb : ka, cut = ka < pa.size() ? ka : kb;
        CHECK(whole <= budget - budget / 2);
        CHECK(cut >= budget / 2);
      }
    }
    const std::vector<int32_t> types = r->token_type_ids();
    CHECK(std::count(types.begin(), types.end(), 1) == ptrdiff_t(kb + 1));
  }
}
