// How far an encoder's embeddings are from a reference's: what quantization plans, pruning and their benchmarks
// measure a candidate model by.
//
//   BRISK_ASSIGN_OR_RETURN(std::vector<float> ref, embed_all(fp32_encoder, batches, Pooling::kMean));
//   BRISK_ASSIGN_OR_RETURN(std::vector<float> got, embed_all(int8_encoder, batches, Pooling::kMean));
//   Fidelity f = compare_embeddings(ref, got, hidden);   // f.mean_cosine, f.worst_cosine
//
// Thread safety: embed_all is as safe as BertEncoder::embed (concurrent calls are fine); compare_embeddings is pure.
#pragma once

#include <cstdint>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/encoder.h"

namespace brisk {

// How close a candidate's embeddings are to the fp32 reference's, over the same batches.
struct BRISK_API Fidelity {
  double mean_cosine = 0.0;
  double worst_cosine = 0.0;
};

// Embeddings of every batch, concatenated ([texts, hidden]), L2-normalised.
BRISK_API StatusOr<std::vector<float>> embed_all(const BertEncoder& encoder,
                                                 const std::vector<PackedSequences>& batches, Pooling pooling);
BRISK_API Fidelity compare_embeddings(const std::vector<float>& reference, const std::vector<float>& candidate,
                                      int64_t hidden);

}  // namespace brisk
