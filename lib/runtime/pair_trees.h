// Private to lib/runtime: the gradient-boosted trees a PairVerifier may score with (PairTrees, brisk/runtime/
// pair_verifier.h) and their fit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "brisk/core/status.h"
#include "brisk/runtime/pair_verifier.h"

namespace brisk {

struct PairTreesFitOptions {
  int rounds = 300;             // trees
  int max_leaves = 7;           // per tree, grown best split first
  double learning_rate = 0.05;  // each tree's leaves are scaled by it
  double l2 = 1.0;              // on the leaf values: a leaf is -G / (H + l2)
  int min_samples_leaf = 20;
};

// Fits boosted regression trees on the logistic loss (Newton leaves, as XGBoost and scikit-learn's
// HistGradientBoostingClassifier do) on the first `use_features` features of the rows of x (n_features values each)
// listed in `rows`, labels 0 or 1 (both present). Deterministic: splits are searched feature by feature in order,
// thresholds halfway between distinct values, ties kept for the first found.
StatusOr<PairTrees> fit_pair_trees(std::span<const float> x, size_t n_features, size_t use_features,
                                   std::span<const int32_t> labels, std::span<const size_t> rows,
                                   const PairTreesFitOptions& options = {});

// The trees' margin (base + every tree's leaf) for one row of features, and the score: sigmoid of it.
float pair_trees_margin(const PairTrees& trees, const float* x);
float pair_trees_score(const PairTrees& trees, const float* x);

// Empty when the trees are well formed for `n_features` features: equal lengths; each internal node's feature in
// [0, n_features), a finite threshold, and children after it; finite leaf values and base; roots in range; at most
// kMaxPairTreeNodes nodes. Else what is wrong, naming the node.
std::string pair_trees_error(const PairTrees& trees, size_t n_features);

}  // namespace brisk
