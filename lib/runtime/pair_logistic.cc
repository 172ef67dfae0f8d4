// fit_pair_logistic (pair_logistic.h): standardise, weight the embedding features, fit two classes with
// fit_intent_head and fold its two rows into one.
#include "pair_logistic.h"

#include <algorithm>

namespace brisk {

StatusOr<PairLogistic> fit_pair_logistic(std::span<const float> x, size_t n_features, std::span<const int32_t> labels,
                                         std::span<const size_t> rows, double l2, size_t first_embedding,
                                         double embedding_weight, const IntentFitOptions& options) {
  PairLogistic m;
  m.mean.assign(n_features, 0.0f);
  m.scale.assign(n_features, 1.0f);
  std::vector<double> sum(n_features, 0.0), sum2(n_features, 0.0);
  for (size_t r : rows) {
    for (size_t j = 0; j < n_features; ++j) {
      const double v = x[r * n_features + j];
      sum[j] += v;
      sum2[j] += v * v;
    }
  }
  const double n = static_cast<double>(rows.size());
  for (size_t j = 0; j < n_features; ++j) {
    const double mean = sum[j] / n;
    const double var = std::max(0.0, sum2[j] / n - mean * mean);
    m.mean[j] = static_cast<float>(mean);
    m.scale[j] = var > 1e-12 ? static_cast<float>(std::sqrt(var)) : 1.0f;
  }
  std::vector<float> z(rows.size() * n_features);
  std::vector<int32_t> y(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < n_features; ++j) {
      const double factor = j >= first_embedding ? embedding_weight : 1.0;
      z[i * n_features + j] = static_cast<float>(factor * (x[rows[i] * n_features + j] - m.mean[j]) / m.scale[j]);
    }
    y[i] = labels[rows[i]];
  }
  IntentFitOptions o = options;
  o.l2 = l2;
  BRISK_ASSIGN_OR_RETURN(ClassificationHead head,
                         fit_intent_head(z, static_cast<int64_t>(n_features), y, {"different", "same"}, o));
  const float* w = head.layers.front().weight.data<float>();
  const float* b = head.layers.front().bias.data<float>();
  m.weight.resize(n_features);
  for (size_t j = 0; j < n_features; ++j) {
    const double factor = j >= first_embedding ? embedding_weight : 1.0;
    m.weight[j] = static_cast<float>(factor * (w[n_features + j] - w[j]));
  }
  m.bias = b[1] - b[0];
  return m;
}

}  // namespace brisk
