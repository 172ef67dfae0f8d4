// Internal to lib/model/tokenizer*.cc: characters that HF tokenizers classifies differently from utf8proc.
#pragma once

#include <cstdint>

namespace brisk::detail {

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
