// Embedding fidelity. See include/brisk/model/fidelity.h.
#include "brisk/model/fidelity.h"

#include <algorithm>
#include <cmath>

namespace brisk {

StatusOr<std::vector<float>> embed_all(const BertEncoder& encoder, const std::vector<PackedSequences>& batches,
                                       Pooling pooling) {
  std::vector<float> out;
  const int64_t h = encoder.hidden_size();
  for (const PackedSequences& batch : batches) {
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(batch.size() * h));
    BRISK_RETURN_IF_ERROR(encoder.embed(batch, pooling, /*normalize=*/true, out.data() + at));
  }
  return out;
}

Fidelity compare_embeddings(const std::vector<float>& reference, const std::vector<float>& candidate, int64_t hidden) {
  Fidelity f;
  const int64_t rows = static_cast<int64_t>(std::min(reference.size(), candidate.size())) / hidden;
  if (rows == 0) return f;
  f.worst_cosine = 1.0;
  double sum = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0.0, na = 0.0, nb = 0.0;
    for (int64_t j = 0; j < hidden; ++j) {
      const double a = reference[r * hidden + j], b = candidate[r * hidden + j];
      dot += a * b, na += a * a, nb += b * b;
    }
    const double cos = na > 0.0 && nb > 0.0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
    sum += cos;
    f.worst_cosine = std::min(f.worst_cosine, cos);
  }
  f.mean_cosine = sum / static_cast<double>(rows);
  return f;
}

}  // namespace brisk
