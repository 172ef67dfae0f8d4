// libFuzzer target: the text forms of a device ("cpu", "cuda", "cuda:N") and the token layout a batch of packed
// sequences is given for the encoder. The input is split at the first NUL: the part before is a device name; the
// rest, read as int32 values, is a batch: the first value is the number of sequences, the next ones their lengths
// (the offsets follow; hostile lengths make offsets that do not describe the batch), then token ids.
#include <cstring>
#include <vector>

#include "brisk/core/device.h"
#include "brisk/model/token_layout.h"
#include "fuzz_util.h"

namespace {

void check_device(std::string_view text) {
  auto spec = brisk::parse_device(text);
  if (!spec.ok()) return;
  // A parsed device prints as a name that parses back to it.
  auto again = brisk::parse_device(brisk::device_string(*spec));
  if (!again.ok() || again->type != spec->type || again->index != spec->index) {
    brisk_fuzz::invariant_failed("device_string does not parse back to the device", std::string(text));
  }
  (void)brisk::check_device_available(*spec);
}

void check_layout(std::string_view bytes) {
  std::vector<int32_t> values(bytes.size() / sizeof(int32_t));
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(int32_t));
  if (values.empty()) return;
  brisk::PackedSequences batch;
  batch.offsets = {0};
  const size_t n = std::min<size_t>(static_cast<uint32_t>(values[0]) % 64, values.size() - 1);
  for (size_t i = 1; i <= n; ++i) batch.offsets.push_back(batch.offsets.back() + (values[i] % 4096));
  batch.input_ids.assign(values.begin() + static_cast<std::ptrdiff_t>(1 + n), values.end());
  for (const bool remove_padding : {true, false}) {
    auto layout = brisk::make_token_layout(batch, remove_padding);
    if (!layout.ok()) continue;
    // Every real token sits in exactly one row of its sequence; every other row is a pad.
    std::vector<int> seen(batch.input_ids.size(), 0);
    for (int64_t b = 0; b < layout->batch; ++b) {
      for (int32_t i = 0; i < layout->lengths[b]; ++i) {
        const int64_t row = int64_t{layout->starts[b]} + i;
        if (row < 0 || row >= layout->rows) brisk_fuzz::invariant_failed("a sequence row is outside the layout");
        const int32_t t = layout->source_rows[static_cast<size_t>(row)];
        if (t != batch.offsets[b] + i || layout->ids[static_cast<size_t>(row)] != batch.input_ids[t]) {
          brisk_fuzz::invariant_failed("a row does not hold its token");
        }
        ++seen[static_cast<size_t>(t)];
      }
    }
    for (int s : seen) {
      if (s != 1) brisk_fuzz::invariant_failed("a token is in no row or in two");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = brisk_fuzz::split(data, size, '\0', 2);
  check_device(parts[0]);
  if (parts.size() > 1) check_layout(parts[1]);
  return 0;
}
