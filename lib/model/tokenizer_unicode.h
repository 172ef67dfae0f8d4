// Internal to lib/model's tokenizers (tokenizer*.cc, hf_tokenizer*.cc, byte_level.cc): how HF tokenizers classifies
// characters, where utf8proc alone would say otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "brisk/core/utf8.h"

namespace brisk::detail {

// Unicode White_Space: Rust's char::is_whitespace (BertNormalizer, BertPreTokenizer, lstrip / rstrip, Strip) and
// Oniguruma's \s (the byte-level BPE patterns).
inline bool is_white_space(int32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

// The end of the whitespace (White_Space) that starts at pos in UTF-8 text.
inline size_t white_space_after(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    const Utf8Char c = decode_utf8(text, pos);
    if (!is_white_space(c.code_point)) break;
    pos += static_cast<size_t>(c.length);
  }
  return pos;
}

// The start of the whitespace that ends at pos, not before `floor` (a character boundary).
inline size_t white_space_before(std::string_view text, size_t pos, size_t floor) {
  while (pos > floor) {
    size_t prev = pos - 1;
    while (prev > floor && (static_cast<unsigned char>(text[prev]) & 0xC0) == 0x80) --prev;
    if (!is_white_space(decode_utf8(text, prev).code_point)) break;
    pos = prev;
  }
  return pos;
}

// What HF does with a character, where that differs from what its Unicode 15 category implies.
enum HfCharOverride : uint8_t {
  kNoOverride = 0,
  kVerbatim,  // an ordinary word character: not punctuation, not a mark, not a control, no decomposition
  kPunct,     // isolated as punctuation
  kMark,      // Mn: dropped when stripping accents, else ordinary
  kControl,   // Cf: dropped by clean_text, else ordinary
};

HfCharOverride hf_char_override(int32_t c);

// Whether Unicode 9.0 had not assigned `c`. HF tokenizers' NFC and NFKC normalizers carry Unicode 9.0's tables, where
// such a code point is a starter that neither decomposes nor composes; utf8proc's are Unicode 15's.
bool newer_than_unicode9(int32_t c);

}  // namespace brisk::detail
