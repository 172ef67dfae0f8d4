// libFuzzer target: read_text_lines (brisk/core/text_lines.h), the reader of every texts file the CLI and the
// benchmarks take (--calib, --texts, --faq, --mix). Checked against an independent split of the same bytes: the same
// lines in the same order (none empty, none holding '\n', one '\r' before each '\n' dropped, comments dropped unless
// kept); and an error only when no text is left, with a message.
#include <string>
#include <vector>

#include "brisk/core/text_lines.h"
#include "fuzz_util.h"

namespace {

// The reference: split at '\n', drop one trailing '\r', keep non-empty lines (and, unless keep_comments, those that
// do not start with '#').
std::vector<std::string> reference_lines(const std::string& bytes, bool keep_comments) {
  std::vector<std::string> lines;
  std::string line;
  auto flush = [&] {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && (keep_comments || line[0] != '#')) lines.push_back(line);
    line.clear();
  };
  for (char c : bytes) {
    if (c == '\n') {
      flush();
    } else {
      line.push_back(c);
    }
  }
  flush();
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = (brisk_fuzz::scratch_dir() / "texts.txt").string();
  brisk_fuzz::write_file(path, bytes);
  for (bool keep_comments : {false, true}) {
    const std::vector<std::string> expected = reference_lines(bytes, keep_comments);
    auto lines = brisk::read_text_lines(path, "--texts", keep_comments);
    if (!lines.ok()) {
      if (lines.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
      if (!expected.empty()) brisk_fuzz::invariant_failed("refused a file that holds texts");
      continue;
    }
    if (*lines != expected) brisk_fuzz::invariant_failed("the lines differ from the reference split");
  }
  return 0;
}
