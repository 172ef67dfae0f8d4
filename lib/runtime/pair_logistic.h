// Private to lib/runtime: the standardised logistic model PairVerifier scores with and fit_pair_verifier fits
// (brisk/runtime/pair_verifier.h): score = sigmoid(w . (x - mean) / scale + b), one mean, scale and weight per
// feature.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "brisk/core/status.h"
#include "brisk/model/intent_head.h"

namespace brisk {

struct PairLogistic {
  std::vector<float> mean, scale, weight;
  float bias = 0.0f;

  // x has weight.size() features.
  float score(const float* x) const {
    double z = bias;
    for (size_t i = 0; i < weight.size(); ++i) z += double(weight[i]) * (double(x[i]) - mean[i]) / scale[i];
    return static_cast<float>(1.0 / (1.0 + std::exp(-z)));
  }
};

// Fits a PairLogistic on the rows of x (n_features values each) listed in `rows`, labels 0 or 1 (both present):
//   - mean and scale are each feature's mean and population standard deviation over those rows (scale 1 where it
//     is ~0);
//   - the standardised features from `first_embedding` on enter the fit multiplied by embedding_weight, so their L2
//     penalty is 1 / embedding_weight^2 times the others' (0 leaves them out); the stored weights apply to the plain
//     standardised features;
//   - the fit is fit_intent_head's class-balanced logistic regression with two classes, whose two weight rows come
//     out opposite (w1 = -w0): the stored weight is w1 - w0, so its penalty is (l2 / 4) ||w||^2, and the minimiser
//     is scikit-learn's binary LogisticRegression(C = 2 / (l2 n), class_weight = "balanced") on the same scaled
//     features (tests/data/make_pair_logistic_golden.py).
StatusOr<PairLogistic> fit_pair_logistic(std::span<const float> x, size_t n_features, std::span<const int32_t> labels,
                                         std::span<const size_t> rows, double l2, size_t first_embedding,
                                         double embedding_weight, const IntentFitOptions& options = {});

}  // namespace brisk
