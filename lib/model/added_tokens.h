// Internal to lib/model's tokenizers (tokenizer*.cc, hf_tokenizer*.cc): tokenizer.json's "added_tokens", as HF
// tokenizers' AddedVocabulary reads and matches them, for WordPieceTokenizer and HfTokenizer alike. A tokenizer
// matches its tokens in two passes: those with normalized false in the raw text, then the others, by their
// normalised content, in the normaliser's output of the text between the first pass's matches.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "brisk/core/status.h"
#include "brisk/model/tokenizer.h"

namespace brisk::detail {

// One tokenizer.json added_tokens entry: its flags and its id.
struct AddedTokenEntry {
  AddedToken token;
  int32_t id = 0;
};

// Reads tokenizer.json's "added_tokens" (null: none). Each entry needs a non-empty UTF-8 "content" and an "id" in
// [0, 2^30); "normalized" defaults to !special as in tokenizers; single_word true is refused (brisk does not
// implement it) rather than ignored. Errors name `source`.
StatusOr<std::vector<AddedTokenEntry>> parse_added_tokens(const nlohmann::json& added_tokens, std::string_view source);

// An added token as one matching pass looks for it: `text` is its content, or for a normalized token its content
// after the normaliser.
struct AddedPattern {
  std::string text;
  int32_t id = 0;
  bool lstrip = false, rstrip = false;
};

// Sorts patterns longest first, so that the first one that matches at a position is the leftmost-longest match.
void sort_longest_first(std::vector<AddedPattern>& patterns);

// A piece of a text: an added token's id, or a stretch [begin, end) of ordinary text (added_id -1).
struct AddedSegment {
  size_t begin, end;
  int32_t added_id;
};

// Splits UTF-8 text around `patterns` (sorted longest first), leftmost-longest; lstrip takes the whitespace before
// a match (not past the previous match), rstrip the whitespace after it. Matches are found as if before any strip
// (tokenizers' AddedVocabulary::find_matches): a match inside the whitespace an rstrip took still counts, and its
// segment may begin before the last one's end.
std::vector<AddedSegment> split_added(std::string_view text, std::span<const AddedPattern> patterns);

}  // namespace brisk::detail
