// printable(): user-provided text (paths, file contents, input texts, error messages that quote them) made safe
// to print on a terminal, so that a hostile file cannot move the cursor, recolour or retitle the user's terminal.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace brisk::cli {

// C0 controls (ESC starts every ANSI sequence, newlines could forge extra lines), DEL, C1 controls (U+0080..U+009F;
// U+009B is a one-character CSI) and bytes that are not well-formed UTF-8 become \xNN; other UTF-8 passes as is.
inline std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    // Sequence length from the lead byte; 0 for bytes that cannot lead one (0x80..0xC1: continuation bytes and
    // overlong leads; 0xF5..0xFF: past U+10FFFF).
    size_t len = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    for (size_t k = 1; k < len; ++k) {
      if (i + k >= n || (p[i + k] & 0xC0) != 0x80) len = 0;
    }
    const bool c1 = len == 2 && c == 0xC2 && p[i + 1] <= 0x9F;
    if (len == 0 || c1 || c < 0x20 || c == 0x7F) {
      fmt::format_to(std::back_inserter(out), "\\x{:02X}", c);
      ++i;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace brisk::cli
