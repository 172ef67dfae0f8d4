// Internal to lib/model's tokenizers (tokenizer*.cc, hf_tokenizer*.cc, byte_level.cc): how HF tokenizers classifies
// characters, where utf8proc alone would say otherwise.
#pragma once

#include <cstdint>

namespace brisk::detail {

// Unicode White_Space: Rust's char::is_whitespace (BertNormalizer, BertPreTokenizer, lstrip / rstrip, Strip) and
// Oniguruma's \s (the byte-level BPE patterns).
inline bool is_white_space(int32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
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

}  // namespace brisk::detail
