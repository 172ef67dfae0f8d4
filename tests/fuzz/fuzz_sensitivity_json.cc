// libFuzzer target: the sensitivity table's JSON (brisk prune --sweep reads a file brisk sensitivity wrote, or a
// user edited). A table that parses must render as CSV and SVG and survive a JSON round trip unchanged.
#include "brisk/prune/sensitivity_report.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto table = brisk::prune::SensitivityTable::from_json(text, "sensitivity.json");
  if (!table.ok()) {
    if (table.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  (void)table->to_csv();
  (void)table->to_svg();
  auto again = brisk::prune::SensitivityTable::from_json(table->to_json(), "round trip");
  if (!again.ok() || again->points.size() != table->points.size() || again->mode != table->mode) {
    brisk_fuzz::invariant_failed("a parsed table does not survive a JSON round trip");
  }
  return 0;
}
