// The byte-level BPE pre-tokenizer patterns and byte map, hand-written (byte_level.h).
#include "byte_level.h"

#include <utf8proc.h>

#include <array>

#include "brisk/core/utf8.h"
#include "tokenizer_unicode.h"

namespace brisk::detail {
namespace {

constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum class Kind { kLetter, kNumber, kSpace, kOther };

Kind kind_of(int32_t c) {
  if (is_white_space(c)) return Kind::kSpace;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return Kind::kLetter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return Kind::kNumber;
    default: return Kind::kOther;
  }
}

// A cursor over the code points of a UTF-8 text.
struct Text {
  std::string_view s;
  int32_t at(size_t pos) const { return pos < s.size() ? decode_utf8(s, pos).code_point : -1; }
  size_t next(size_t pos) const { return pos + static_cast<size_t>(decode_utf8(s, pos).length); }
  Kind kind(size_t pos) const { return kind_of(at(pos)); }
  // The end of the run of characters from pos whose kind is `k` (pos itself when there is none).
  size_t run(size_t pos, Kind k) const {
    while (pos < s.size() && kind(pos) == k) pos = next(pos);
    return pos;
  }
};

bool is_cr_lf(int32_t c) { return c == '\r' || c == '\n'; }

// 's 't 're 've 'm 'll 'd at pos; case-insensitive when `fold` (with ſ, U+017F, folding to s).
size_t contraction(const Text& t, size_t pos, bool fold) {
  if (t.at(pos) != '\'') return 0;
  const size_t p = pos + 1;
  auto is = [&](size_t at, char c) {
    const int32_t x = t.at(at);
    if (x == c) return true;
    if (!fold) return false;
    if (c == 's' && x == 0x17F) return true;
    return x == c - 'a' + 'A';
  };
  auto width = [&](size_t at) { return t.next(at) - at; };
  for (const char c : {'s', 't'}) {
    if (is(p, c)) return 1 + width(p);
  }
  if (is(p, 'r') && is(p + 1, 'e')) return 3;
  if (is(p, 'v') && is(p + 1, 'e')) return 3;
  if (is(p, 'm')) return 2;
  if (is(p, 'l') && is(p + 1, 'l')) return 3;
  if (is(p, 'd')) return 2;
  return 0;
}

// \s+(?!\S) then \s+ at pos (a whitespace character): the run, less its last character when a non-space follows
// and the run is longer than one.
size_t trailing_space(const Text& t, size_t pos) {
  const size_t end = t.run(pos, Kind::kSpace);
  if (end == t.s.size()) return end - pos;
  size_t last = pos;
  for (size_t q = pos; q < end; q = t.next(q)) last = q;
  return last > pos ? last - pos : end - pos;
}

size_t match_gpt2(const Text& t, size_t pos) {
  if (const size_t n = contraction(t, pos, false)) return n;
  size_t p = pos;
  if (t.at(p) == ' ' && p + 1 < t.s.size() && t.kind(p + 1) != Kind::kSpace) ++p;
  const Kind k = t.kind(p);
  if (p > pos || k != Kind::kSpace) return t.run(p, k) - pos;  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
  return trailing_space(t, pos);
}

size_t match_qwen(const Text& t, size_t pos, bool numbers_of_three) {
  if (const size_t n = contraction(t, pos, true)) return n;
  const int32_t c = t.at(pos);
  const Kind k = kind_of(c);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (k == Kind::kLetter) return t.run(pos, Kind::kLetter) - pos;
  if (k != Kind::kNumber && !is_cr_lf(c) && t.next(pos) < t.s.size() && t.kind(t.next(pos)) == Kind::kLetter) {
    return t.run(t.next(pos), Kind::kLetter) - pos;
  }
  // \p{N} or \p{N}{1,3}
  if (k == Kind::kNumber) {
    size_t end = t.next(pos);
    for (int more = 0; numbers_of_three && more < 2 && end < t.s.size() && t.kind(end) == Kind::kNumber; ++more) {
      end = t.next(end);
    }
    return end - pos;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  size_t p = pos;
  if (c == ' ' && t.next(pos) < t.s.size() && t.kind(t.next(pos)) == Kind::kOther) p = t.next(pos);
  if (t.kind(p) == Kind::kOther) {
    size_t end = t.run(p, Kind::kOther);
    while (end < t.s.size() && is_cr_lf(t.at(end))) end = t.next(end);
    return end - pos;
  }
  // \s*[\r\n]+: up to the last CR or LF of the whitespace run.
  const size_t run_end = t.run(pos, Kind::kSpace);
  size_t last_cr_lf = std::string_view::npos;
  for (size_t q = pos; q < run_end; q = t.next(q)) {
    if (is_cr_lf(t.at(q))) last_cr_lf = q;
  }
  if (last_cr_lf != std::string_view::npos) return last_cr_lf + 1 - pos;
  return trailing_space(t, pos);
}

}  // namespace

std::optional<SplitPattern> split_pattern_of(std::string_view regex) {
  if (regex == kGpt2) return SplitPattern::kGpt2;
  if (regex == kQwen2) return SplitPattern::kQwen2;
  if (regex == kLlama3) return SplitPattern::kLlama3;
  return std::nullopt;
}

std::string_view split_pattern_text(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::kGpt2: return kGpt2;
    case SplitPattern::kQwen2: return kQwen2;
    case SplitPattern::kLlama3: return kLlama3;
  }
  return kGpt2;
}

void split_words(SplitPattern pattern, std::string_view text, std::vector<std::string_view>& words) {
  const Text t{text};
  for (size_t pos = 0; pos < text.size();) {
    size_t n =
        pattern == SplitPattern::kGpt2 ? match_gpt2(t, pos) : match_qwen(t, pos, pattern == SplitPattern::kLlama3);
    if (n == 0) n = t.next(pos) - pos;  // not reached: every character matches an alternative
    words.push_back(text.substr(pos, n));
    pos += n;
  }
}

std::string byte_level_encode(std::string_view text) {
  static const std::array<int32_t, 256> kMap = [] {
    std::array<int32_t, 256> map{};
    int32_t extra = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      map[static_cast<size_t>(b)] = printable ? b : extra++;
    }
    return map;
  }();
  std::string out;
  out.reserve(text.size() * 2);
  for (const char c : text) append_utf8(out, kMap[static_cast<unsigned char>(c)]);
  return out;
}

}  // namespace brisk::detail
