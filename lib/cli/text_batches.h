// Texts for the tool's calibration and evaluation steps: a file, one text a line, tokenized into batches.
#pragma once

#include <fmt/format.h>

#include <fstream>
#include <string>
#include <vector>

#include "brisk/model/encoder.h"
#include "brisk/model/text_tokenizer.h"

namespace brisk::cli {

// Empty lines are skipped; `max_texts` > 0 keeps only the first ones. `what` names the file's role in errors.
inline StatusOr<std::vector<PackedSequences>> read_text_batches(const std::string& path, const TextTokenizer& tok,
                                                                int max_seq_len, const char* what,
                                                                int64_t max_texts = 0) {
  constexpr int kTextsPerBatch = 32;
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        fmt::format("{} file '{}' cannot be read; expected a text file, one text a line", what, path));
  }
  std::vector<PackedSequences> batches;
  std::string line;
  int64_t texts = 0;
  while (std::getline(in, line) && (max_texts <= 0 || texts < max_texts)) {
    if (line.empty()) continue;
    BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.encode(line, max_seq_len));
    if (texts++ % kTextsPerBatch == 0) batches.emplace_back();
    batches.back().add(ids);
  }
  if (batches.empty()) {
    return absl::InvalidArgumentError(fmt::format("{} file '{}' has no texts; expected one text a line", what, path));
  }
  return batches;
}

}  // namespace brisk::cli
