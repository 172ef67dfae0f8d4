// Private to lib/runtime: the standardised logistic model PairVerifier scores with and fit_pair_verifier fits
// (brisk/runtime/pair_verifier.h): score = sigmoid(w . (x - mean) / scale + b), one mean, scale and weight per
// feature.
#pragma once

#include <cmath>
#include <vector>

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

}  // namespace brisk
