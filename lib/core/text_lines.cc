// A text file's texts, one a line. See include/brisk/core/text_lines.h.
#include "brisk/core/text_lines.h"

#include "absl/strings/str_cat.h"
#include "brisk/core/internal/bounded_input.h"

namespace brisk {

StatusOr<std::vector<std::string>> read_text_lines(const std::string& path, std::string_view what, bool keep_comments) {
  StatusOr<std::string> text = read_text_file_bounded(path, kMaxTextLinesFileBytes, "text file of one text a line");
  if (!text.ok()) return Status(text.status().code(), absl::StrCat(std::string(what), ": ", text.status().message()));
  std::vector<std::string> lines;
  for (size_t begin = 0; begin < text->size();) {
    size_t end = text->find('\n', begin);
    if (end == std::string::npos) end = text->size();
    std::string_view line(text->data() + begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && (keep_comments || line.front() != '#')) lines.emplace_back(line);
    begin = end + 1;
  }
  if (lines.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " '", path, "' has no texts; expected a text file, one text a line"));
  }
  return lines;
}

}  // namespace brisk
