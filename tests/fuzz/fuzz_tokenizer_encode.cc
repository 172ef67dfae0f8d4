// libFuzzer target: WordPieceTokenizer::encode and encode_pair over arbitrary bytes with the real vocabulary
// (all-MiniLM-L6-v2, from $BRISK_MODEL_DIR or the default model folder), loaded once. The first input byte picks
// max_seq_len; encode gets the rest as one text; encode_pair gets the bytes after the second one, split in two at
// the fraction data[1] / 255 of their length.
// Invariants, each a crash when broken:
//   - ids in [0, vocab_size), [CLS] first and [SEP] last, 2 <= length <= max_seq_len;
//   - invalid UTF-8 (by an independent validator here) is an InvalidArgument error naming the byte offset of the
//     first bad sequence; valid UTF-8 always encodes;
//   - with replace_invalid_utf8 every input encodes; encode_into agrees with encode;
//   - encode_pair: [CLS] a [SEP] b [SEP] with 3 <= length <= max_seq_len, a and b prefixes of each text's pieces
//     (both whole when they fit, else filling the budget exactly); invalid UTF-8 is an InvalidArgument error that
//     names the text ("first text: " / "second text: ") and the offset of its first bad sequence in that text.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "brisk/model/tokenizer.h"
#include "brisk/runtime/runtime.h"
#include "fuzz_util.h"

namespace {

// The offset of the first byte sequence that is not well-formed UTF-8 (Unicode 15, table 3-7), or -1.
long first_invalid_utf8(const unsigned char* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return long(i);
    }
    if (i + len > n) return long(i);
    if (s[i + 1] < lo || s[i + 1] > hi) return long(i);
    for (size_t k = 2; k < len; ++k) {
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return long(i);
    }
    i += len;
  }
  return -1;
}

struct Tokenizers {
  brisk::WordPieceTokenizer strict, lenient;
};

const Tokenizers& tokenizers() {
  static const Tokenizers* t = [] {
    const std::string dir = brisk::default_model_dir();
    auto strict = brisk::WordPieceTokenizer::from_model_dir(dir);
    brisk::TokenizerOptions lenient_opts = strict.ok() ? strict->options() : brisk::TokenizerOptions{};
    lenient_opts.replace_invalid_utf8 = true;
    auto lenient = brisk::WordPieceTokenizer::from_vocab_file(dir + "/vocab.txt", lenient_opts);
    if (!strict.ok() || !lenient.ok()) {
      std::fprintf(stderr, "fuzz_tokenizer_encode: cannot load the tokenizer of %s (set BRISK_MODEL_DIR): %s\n",
                   dir.c_str(), std::string((strict.ok() ? lenient : strict).status().message()).c_str());
      std::exit(1);
    }
    return new Tokenizers{*std::move(strict), *std::move(lenient)};
  }();
  return *t;
}

void check_ids(const brisk::WordPieceTokenizer& tok, const std::vector<int32_t>& ids, int max_len) {
  if (ids.size() < 2 || ids.size() > size_t(max_len)) {
    brisk_fuzz::invariant_failed("length outside [2, max_seq_len]", std::to_string(ids.size()));
  }
  if (ids.front() != tok.cls_id() || ids.back() != tok.sep_id()) brisk_fuzz::invariant_failed("[CLS] ... [SEP]");
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.vocab_size()) brisk_fuzz::invariant_failed("id out of range", std::to_string(id));
  }
}

void check_pair_ids(const brisk::WordPieceTokenizer& tok, const brisk::EncodedPair& p, int max_len,
                    std::string_view first, std::string_view second) {
  const std::vector<int32_t>& ids = p.ids;
  if (ids.size() < 3 || ids.size() > size_t(max_len)) {
    brisk_fuzz::invariant_failed("pair length outside [3, max_seq_len]", std::to_string(ids.size()));
  }
  if (p.second_start < 2 || size_t(p.second_start) >= ids.size()) {
    brisk_fuzz::invariant_failed("second_start out of range", std::to_string(p.second_start));
  }
  if (ids.front() != tok.cls_id() || ids[size_t(p.second_start) - 1] != tok.sep_id() || ids.back() != tok.sep_id()) {
    brisk_fuzz::invariant_failed("not [CLS] a [SEP] b [SEP]");
  }
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.vocab_size()) brisk_fuzz::invariant_failed("pair id out of range", std::to_string(id));
  }
  auto whole_a = tok.encode(first, INT_MAX);
  auto whole_b = tok.encode(second, INT_MAX);
  if (!whole_a.ok() || !whole_b.ok()) brisk_fuzz::invariant_failed("encode refuses a text that encode_pair took");
  const size_t na = whole_a->size() - 2, nb = whole_b->size() - 2;
  const size_t ka = size_t(p.second_start) - 2, kb = ids.size() - size_t(p.second_start) - 1;
  if (ka > na || kb > nb || !std::equal(ids.begin() + 1, ids.begin() + 1 + ptrdiff_t(ka), whole_a->begin() + 1) ||
      !std::equal(ids.begin() + p.second_start, ids.end() - 1, whole_b->begin() + 1)) {
    brisk_fuzz::invariant_failed("a pair part is not a prefix of that text's pieces");
  }
  if (ka + kb != std::min(na + nb, size_t(max_len) - 3)) {
    brisk_fuzz::invariant_failed(
        "pair truncation cut too much or too little",
        std::to_string(ka) + "+" + std::to_string(kb) + " of " + std::to_string(na) + "+" + std::to_string(nb));
  }
}

// encode_pair over data[2..] split at the fraction data[1] / 255 of its length, max_seq_len 3 + data[0].
void check_pair(const Tokenizers& t, const uint8_t* data, size_t size) {
  if (size < 2) return;
  const int max_len = 3 + data[0];  // 3 .. 258
  const size_t n = size - 2, cut = n * data[1] / 255;
  const char* text = reinterpret_cast<const char*>(data) + 2;
  const std::string_view first(text, cut), second(text + cut, n - cut);
  const long bad_first = first_invalid_utf8(data + 2, cut), bad_second = first_invalid_utf8(data + 2 + cut, n - cut);

  auto pair = t.strict.encode_pair(first, second, max_len);
  if (bad_first >= 0 || bad_second >= 0) {
    if (pair.ok()) brisk_fuzz::invariant_failed("invalid UTF-8 encoded as a pair");
    const std::string want = std::string(bad_first >= 0 ? "first text: " : "second text: ") +
                             "invalid UTF-8 at byte offset " + std::to_string(bad_first >= 0 ? bad_first : bad_second) +
                             " ";
    if (pair.status().code() != absl::StatusCode::kInvalidArgument ||
        pair.status().message().find(want) == std::string_view::npos) {
      brisk_fuzz::invariant_failed("pair UTF-8 error does not name the text and offset",
                                   std::string(pair.status().message()) + " (wanted \"" + want + "\")");
    }
  } else {
    if (!pair.ok()) brisk_fuzz::invariant_failed("valid UTF-8 pair refused", std::string(pair.status().message()));
    check_pair_ids(t.strict, *pair, max_len, first, second);
  }

  auto lenient = t.lenient.encode_pair(first, second, max_len);
  if (!lenient.ok()) {
    brisk_fuzz::invariant_failed("replace_invalid_utf8 refused a pair", std::string(lenient.status().message()));
  }
  check_pair_ids(t.lenient, *lenient, max_len, first, second);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Tokenizers& t = tokenizers();
  if (size == 0) return 0;
  const int max_len = 2 + data[0];  // 2 .. 257
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const long bad = first_invalid_utf8(data + 1, size - 1);

  auto ids = t.strict.encode(text, max_len);
  if (bad >= 0) {
    if (ids.ok()) brisk_fuzz::invariant_failed("invalid UTF-8 encoded", "offset " + std::to_string(bad));
    const std::string want = "byte offset " + std::to_string(bad) + " ";
    if (ids.status().code() != absl::StatusCode::kInvalidArgument ||
        ids.status().message().find(want) == std::string_view::npos) {
      brisk_fuzz::invariant_failed("invalid UTF-8 error does not name the offset", std::string(ids.status().message()));
    }
  } else {
    if (!ids.ok()) brisk_fuzz::invariant_failed("valid UTF-8 refused", std::string(ids.status().message()));
    check_ids(t.strict, *ids, max_len);
  }

  auto lenient = t.lenient.encode(text, max_len);
  if (!lenient.ok())
    brisk_fuzz::invariant_failed("replace_invalid_utf8 refused", std::string(lenient.status().message()));
  check_ids(t.lenient, *lenient, max_len);
  std::vector<int32_t> into = {1, 2, 3};
  if (!t.lenient.encode_into(text, max_len, into).ok() || into != *lenient) {
    brisk_fuzz::invariant_failed("encode_into differs from encode");
  }
  check_pair(t, data, size);
  return 0;
}
