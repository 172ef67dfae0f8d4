// libFuzzer target: read_intent_examples on arbitrary files (label<TAB>text lines). A file that reads must satisfy
// what the fit relies on: at least two intents, two examples each, label ids in range, non-empty valid UTF-8
// texts and labels; and reading the same bytes from memory (parse_intent_examples) gives the same examples.
#include "brisk/core/utf8.h"
#include "brisk/model/intent_head.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto path = brisk_fuzz::scratch_dir() / "intents.tsv";
  brisk_fuzz::write_file(path, bytes);
  auto examples = brisk::read_intent_examples(path.string());
  auto again = brisk::parse_intent_examples(bytes, path.string());
  if (examples.ok() != again.ok()) brisk_fuzz::invariant_failed("file and memory readers disagree");
  if (!examples.ok()) {
    if (examples.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    if (examples.status().message() != again.status().message()) {
      brisk_fuzz::invariant_failed("file and memory readers give different errors");
    }
    return 0;
  }
  const brisk::IntentExamples& ex = *examples;
  if (ex.labels.size() < 2) brisk_fuzz::invariant_failed("fewer than two intents");
  if (ex.texts.size() != ex.label_ids.size() || ex.texts.size() != ex.lines.size()) {
    brisk_fuzz::invariant_failed("examples of different lengths");
  }
  for (int64_t n : ex.counts()) {
    if (n < brisk::kMinExamplesPerIntent) brisk_fuzz::invariant_failed("an intent with too few examples");
  }
  for (size_t i = 0; i < ex.texts.size(); ++i) {
    if (ex.label_ids[i] < 0 || static_cast<size_t>(ex.label_ids[i]) >= ex.labels.size()) {
      brisk_fuzz::invariant_failed("a label id out of range");
    }
    if (ex.texts[i].empty() || !brisk::is_valid_utf8(ex.texts[i])) brisk_fuzz::invariant_failed("a bad text");
    if (i > 0 && ex.lines[i] <= ex.lines[i - 1]) brisk_fuzz::invariant_failed("lines out of order");
  }
  for (const std::string& label : ex.labels) {
    if (label.empty() || !brisk::is_valid_utf8(label)) brisk_fuzz::invariant_failed("a bad label");
  }
  if (again->texts != ex.texts || again->labels != ex.labels || again->label_ids != ex.label_ids) {
    brisk_fuzz::invariant_failed("file and memory readers give different examples");
  }
  return 0;
}
