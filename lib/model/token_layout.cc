// make_token_layout: the rows the encoder's dense layers see, packed or padded, and their index maps.
#include "brisk/model/token_layout.h"

#include <algorithm>
#include <limits>

namespace brisk {

StatusOr<TokenLayout> make_token_layout(const PackedSequences& batch, bool remove_padding, int32_t pad_id,
                                        int32_t position_offset, bool skip_pad_ids) {
  const std::vector<int64_t>& offsets = batch.offsets;
  if (offsets.empty() || offsets.front() != 0 || batch.total_tokens() != static_cast<int64_t>(batch.input_ids.size()) ||
      !std::is_sorted(offsets.begin(), offsets.end())) {
    return absl::InvalidArgumentError(
        absl::StrCat("PackedSequences: offsets do not describe ", batch.input_ids.size(),
                     " tokens; expected a non-decreasing list from 0 to input_ids.size()"));
  }
  if (!batch.token_type_ids.empty() && batch.token_type_ids.size() != batch.input_ids.size()) {
    return absl::InvalidArgumentError(absl::StrCat("PackedSequences: token_type_ids has ", batch.token_type_ids.size(),
                                                   " entries; expected 0 or ", batch.input_ids.size()));
  }
  TokenLayout layout;
  layout.packed = remove_padding;
  layout.batch = batch.size();
  for (int64_t b = 0; b < layout.batch; ++b) layout.max_len = std::max(layout.max_len, batch.length(b));
  layout.rows = remove_padding ? batch.total_tokens() : layout.batch * layout.max_len;
  if (layout.rows > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch of ", layout.rows, " rows; expected at most ", std::numeric_limits<int32_t>::max()));
  }
  const auto rows = static_cast<size_t>(layout.rows);
  layout.ids.assign(rows, pad_id);
  layout.type_ids.assign(rows, 0);
  layout.positions.resize(rows);
  layout.source_rows.assign(rows, -1);
  for (int64_t b = 0; b < layout.batch; ++b) {
    const int64_t len = batch.length(b);
    const int64_t start = remove_padding ? offsets[b] : b * layout.max_len;
    layout.starts.push_back(static_cast<int32_t>(start));
    layout.lengths.push_back(static_cast<int32_t>(len));
    const int64_t slots = remove_padding ? len : layout.max_len;
    int32_t next_position = position_offset;
    for (int64_t i = 0; i < slots; ++i) {
      const auto r = static_cast<size_t>(start + i);
      if (i < len) {
        const int64_t t = offsets[b] + i;
        layout.source_rows[r] = static_cast<int32_t>(t);
        layout.ids[r] = batch.input_ids[static_cast<size_t>(t)];
        if (!batch.token_type_ids.empty()) layout.type_ids[r] = batch.token_type_ids[static_cast<size_t>(t)];
      }
      layout.positions[r] = skip_pad_ids && layout.ids[r] == pad_id ? pad_id : next_position++;
    }
  }
  return layout;
}

}  // namespace brisk
