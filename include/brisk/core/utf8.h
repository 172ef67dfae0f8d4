// UTF-8 decoding and encoding, strict as Unicode requires (no overlong forms, no UTF-16 surrogates, nothing above
// U+10FFFF): brisk's one decoder, used by the tokenizer, the Prometheus writer and the semantic cache's text code.
//
//   for (size_t pos = 0; pos < text.size();) {
//     const Utf8Char c = decode_utf8(text, pos);
//     if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat("byte offset ", pos, ": ", c.error));
//     use(c.code_point);
//     pos += c.length;
//   }
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace brisk {

struct Utf8Char {
  int32_t code_point = -1;
  int length = 0;               // bytes; 0 when not well-formed
  const char* error = nullptr;  // why not, for messages: "a truncated multi-byte sequence", ...
  bool ok() const { return length > 0; }
};

// The code point starting at text[pos] (pos < text.size()).
inline Utf8Char decode_utf8(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char b0 = byte(pos);
  if (b0 < 0x80) return {b0, 1, nullptr};
  int len;
  int32_t c;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, c = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, c = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, c = b0 & 0x07;
  } else {
    return {-1, 0,
            (b0 & 0xC0) == 0x80          ? "a continuation byte with no lead byte"
            : (b0 == 0xC0 || b0 == 0xC1) ? "an overlong 2-byte lead byte"
                                         : "a byte that never occurs in UTF-8"};
  }
  for (int k = 1; k < len; ++k) {
    if (pos + k >= text.size() || (byte(pos + k) & 0xC0) != 0x80) return {-1, 0, "a truncated multi-byte sequence"};
    c = (c << 6) | (byte(pos + k) & 0x3F);
  }
  if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000)) return {-1, 0, "an overlong encoding"};
  if (c >= 0xD800 && c <= 0xDFFF) return {-1, 0, "an encoded UTF-16 surrogate (U+D800..U+DFFF)"};
  if (c > 0x10FFFF) return {-1, 0, "a code point above U+10FFFF"};
  return {c, len, nullptr};
}

// The bytes at text[pos] (pos < text.size()) that one U+FFFD replaces when decode_utf8(text, pos) is not ok: the
// "maximal subpart" of Unicode's chapter 3 (U+FFFD substitution of maximal subparts), as Python's
// errors="replace", Rust's String::from_utf8_lossy and WHATWG's decoder count them. That is the longest start of
// a well-formed sequence there, or the one byte when no sequence starts with it. So e2 82 becomes one U+FFFD;
// f0 80 two (0x80 cannot follow f0); ed a0 80 three (ed a0 would start a surrogate). Where the sequence is
// well-formed: its length.
inline size_t utf8_maximal_subpart(std::string_view text, size_t pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (table 3-7)
  if (b0 < 0x80) {
    return 1;
  } else if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 1;  // a continuation byte, C0, C1, F5..FF
  }
  size_t n = 1;
  for (; n < len && pos + n < text.size(); ++n) {
    const auto b = static_cast<unsigned char>(text[pos + n]);
    if (n == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) break;
  }
  return n;
}

// text.size() when all of text is well-formed, else the byte offset of the first sequence that is not.
inline size_t first_invalid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Char c = decode_utf8(text, pos);
    if (!c.ok()) return pos;
    pos += static_cast<size_t>(c.length);
  }
  return text.size();
}

inline bool is_valid_utf8(std::string_view text) { return first_invalid_utf8(text) == text.size(); }

// Appends code point cp (0 to U+10FFFF, not a surrogate) as UTF-8.
inline void append_utf8(std::string& out, int32_t cp) {
  const auto u = static_cast<uint32_t>(cp);
  if (u < 0x80) {
    out.push_back(static_cast<char>(u));
  } else if (u < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (u >> 6)));
    out.push_back(static_cast<char>(0x80 | (u & 0x3F)));
  } else if (u < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (u >> 12)));
    out.push_back(static_cast<char>(0x80 | ((u >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (u & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (u >> 18)));
    out.push_back(static_cast<char>(0x80 | ((u >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((u >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (u & 0x3F)));
  }
}

}  // namespace brisk
