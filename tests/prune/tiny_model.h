// Helpers shared by the pruner's tests: the 3-layer, 4-head random BERT of tests/data/tiny_bert4 and random batches
// for it.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "brisk/model/encoder.h"
#include "test_util.h"

namespace brisk::testing {

struct TinyBert4 {
  std::string dir = (test_data_dir() / "tiny_bert4").string();
  BertConfig config = BertConfig::from_json_file(dir + "/config.json").value();
  EncoderWeights weights = EncoderWeights::load(dir, config).value();
};

// `count` random sequences of `len` tokens (ids 1..19), in one batch.
inline PackedSequences random_batch(int count, int len, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(1, 19);
  PackedSequences p;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> ids(static_cast<size_t>(len));
    for (auto& x : ids) x = id(rng);
    p.add(ids);
  }
  return p;
}

}  // namespace brisk::testing
