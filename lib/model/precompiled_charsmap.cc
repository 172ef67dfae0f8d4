// SentencePiece's precompiled normalisation map, as Hugging Face tokenizers applies it (precompiled_charsmap.h).
#include "precompiled_charsmap.h"

#include <utf8proc.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "brisk/core/utf8.h"

namespace brisk::detail {
namespace {

// darts-clone's unit layout.
bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1u) != 0; }
uint32_t value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t label(uint32_t unit) { return unit & ((1u << 31) | 0xFFu); }
uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

// A cluster this short is looked up whole first (spm_precompiled: grapheme.len() < 6).
constexpr size_t kWholeClusterBytes = 6;

}  // namespace

StatusOr<PrecompiledCharsmap> PrecompiledCharsmap::parse(std::string_view blob, std::string_view source) {
  if (blob.size() < 4) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": the Precompiled charsmap is ", blob.size(),
                                                   " bytes; expected at least 4 (the trie size)"));
  }
  uint32_t trie_bytes = 0;
  std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian, as x86-64 is
  if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": the Precompiled charsmap's trie size is ",
                                                   trie_bytes, " bytes; expected a multiple of 4 within the ",
                                                   blob.size() - 4, " bytes after it"));
  }
  PrecompiledCharsmap map;
  map.trie_.resize(trie_bytes / 4);
  if (trie_bytes > 0) std::memcpy(map.trie_.data(), blob.data() + 4, trie_bytes);
  map.strings_ = std::string(blob.substr(4 + trie_bytes));
  if (const size_t bad = first_invalid_utf8(map.strings_); bad != map.strings_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(source),
                                                   ": the Precompiled charsmap's strings are not UTF-8 at byte ",
                                                   4 + trie_bytes + bad, "; expected UTF-8 text"));
  }
  return map;
}

bool PrecompiledCharsmap::transform(std::string_view chunk, std::string_view& replacement) const {
  if (trie_.empty()) return false;
  size_t node = offset(trie_[0]);
  for (const char ch : chunk) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) return false;
    node ^= c;
    if (node >= trie_.size()) return false;
    const uint32_t unit = trie_[node];
    if (label(unit) != c) return false;
    node ^= offset(unit);
    if (node >= trie_.size()) return false;
    if (has_leaf(unit)) {
      const size_t start = value(trie_[node]);
      if (start >= strings_.size()) return false;
      const size_t end = strings_.find('\0', start);
      replacement =
          std::string_view(strings_).substr(start, (end == std::string::npos ? strings_.size() : end) - start);
      return true;
    }
  }
  return false;
}

std::string PrecompiledCharsmap::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  std::string_view replacement;
  size_t pos = 0;
  while (pos < text.size()) {
    // The extended grapheme cluster starting at pos.
    utf8proc_int32_t state = 0;
    Utf8Char first = decode_utf8(text, pos);
    size_t end = pos + static_cast<size_t>(first.length);
    int32_t previous = first.code_point;
    while (end < text.size()) {
      const Utf8Char next = decode_utf8(text, end);
      if (utf8proc_grapheme_break_stateful(previous, next.code_point, &state)) break;
      previous = next.code_point;
      end += static_cast<size_t>(next.length);
    }
    const std::string_view cluster = text.substr(pos, end - pos);
    if (cluster.size() < kWholeClusterBytes && transform(cluster, replacement)) {
      out += replacement;
    } else {
      for (size_t i = 0; i < cluster.size();) {
        const auto n = static_cast<size_t>(decode_utf8(cluster, i).length);
        const std::string_view one = cluster.substr(i, n);
        if (transform(one, replacement)) {
          out += replacement;
        } else {
          out += one;
        }
        i += n;
      }
    }
    pos = end;
  }
  return out;
}

}  // namespace brisk::detail
