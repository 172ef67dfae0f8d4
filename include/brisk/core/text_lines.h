// The texts of a text file, one a line: what the CLI and the benchmarks read their calibration, held-out and
// traffic texts from. Lines end in "\n" or "\r\n"; empty lines are skipped, and so are lines that start with '#'
// unless `keep_comments`.
//
//   BRISK_ASSIGN_OR_RETURN(std::vector<std::string> texts, read_text_lines(path, "--texts"));
//
// Errors name `what` and the path: NotFound when it cannot be read, InvalidArgument when it holds no text or more
// than kMaxTextLinesFileBytes.
//
// Thread safety: may run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk {

inline constexpr int64_t kMaxTextLinesFileBytes = int64_t{1} << 30;

BRISK_API StatusOr<std::vector<std::string>> read_text_lines(const std::string& path, std::string_view what,
                                                             bool keep_comments = false);

}  // namespace brisk
