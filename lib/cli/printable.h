// printable(): user-provided text (paths, file contents, input texts, error messages that quote them) made safe
// to print on a terminal, so that a hostile file cannot move the cursor, recolour or retitle the user's terminal.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "brisk/core/utf8.h"

namespace brisk::cli {

// C0 controls (ESC starts every ANSI sequence, newlines could forge extra lines), DEL, C1 controls (U+0080..U+009F;
// U+009B is a one-character CSI) and bytes that are not well-formed UTF-8 become \xNN; other UTF-8 passes as is.
inline std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const Utf8Char d = decode_utf8(s, i);
    const bool escape =
        !d.ok() || d.code_point < 0x20 || d.code_point == 0x7F || (d.code_point >= 0x80 && d.code_point <= 0x9F);
    if (escape) {
      fmt::format_to(std::back_inserter(out), "\\x{:02X}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    out.append(s.substr(i, static_cast<size_t>(d.length)));
    i += static_cast<size_t>(d.length);
  }
  return out;
}

}  // namespace brisk::cli
