// fit_pair_trees, pair_trees_margin and pair_trees_error (pair_trees.h).
#include "pair_trees.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"

namespace brisk {
namespace {

struct Split {
  double gain = 0.0;
  int32_t feature = -1;
  float threshold = 0.0f;
};

// A leaf being grown: its rows, its gradient and Hessian sums, and its best split (feature -1: none).
struct Leaf {
  int32_t node = 0;
  std::vector<size_t> rows;
  double g = 0.0, h = 0.0;
  Split split;
};

double score_of(double g, double h, double l2) { return g * g / (h + l2); }

// Each feature's candidate thresholds: midpoints between its distinct values over the rows, or, past kMaxBins
// distinct values, between kMaxBins quantiles of them (as scikit-learn's histogram boosting bins its features).
constexpr size_t kMaxBins = 255;
std::vector<std::vector<float>> candidate_thresholds(std::span<const float> x, size_t n_features, size_t use_features,
                                                     std::span<const size_t> rows) {
  std::vector<std::vector<float>> cuts(use_features);
  for (size_t f = 0; f < use_features; ++f) {
    std::vector<float> v;
    v.reserve(rows.size());
    for (size_t r : rows) v.push_back(x[r * n_features + f]);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    if (v.size() > kMaxBins) {
      std::vector<float> q;
      for (size_t b = 0; b < kMaxBins; ++b) q.push_back(v[(b * (v.size() - 1)) / (kMaxBins - 1)]);
      q.erase(std::unique(q.begin(), q.end()), q.end());
      v = std::move(q);
    }
    for (size_t i = 0; i + 1 < v.size(); ++i) cuts[f].push_back(v[i] + (v[i + 1] - v[i]) * 0.5f);
  }
  return cuts;
}

Split best_split(const Leaf& leaf, std::span<const float> x, size_t n_features, size_t use_features,
                 const std::vector<std::vector<float>>& cuts, const std::vector<double>& grad,
                 const std::vector<double>& hess, const PairTreesFitOptions& o) {
  Split best;
  const size_t n = leaf.rows.size();
  const size_t min_leaf = static_cast<size_t>(std::max(1, o.min_samples_leaf));
  if (n < 2 * min_leaf) return best;
  const double parent = score_of(leaf.g, leaf.h, o.l2);
  std::vector<size_t> order(leaf.rows);
  for (size_t f = 0; f < use_features; ++f) {
    const auto value = [&](size_t r) { return x[r * n_features + f]; };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value(a) < value(b); });
    double gl = 0.0, hl = 0.0;
    for (size_t i = 0; i + 1 < n; ++i) {
      gl += grad[order[i]];
      hl += hess[order[i]];
      const size_t left = i + 1;
      if (left < min_leaf || n - left < min_leaf) continue;
      const float a = value(order[i]), b = value(order[i + 1]);
      if (!(a < b)) continue;  // a threshold between equal values splits nothing
      // The first candidate threshold at or above a; it must lie below b to split here.
      const auto cut = std::lower_bound(cuts[f].begin(), cuts[f].end(), a);
      if (cut == cuts[f].end() || !(*cut < b)) continue;
      const double gain = score_of(gl, hl, o.l2) + score_of(leaf.g - gl, leaf.h - hl, o.l2) - parent;
      if (gain > best.gain + 1e-12) best = {gain, static_cast<int32_t>(f), *cut};
    }
  }
  return best;
}

}  // namespace

StatusOr<PairTrees> fit_pair_trees(std::span<const float> x, size_t n_features, size_t use_features,
                                   std::span<const int32_t> labels, std::span<const size_t> rows,
                                   const PairTreesFitOptions& o) {
  if (use_features == 0 || use_features > n_features || rows.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("fit_pair_trees: ", use_features, " features of ", n_features,
                                                   " on ", rows.size(), " rows; expected at least one of each"));
  }
  if (o.rounds < 1 || o.max_leaves < 2 || !(o.learning_rate > 0.0) || !(o.l2 >= 0.0)) {
    return absl::InvalidArgumentError(
        "fit_pair_trees: rounds >= 1, max_leaves >= 2, learning_rate > 0, l2 >= 0 expected");
  }
  double positives = 0.0;
  for (size_t r : rows) positives += labels[r] == 1;
  const double n = static_cast<double>(rows.size());
  if (positives == 0.0 || positives == n) {
    return absl::InvalidArgumentError("fit_pair_trees: the rows have one label only; expected both");
  }
  PairTrees t;
  t.base = static_cast<float>(std::log(positives / (n - positives)));
  std::vector<double> margin(x.size() / n_features, t.base), grad(margin.size(), 0.0), hess(margin.size(), 0.0);
  const std::vector<std::vector<float>> cuts = candidate_thresholds(x, n_features, use_features, rows);
  for (int round = 0; round < o.rounds; ++round) {
    for (size_t r : rows) {
      const double p = 1.0 / (1.0 + std::exp(-margin[r]));
      grad[r] = p - labels[r];
      hess[r] = std::max(p * (1.0 - p), 1e-12);
    }
    const auto new_node = [&t] {
      t.feature.push_back(-1);
      t.threshold.push_back(0.0f);
      t.left.push_back(-1);
      t.right.push_back(-1);
      t.value.push_back(0.0f);
      return static_cast<int32_t>(t.feature.size() - 1);
    };
    std::vector<Leaf> leaves(1);
    leaves[0].node = new_node();
    t.roots.push_back(leaves[0].node);
    leaves[0].rows.assign(rows.begin(), rows.end());
    for (size_t r : rows) {
      leaves[0].g += grad[r];
      leaves[0].h += hess[r];
    }
    leaves[0].split = best_split(leaves[0], x, n_features, use_features, cuts, grad, hess, o);
    // Best first: split the leaf with the largest gain until max_leaves or no gain is left.
    while (static_cast<int>(leaves.size()) < o.max_leaves) {
      size_t at = leaves.size();
      for (size_t i = 0; i < leaves.size(); ++i) {
        if (leaves[i].split.feature >= 0 && (at == leaves.size() || leaves[i].split.gain > leaves[at].split.gain)) {
          at = i;
        }
      }
      if (at == leaves.size()) break;
      Leaf parent = std::move(leaves[at]);
      Leaf lo, hi;
      lo.node = new_node();
      hi.node = new_node();
      t.feature[parent.node] = parent.split.feature;
      t.threshold[parent.node] = parent.split.threshold;
      t.left[parent.node] = lo.node;
      t.right[parent.node] = hi.node;
      for (size_t r : parent.rows) {
        Leaf& side = x[r * n_features + parent.split.feature] <= parent.split.threshold ? lo : hi;
        side.rows.push_back(r);
        side.g += grad[r];
        side.h += hess[r];
      }
      lo.split = best_split(lo, x, n_features, use_features, cuts, grad, hess, o);
      hi.split = best_split(hi, x, n_features, use_features, cuts, grad, hess, o);
      leaves[at] = std::move(lo);
      leaves.push_back(std::move(hi));
    }
    for (const Leaf& leaf : leaves) {
      const double v = -o.learning_rate * leaf.g / (leaf.h + o.l2);
      t.value[leaf.node] = static_cast<float>(v);
      for (size_t r : leaf.rows) margin[r] += static_cast<float>(v);
    }
  }
  return t;
}

float pair_trees_margin(const PairTrees& t, const float* x) {
  double m = t.base;
  for (int32_t node : t.roots) {
    while (t.feature[node] >= 0) node = x[t.feature[node]] <= t.threshold[node] ? t.left[node] : t.right[node];
    m += t.value[node];
  }
  return static_cast<float>(m);
}

float pair_trees_score(const PairTrees& t, const float* x) {
  return static_cast<float>(1.0 / (1.0 + std::exp(-double(pair_trees_margin(t, x)))));
}

std::string pair_trees_error(const PairTrees& t, size_t n_features) {
  const size_t n = t.feature.size();
  if (t.threshold.size() != n || t.left.size() != n || t.right.size() != n || t.value.size() != n) {
    return absl::StrCat("the node arrays have ", n, ", ", t.threshold.size(), ", ", t.left.size(), ", ", t.right.size(),
                        " and ", t.value.size(), " entries; expected equal lengths");
  }
  if (n > static_cast<size_t>(kMaxPairTreeNodes)) {
    return absl::StrCat(n, " nodes; expected at most ", kMaxPairTreeNodes);
  }
  if (t.roots.empty()) return "no trees; expected at least one root";
  if (!std::isfinite(t.base)) return absl::StrCat("base is ", t.base, "; expected a finite value");
  for (int32_t root : t.roots) {
    if (root < 0 || static_cast<size_t>(root) >= n) return absl::StrCat("a root is ", root, "; expected [0, ", n, ")");
  }
  for (size_t i = 0; i < n; ++i) {
    const int32_t f = t.feature[i];
    if (f < 0) {
      if (!std::isfinite(t.value[i])) return absl::StrCat("leaf ", i, " has value ", t.value[i], "; expected finite");
      continue;
    }
    if (static_cast<size_t>(f) >= n_features) {
      return absl::StrCat("node ", i, " splits on feature ", f, "; expected [0, ", n_features, ")");
    }
    if (!std::isfinite(t.threshold[i])) {
      return absl::StrCat("node ", i, " has threshold ", t.threshold[i], "; expected finite");
    }
    for (int32_t child : {t.left[i], t.right[i]}) {
      if (child <= static_cast<int32_t>(i) || static_cast<size_t>(child) >= n) {
        return absl::StrCat("node ", i, " has child ", child, "; expected a node after it, below ", n);
      }
    }
  }
  return {};
}

}  // namespace brisk
