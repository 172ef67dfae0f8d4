// What every `brisk` subcommand that prints JSON lines shares: the exit codes, the error report, JSON strings and
// floats, and the stdin loop of `embed` and `classify` (one output line per input line).
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "brisk/core/status.h"
#include "printable.h"

namespace brisk::cli {

// Exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// Prints "brisk: error: <message>" on stderr; returns kExitError.
inline int report_error(const Status& status) {
  fmt::print(stderr, "brisk: error: {}\n", printable(std::string(status.message())));
  return kExitError;
}

// A JSON string; bytes that are not UTF-8 (only with --replace-invalid-utf8 can such a text get this far) become
// U+FFFD.
inline std::string json_string(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Floats in their shortest form that round-trips (nlohmann would print the double nearest the float, in 17 digits).
inline void append_float(std::string& buf, float v) { fmt::format_to(std::back_inserter(buf), "{}", v); }

// Runs `run_and_print` over stdin in chunks of 64 lines (a trailing '\r' dropped, empty lines kept), so that output
// streams and memory stays bounded. A chunk the runtime refuses with INVALID_ARGUMENT (invalid UTF-8) is retried line
// by line, and each refused line prints {"line":N,"error":...} in its place, so that output line N belongs to input
// line N. Returns the exit code: kExitError when a line was refused or a chunk failed otherwise.
int run_over_stdin_lines(absl::FunctionRef<Status(std::span<const std::string> texts)> run_and_print);

}  // namespace brisk::cli
