// Batches of token sequences as the layers below the runtime pass them: PackedSequences (one batch's token ids, back
// to back) and BatchShape (a candidate batch's size and costs, for memory estimates). They sit in core so that a
// Backend (brisk/runtime/backend.h), the encoder and the batcher share them without using one another.
//
//   PackedSequences batch;
//   batch.add(tokenizer.encode("hello world", 128).value());   // sequence 0: [offsets[0], offsets[1])
//   batch.add(ids_of_a_second_text);
//   batch.size();          // 2
//
// Thread safety: value types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace brisk {

// Token ids of several sequences stored back to back; sequence i is [offsets[i], offsets[i + 1]).
struct PackedSequences {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> token_type_ids;  // same length as input_ids, or empty for all zeros
  std::vector<int64_t> offsets{0};

  void add(std::span<const int32_t> ids) {
    input_ids.insert(input_ids.end(), ids.begin(), ids.end());
    offsets.push_back(static_cast<int64_t>(input_ids.size()));
  }
  int64_t size() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t total_tokens() const { return offsets.back(); }
  int64_t length(int64_t i) const { return offsets[i + 1] - offsets[i]; }
};

// The shape of a candidate batch, for the memory estimate.
struct BatchShape {
  size_t size = 0;        // requests
  size_t max_cost = 0;    // the largest request cost (e.g. tokens)
  size_t total_cost = 0;  // the sum of request costs
};

}  // namespace brisk
