// Bounded file reads and JSON parsing. See brisk/core/internal/bounded_input.h.
#include "brisk/core/internal/bounded_input.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace brisk {

StatusOr<std::string> read_text_file_bounded(const std::string& path, int64_t max_bytes, std::string_view what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": file not found; expected a ", std::string(what)));
  }
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory; expected a ", std::string(what), " file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open for reading"));
  std::string text;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof buffer);
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > max_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": is larger than ", max_bytes, " bytes; expected a ",
                                                     std::string(what), " of at most ", max_bytes, " bytes"));
    }
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return text;
}

StatusOr<nlohmann::json> parse_json_bounded(std::string_view text, std::string_view source, int max_depth) {
  bool too_deep = false;
  const nlohmann::json::parser_callback_t limit = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth >= max_depth) too_deep = true;  // depth counts from 0 at the top level
    // Keep nothing once the limit is passed: the parser (iterative) still reads the rest, but builds no deep value.
    return !too_deep;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end(), limit, /*allow_exceptions=*/true);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source), ": is not valid JSON (", e.what(), "); expected a JSON document"));
  }
  if (too_deep) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": arrays and objects are nested more than ",
                                                   max_depth, " levels deep; expected at most ", max_depth));
  }
  return j;
}

namespace {

// Appends v's JSON text to out, stopping once out holds more than limit characters.
void append_shown(const nlohmann::json& v, int depth_left, size_t limit, std::string& out) {
  if (out.size() > limit) return;
  if (v.is_array() || v.is_object()) {
    const bool array = v.is_array();
    if (depth_left == 0) {
      out += array ? "[...]" : "{...}";
      return;
    }
    out += array ? '[' : '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= limit; ++it) {
      if (!first) out += ',';
      first = false;
      if (!array) out += nlohmann::json(it.key()).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + ':';
      append_shown(*it, depth_left - 1, limit, out);
    }
    out += array ? ']' : '}';
    return;
  }
  std::string scalar = v.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
  if (scalar.size() > limit + 1) scalar.resize(limit + 1);  // a long string: only what can be shown
  out += scalar;
}

}  // namespace

std::string shown_json(const nlohmann::json& value, size_t max_chars) {
  std::string text;
  append_shown(value, /*depth_left=*/8, max_chars, text);
  if (text.size() > max_chars) text = text.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return text;
}

std::string shown_text(std::string_view text, size_t max_chars) {
  std::string out;
  for (char c : text.substr(0, max_chars)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return text.size() > max_chars ? out + "..." : out;
}

}  // namespace brisk
