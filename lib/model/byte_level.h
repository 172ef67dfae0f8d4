// Internal to lib/model: the pieces of byte-level BPE tokenizers (GPT-2, Qwen2/3, Llama 3) that tokenizers
// implements with a regex and a byte map, hand-written here so that no regex engine is needed:
//   - the pre-tokenizer patterns, recognised by their exact text (a Split pre-tokenizer with another pattern is
//     refused at load): GPT-2's (ByteLevel use_regex), Qwen2's and Llama 3's; matched as Oniguruma matches them
//     (alternatives tried in order, greedy with backtracking; \p{L} and \p{N} by Unicode general category, \s the
//     White_Space property, (?i) contractions folding ſ to s);
//   - GPT-2's bytes_to_unicode map: every byte of a piece becomes one printable character.
//
//   std::vector<std::string_view> words;
//   split_words(SplitPattern::kQwen2, "I'm here  now", words);  // "I", "'m", " here", " ", " now"
//   std::string mapped = byte_level_encode(" here");               // "Ġhere"
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::detail {

enum class SplitPattern { kGpt2, kQwen2, kLlama3 };

// The pattern whose text is `regex`, or nullopt.
std::optional<SplitPattern> split_pattern_of(std::string_view regex);
// The text of the pattern (as tokenizer.json writes it).
std::string_view split_pattern_text(SplitPattern pattern);

// Appends the matches of `pattern` in text, in order; they cover all of text (each character matches one
// alternative). text must be valid UTF-8.
void split_words(SplitPattern pattern, std::string_view text, std::vector<std::string_view>& words);

// Each byte of text as the character bytes_to_unicode maps it to, in UTF-8.
std::string byte_level_encode(std::string_view text);

}  // namespace brisk::detail
