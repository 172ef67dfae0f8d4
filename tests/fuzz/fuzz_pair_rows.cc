// libFuzzer target: read_pair_rows on arbitrary files (a header, then label<TAB>category<TAB>cached<TAB>incoming
// [<TAB>split] lines). Rows that read have labels 0 or 1, non-empty fields and increasing lines; reading the same
// bytes from memory (parse_pair_rows) gives the same rows or the same error.
#include "brisk/runtime/pair_verifier.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto path = brisk_fuzz::scratch_dir() / "pairs.tsv";
  brisk_fuzz::write_file(path, bytes);
  auto rows = brisk::read_pair_rows(path.string());
  auto again = brisk::parse_pair_rows(bytes, path.string());
  if (rows.ok() != again.ok()) brisk_fuzz::invariant_failed("file and memory readers disagree");
  if (!rows.ok()) {
    if (rows.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    if (rows.status().message() != again.status().message()) {
      brisk_fuzz::invariant_failed("file and memory readers give different errors");
    }
    return 0;
  }
  for (size_t i = 0; i < rows->size(); ++i) {
    const brisk::PairRow& r = (*rows)[i];
    if ((r.label != 0 && r.label != 1) || r.category.empty() || r.cached.empty() || r.incoming.empty()) {
      brisk_fuzz::invariant_failed("a bad row");
    }
    if (i > 0 && r.line <= (*rows)[i - 1].line) brisk_fuzz::invariant_failed("lines out of order");
    if (r.split != (*rows)[0].split && (r.split.empty() || (*rows)[0].split.empty())) {
      brisk_fuzz::invariant_failed("rows with and without a split column");
    }
    const brisk::PairRow& m = (*again)[i];
    if (m.cached != r.cached || m.incoming != r.incoming || m.label != r.label) {
      brisk_fuzz::invariant_failed("file and memory readers give different rows");
    }
  }
  return 0;
}
