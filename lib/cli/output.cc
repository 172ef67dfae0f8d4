// The stdin loop shared by `brisk embed` and `brisk classify`.
#include "output.h"

#include <iostream>
#include <vector>

#include "absl/strings/strip.h"

namespace brisk::cli {

int run_over_stdin_lines(absl::FunctionRef<Status(std::span<const std::string> texts)> run_and_print) {
  constexpr size_t kChunk = 64;
  std::vector<std::string> chunk;
  std::string line;
  size_t line_no = 0, first_line_of_chunk = 1, failed_lines = 0;
  auto flush = [&]() -> Status {
    Status s = run_and_print(chunk);
    if (absl::IsInvalidArgument(s)) {  // a text the runtime refuses (invalid UTF-8): find it, line by line
      s = absl::OkStatus();
      for (size_t i = 0; i < chunk.size() && s.ok(); ++i) {
        Status one = run_and_print(std::span<const std::string>(&chunk[i], 1));
        if (!absl::IsInvalidArgument(one)) {
          s = one;
          continue;
        }
        const size_t at = first_line_of_chunk + i;
        // The runtime numbers texts within a call; this call had one, the line number says more.
        const std::string why(absl::StripPrefix(one.message(), "text 0: "));
        const nlohmann::json error = {{"line", at}, {"error", why}};
        fmt::print("{}\n", error.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        std::fflush(stdout);
        report_error(absl::InvalidArgumentError(fmt::format("stdin line {}: {}", at, why)));
        ++failed_lines;
      }
    }
    chunk.clear();
    if (s.ok()) return s;
    return absl::Status(s.code(),
                        fmt::format("stdin lines {}..{}: {}", first_line_of_chunk, line_no, std::string(s.message())));
  };
  while (std::getline(std::cin, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (chunk.empty()) first_line_of_chunk = line_no;
    chunk.push_back(std::move(line));  // an empty line too: it is a text of its own
    if (chunk.size() == kChunk) {
      if (Status s = flush(); !s.ok()) return report_error(s);
    }
  }
  if (Status s = flush(); !s.ok()) return report_error(s);
  return failed_lines == 0 ? kExitOk : kExitError;
}

}  // namespace brisk::cli
