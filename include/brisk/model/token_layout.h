// How the encoder lays a batch of packed sequences out as rows for its dense layers, and the index maps that go
// with it:
//   packed  (padding removed, EFF-FT) the real tokens back to back: rows = total tokens. Only attention sees the
//           padding, which it rebuilds from `starts` and `lengths`.
//   padded  every sequence padded to the batch's longest: rows = batch * max_len; pad rows carry pad_id, type 0
//           and their position, and are masked out of attention and pooling.
//
//   BRISK_ASSIGN_OR_RETURN(TokenLayout layout, make_token_layout(batch, /*remove_padding=*/true));
//   // layout.ids / type_ids / positions feed embed_layer_norm, starts / lengths feed self_attention and pooling,
//   // and layout.source_rows[r] is the packed token (or -1) that row r holds.
//
// Thread safety: a value type; make_token_layout is reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/encoder.h"

namespace brisk {

struct BRISK_API TokenLayout {
  bool packed = true;
  int64_t batch = 0;
  int64_t max_len = 0;
  int64_t rows = 0;
  std::vector<int32_t> starts;       // [batch] first row of sequence b
  std::vector<int32_t> lengths;      // [batch]
  std::vector<int32_t> ids;          // [rows]
  std::vector<int32_t> type_ids;     // [rows]
  std::vector<int32_t> positions;    // [rows]
  std::vector<int32_t> source_rows;  // [rows] the packed token index of each row; -1 for a pad row
};

// Fails (INVALID_ARGUMENT) on offsets that do not describe the batch or on more than INT32_MAX rows. A sequence's
// positions count from position_offset (BertConfig::position_offset(): RoBERTa's start after the padding id).
// With skip_pad_ids (BertConfig::positions_skip_pad_ids(), RoBERTa), a token equal to pad_id takes position pad_id
// and is not counted, and so do a padded layout's pad rows: transformers' create_position_ids_from_input_ids,
// padding_idx + cumsum(ids != padding_idx) on the other tokens.
BRISK_API StatusOr<TokenLayout> make_token_layout(const PackedSequences& batch, bool remove_padding, int32_t pad_id = 0,
                                                  int32_t position_offset = 0, bool skip_pad_ids = false);

}  // namespace brisk
