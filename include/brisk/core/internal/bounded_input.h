// Reading untrusted files and JSON with bounds: a size cap on every file read, and a depth cap on every JSON
// document, so that no input (a 100,000-level nested array, /dev/zero as a file) can exhaust the stack or memory.
// Internal to brisk: the library's own loaders (policy files, capacity curves, model configs, heads) share it.
//
//   BRISK_ASSIGN_OR_RETURN(std::string text, read_text_file_bounded(path, kMaxPolicyFileBytes, "policy file"));
//   BRISK_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_bounded(text, path));       // depth <= kMaxJsonDepth
//   return absl::InvalidArgumentError(absl::StrCat(path, ": max_batch_size is ", shown_json(j["max_batch_size"])));
//
// Thread safety: stateless; all functions may be called concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk {

// The deepest nesting of arrays and objects a brisk JSON document may have (the deepest real one, tokenizer.json,
// has 5 levels).
inline constexpr int kMaxJsonDepth = 64;

// The file's bytes, or an error naming the path and `what` when it is missing, is a directory, cannot be read, or
// holds more than max_bytes ("... is larger than 1048576 bytes; expected a <what> of at most ..."). Reads at most
// max_bytes + 1 bytes, so a device or a pipe that never ends (/dev/zero) is refused as too large.
BRISK_API StatusOr<std::string> read_text_file_bounded(const std::string& path, int64_t max_bytes,
                                                       std::string_view what);

// The JSON value of `text`, or an error naming `source`: invalid JSON (with nlohmann's position and reason), or
// arrays/objects nested deeper than max_depth. The parser is iterative and a too-deep document's values are
// discarded as they are read, so no depth of input recurses.
BRISK_API StatusOr<nlohmann::json> parse_json_bounded(std::string_view text, std::string_view source,
                                                      int max_depth = kMaxJsonDepth);

// A value for an error message: its JSON text cut to max_chars ("..." at the end). Serialises at most max_depth
// levels (deeper containers show as [...] / {...}) and stops after max_chars, so an unbounded value is never
// serialised whole.
BRISK_API std::string shown_json(const nlohmann::json& value, size_t max_chars = 60);

// A caller's string for an error message: printable ASCII kept, other bytes as '?', cut to max_chars ("..." after).
BRISK_API std::string shown_text(std::string_view text, size_t max_chars = 60);

}  // namespace brisk
