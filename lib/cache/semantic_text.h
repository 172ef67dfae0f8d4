// Internal to lib/cache/semantic_*.cc: the word analysis the semantic-cache guards share (see the "Text"
// paragraph of brisk/cache/semantic_guards.h for the rules).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::cache::internal {

struct Word {
  std::string lower;         // lower-cased per code point (UTF-8)
  std::string stem;          // light suffix stem of `lower`
  bool upper_first = false;  // first code point is upper or title case
  bool upper_inner = false;  // an upper-case letter after the first code point ("iPhone", "ATM")
  bool has_alpha = false;
  bool has_digit = false;
  bool clitic = false;          // "n't", "'s", "'re", ... split off the word before
  bool sentence_start = false;  // first word of the text or after . ? !
  bool clause_start = false;    // sentence_start, or after , ; : ( ) and the like
};

struct QuestionText {
  std::vector<Word> words;
};

// Never fails: bytes that are not valid UTF-8 separate words.
QuestionText analyze(std::string_view text);
// analyze(text), remembered for the last kAnalyzedTexts texts (up to kMaxAnalyzedTextBytes each) analysed on this
// thread: a guard chain (polarity, number, entity) asks for the same two questions once per guard, and a lookup
// checks several candidates against one query. The pointer stays valid after later calls.
inline constexpr size_t kAnalyzedTexts = 4;
inline constexpr size_t kMaxAnalyzedTextBytes = 2048;
std::shared_ptr<const QuestionText> analyzed(std::string_view text);

// ASCII suffix rules: -ies/-ied -> y, -ing, -ed (not -eed), -es after s/x/z/ch/sh, -s (not -ss/-us/-is);
// then a doubled final consonant is undoubled ("stopp" -> "stop") and a final e dropped ("close" -> "clos"),
// each only when at least three letters remain.
std::string stem(std::string_view lower);

}  // namespace brisk::cache::internal
