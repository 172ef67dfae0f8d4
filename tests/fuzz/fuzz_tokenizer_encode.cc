// libFuzzer target: WordPieceTokenizer::encode over arbitrary bytes with the real vocabulary (all-MiniLM-L6-v2,
// from $BRISK_MODEL_DIR or the default model folder), loaded once. The first input byte picks max_seq_len.
// Invariants, each a crash when broken:
//   - ids in [0, vocab_size), [CLS] first and [SEP] last, 2 <= length <= max_seq_len;
//   - invalid UTF-8 (by an independent validator here) is an InvalidArgument error naming the byte offset of the
//     first bad sequence; valid UTF-8 always encodes;
//   - with replace_invalid_utf8 every input encodes; encode_into agrees with encode.
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
  return 0;
}
