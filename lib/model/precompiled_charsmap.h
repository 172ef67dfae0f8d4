// Internal to lib/model: SentencePiece's precompiled normalisation map (the `Precompiled` normalizer of a
// tokenizer.json, XLM-R's `nmt_nfkc`), applied as Hugging Face tokenizers 0.19 applies it (the spm_precompiled
// crate), so that the normalised text is the same byte for byte.
//
// The blob: a little-endian uint32 trie size in bytes, the trie (a darts-clone double array of uint32 units over
// UTF-8 bytes, whose values are offsets into the strings), then NUL-terminated replacement strings.
// normalize() walks the text by extended grapheme cluster (Unicode's rules, utf8proc's tables): a cluster shorter
// than 6 bytes is looked up whole first; otherwise, or when it is not in the trie, each code point is looked up
// alone. A lookup takes the SHORTEST key of the trie that prefixes the chunk (the first common-prefix result), as
// spm_precompiled does, and replaces the whole chunk with its string; a chunk with no key is kept.
//
//   BRISK_ASSIGN_OR_RETURN(PrecompiledCharsmap map, PrecompiledCharsmap::parse(blob, "tokenizer.json"));
//   std::string out = map.normalize("ｈｅｌｌｏ");  // "hello" with nmt_nfkc
//
// Thread safety: immutable after parse(); normalize() may run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/status.h"

namespace brisk::detail {

class PrecompiledCharsmap {
 public:
  // Errors name `source` and what is wrong with the blob (too short, a trie size past its end or not a multiple
  // of 4, replacement strings that are not UTF-8). An index out of the trie or the strings found later, at a
  // lookup, counts as no match: a hostile blob never reads out of bounds.
  static StatusOr<PrecompiledCharsmap> parse(std::string_view blob, std::string_view source);

  // text must be valid UTF-8.
  std::string normalize(std::string_view text) const;

 private:
  // The replacement of the shortest trie key that prefixes `chunk`, or false.
  bool transform(std::string_view chunk, std::string_view& replacement) const;

  std::vector<uint32_t> trie_;
  std::string strings_;
};

}  // namespace brisk::detail
