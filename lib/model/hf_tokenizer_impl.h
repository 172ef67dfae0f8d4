// Internal to lib/model/hf_tokenizer*.cc: HfTokenizer's tables, shared by loading (hf_tokenizer.cc) and encoding
// (hf_tokenizer_encode.cc).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "added_tokens.h"
#include "brisk/model/hf_tokenizer.h"
#include "bpe_model.h"
#include "byte_level.h"
#include "precompiled_charsmap.h"
#include "tokenizer_unicode.h"
#include "unigram_model.h"

namespace brisk {
namespace detail {

struct NormalizerStep {
  enum Kind { kPrecompiled, kReplace, kStrip, kNfkc, kNfc } kind;
  std::shared_ptr<const detail::PrecompiledCharsmap> charsmap;
  std::string literal;  // Replace: a String pattern (or a Regex of plain characters)
  char run_char = 0;    // Replace: a Regex "c{m,n}": run_char repeated run_min to run_max (-1: unbounded) times
  int64_t run_min = 0, run_max = 0;
  std::string content;
  bool strip_left = false, strip_right = false;  // Strip
};

// One pre-tokenizer: Metaspace, Split (Isolated, a known pattern) or ByteLevel.
struct PreTokenizerStep {
  enum Kind { kMetaspace, kSplit, kByteLevel } kind = kMetaspace;
  enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;  // Metaspace
  std::string replacement = "\xE2\x96\x81";                                   // Metaspace: U+2581
  bool split = true;                                                          // Metaspace
  SplitPattern pattern = SplitPattern::kGpt2;                                 // Split
  bool add_prefix_space = false, use_regex = true;                            // ByteLevel
};

// One item of a post-processor template: a special token's ids, or the text's (A: first, B: second).
struct TemplateItem {
  std::vector<int32_t> special;  // empty: a sequence
  bool second = false;
};

}  // namespace detail

struct HfTokenizer::Impl {
  std::vector<detail::NormalizerStep> normalizer;
  std::vector<detail::PreTokenizerStep> pre_tokenizer;
  enum class Model { kUnigram, kBpe } model_kind = Model::kUnigram;
  detail::UnigramModel unigram;
  detail::BpeModel bpe;
  // The added tokens matched in the raw text and (by their normalised content) in the normalizer's output, each
  // longest first.
  std::vector<detail::AddedPattern> raw_added, normalized_added;
  std::map<int32_t, std::string> added_by_id;
  std::vector<detail::TemplateItem> single, pair;
  int vocab_size = 0;

  std::string normalize(std::string_view text) const;
  // Appends the pieces `step` makes of word; at_start: word begins the text (Metaspace's "first" scheme).
  static void pre_tokenize(const detail::PreTokenizerStep& step, std::string_view word, bool at_start,
                           std::vector<std::pair<std::string, bool>>& out);
  // Appends the ids (and, when pieces != nullptr, the pieces) of text without the template.
  void encode_text(std::string_view text, std::vector<int32_t>& ids, std::vector<std::string>* pieces) const;
  size_t special_count(const std::vector<detail::TemplateItem>& t) const {
    size_t n = 0;
    for (const detail::TemplateItem& item : t) n += item.special.size();
    return n;
  }
  void apply(const std::vector<detail::TemplateItem>& t, std::span<const int32_t> a, std::span<const int32_t> b,
             std::vector<int32_t>& out, int32_t* second_start) const {
    for (const detail::TemplateItem& item : t) {
      if (!item.special.empty()) {
        out.insert(out.end(), item.special.begin(), item.special.end());
      } else if (item.second) {
        if (second_start != nullptr) *second_start = static_cast<int32_t>(out.size());
        out.insert(out.end(), b.begin(), b.end());
      } else {
        out.insert(out.end(), a.begin(), a.end());
      }
    }
  }
};

}  // namespace brisk
