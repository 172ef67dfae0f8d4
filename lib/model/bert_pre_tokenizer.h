// Internal to lib/model/tokenizer*.cc: WordPieceTokenizer's character classes and the two consumers of its
// BertNormalizer walk (WordPieceTokenizer::Impl::normalise in tokenizer.cc): the BertPreTokenizer word splitter and
// the normalised text.
//
// Thread safety: the tables are immutable; a WordSplitter or NormalisedText belongs to one call.
#pragma once

#include <utf8proc.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "brisk/core/utf8.h"
#include "tokenizer_unicode.h"

namespace brisk::detail {

// Character classes of the BERT rules. kOther is an ordinary word character.
enum class CharClass : uint8_t { kOther, kDrop, kSpace, kPunct };

inline bool is_cjk(int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

inline bool is_ascii_punct(int32_t c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

inline bool is_punct(int32_t c) {
  if (c < 0x80) return is_ascii_punct(c);
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: return true;
    default: return false;
  }
}

// clean_text's "control": categories Cc, Cf, Co, Cs except \t \n \r (unassigned Cn is kept, as HF does).
inline bool is_control(int32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS: return true;
    default: return false;
  }
}

// Pre-tokenizer classes of ASCII characters (after normalisation): whitespace splits, punctuation isolates.
inline std::array<CharClass, 128> make_pre_ascii() {
  std::array<CharClass, 128> cls{};
  for (int c = 0; c < 128; ++c) {
    cls[c] = is_white_space(c) ? CharClass::kSpace : is_ascii_punct(c) ? CharClass::kPunct : CharClass::kOther;
  }
  return cls;
}
inline const std::array<CharClass, 128> kPreAscii = make_pre_ascii();

// The normaliser's consumers below take its output character by character: put(c) for a character the pre-tokenizer
// classes itself, or ascii_letter / letter / punct / space where the class is known, and added(id) for an added
// token the normaliser found in the raw text. going() false stops the walk (truncation).

// BertPreTokenizer: whitespace ends a word, punctuation is a word of its own. Hands each word to
// sink.word(utf8, nchars) and each added token to sink.special(id); either returns false to stop.
template <typename Sink>
struct WordSplitter {
  explicit WordSplitter(Sink& s) : sink(s) {}
  Sink& sink;
  std::string word;  // short words stay in the small-string buffer
  int nchars = 0;
  bool go = true;

  bool going() const { return go; }
  bool flush() {
    if (!word.empty()) {
      go = sink.word(std::string_view(word), nchars);
      word.clear();
      nchars = 0;
    }
    return go;
  }
  void space() { flush(); }
  void ascii_letter(char c) {
    word.push_back(c);
    ++nchars;
  }
  void letter(int32_t c) {
    append_utf8(word, c);
    ++nchars;
  }
  void punct(int32_t c) {
    if (!flush()) return;
    append_utf8(word, c);
    nchars = 1;
    flush();
  }
  void put(int32_t c) {
    if (c < 0x80) {
      const CharClass k = kPreAscii[c];
      if (k == CharClass::kSpace) return space();
      if (k == CharClass::kPunct) return punct(c);
      return ascii_letter(static_cast<char>(c));
    }
    if (is_white_space(c)) return space();
    if (is_punct(c)) return punct(c);
    letter(c);
  }
  // A character of text the normaliser already wrote out, classed as the fused walk classes it.
  void put_normalised(int32_t c) {
    switch (hf_char_override(c)) {
      case kNoOverride: return put(c);
      case kPunct: return punct(c);
      default: return letter(c);
    }
  }
  void added(int32_t id) {
    if (flush()) go = sink.special(id);
  }
  void finish() {
    if (go) flush();
  }
};

// The normaliser's output as text (BertNormalizer's: clean_text's whitespace and the CJK padding are spaces).
struct NormalisedText {
  std::string text;
  bool going() const { return true; }
  void space() { text.push_back(' '); }
  void ascii_letter(char c) { text.push_back(c); }
  void letter(int32_t c) { append_utf8(text, c); }
  void punct(int32_t c) { append_utf8(text, c); }
  void put(int32_t c) { append_utf8(text, c); }
  void added(int32_t) {}
};

}  // namespace brisk::detail
