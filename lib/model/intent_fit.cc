// Few-shot intent heads: fit_intent_head, class-balanced L2-regularised multinomial logistic regression by L-BFGS
// (the objective and the solver are documented in brisk/model/intent_head.h).
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "brisk/model/intent_head.h"

namespace brisk {

namespace {

constexpr int kLbfgsPairs = 10;
constexpr int kMaxLineSearchSteps = 60;
constexpr double kArmijo = 1e-4;
// The fit also stops when this many iterations in a row change J by less than 64 ulp (relative), scipy's ftol for
// scikit-learn's lbfgs: past that point the gradient is rounding noise and no tolerance below it is reachable.
constexpr int kStalledIterations = 3;

// The objective J over theta = [W (k x d, row-major), b (k)] on fixed data, in double precision.
class SoftmaxObjective {
 public:
  SoftmaxObjective(std::vector<double> x, std::vector<int32_t> y, std::vector<double> sample_weight, int64_t dim,
                   int64_t classes, double l2)
      : x_(std::move(x)), y_(std::move(y)), s_(std::move(sample_weight)), d_(dim), k_(classes), l2_(l2) {}

  size_t num_params() const { return static_cast<size_t>(k_ * (d_ + 1)); }

  // J(theta); writes dJ/dtheta into grad.
  double eval(const std::vector<double>& theta, std::vector<double>& grad) const {
    const int64_t n = static_cast<int64_t>(y_.size());
    const double* w = theta.data();
    const double* b = theta.data() + k_ * d_;
    std::fill(grad.begin(), grad.end(), 0.0);
    double* gw = grad.data();
    double* gb = grad.data() + k_ * d_;
    std::vector<double> z(static_cast<size_t>(k_));
    double loss = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double* xi = x_.data() + i * d_;
      double top = -INFINITY;
      for (int64_t c = 0; c < k_; ++c) {
        double v = b[c];
        const double* wc = w + c * d_;
        for (int64_t j = 0; j < d_; ++j) v += wc[j] * xi[j];
        z[static_cast<size_t>(c)] = v;
        top = std::max(top, v);
      }
      double sum = 0.0;
      for (double& v : z) sum += (v = std::exp(v - top));
      const int32_t yi = y_[static_cast<size_t>(i)];
      const double si = s_[static_cast<size_t>(i)];
      // CE = logsumexp(z) - z_y = log(sum) - log(exp(z_y - top)).
      loss += si * (std::log(sum) - std::log(z[static_cast<size_t>(yi)]));
      for (int64_t c = 0; c < k_; ++c) {
        const double r = si / static_cast<double>(n) * (z[static_cast<size_t>(c)] / sum - (c == yi ? 1.0 : 0.0));
        if (r == 0.0) continue;
        double* gwc = gw + c * d_;
        for (int64_t j = 0; j < d_; ++j) gwc[j] += r * xi[j];
        gb[c] += r;
      }
    }
    double penalty = 0.0;
    for (int64_t p = 0; p < k_ * d_; ++p) {
      penalty += w[p] * w[p];
      gw[p] += l2_ * w[p];
    }
    return loss / static_cast<double>(n) + 0.5 * l2_ * penalty;
  }

 private:
  std::vector<double> x_;
  std::vector<int32_t> y_;
  std::vector<double> s_;
  int64_t d_, k_;
  double l2_;
};

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double inf_norm(const std::vector<double>& a) {
  double m = 0.0;
  for (double v : a) m = std::max(m, std::abs(v));
  return m;
}

struct LbfgsResult {
  std::vector<double> theta;
  double f = 0.0;
  double grad_inf = 0.0;
  int iterations = 0;
  bool converged = false;
};

// Minimises the objective from theta = 0: L-BFGS two-loop recursion, backtracking Armijo line search (quadratic
// interpolation, step factor in [0.1, 0.5]), the first step scaled to unit length; curvature pairs with s'y <= 0
// are skipped, and a failed line search restarts from the steepest descent once before it gives up. Stops at the
// tolerance, at max_iterations, or when J stalls (kStalledIterations).
LbfgsResult minimise(const SoftmaxObjective& obj, int max_iterations, double tolerance) {
  const size_t m = obj.num_params();
  LbfgsResult r;
  r.theta.assign(m, 0.0);
  std::vector<double> g(m), g_new(m), dir(m), trial(m);
  r.f = obj.eval(r.theta, g);
  std::deque<std::pair<std::vector<double>, std::vector<double>>> pairs;  // (s, y), oldest first
  std::vector<double> alpha(kLbfgsPairs);
  int stalled = 0;
  while (true) {
    r.grad_inf = inf_norm(g);
    if (r.grad_inf <= tolerance) {
      r.converged = true;
      return r;
    }
    if (r.iterations >= max_iterations || stalled >= kStalledIterations) return r;
    const double f_before = r.f;
    bool advanced = false;
    for (int attempt = 0; attempt < 2 && !advanced; ++attempt) {
      // dir = -H g.
      for (size_t i = 0; i < m; ++i) dir[i] = -g[i];
      for (int p = static_cast<int>(pairs.size()) - 1; p >= 0; --p) {
        const auto& [s, y] = pairs[static_cast<size_t>(p)];
        alpha[static_cast<size_t>(p)] = dot(s, dir) / dot(s, y);
        for (size_t i = 0; i < m; ++i) dir[i] -= alpha[static_cast<size_t>(p)] * y[i];
      }
      double step = 1.0;
      if (!pairs.empty()) {
        const auto& [s, y] = pairs.back();
        const double gamma = dot(s, y) / dot(y, y);
        for (double& v : dir) v *= gamma;
      } else {
        step = 1.0 / std::sqrt(dot(g, g));  // unit first step along the steepest descent
      }
      for (size_t p = 0; p < pairs.size(); ++p) {
        const auto& [s, y] = pairs[p];
        const double beta = dot(y, dir) / dot(s, y);
        for (size_t i = 0; i < m; ++i) dir[i] += (alpha[p] - beta) * s[i];
      }
      const double slope = dot(g, dir);
      if (!(slope < 0.0)) {  // not a descent direction (rounding): forget the curvature and retry
        pairs.clear();
        continue;
      }
      for (int ls = 0; ls < kMaxLineSearchSteps; ++ls) {
        for (size_t i = 0; i < m; ++i) trial[i] = r.theta[i] + step * dir[i];
        const double f_new = obj.eval(trial, g_new);
        if (std::isfinite(f_new) && f_new <= r.f + kArmijo * step * slope) {
          std::vector<double> s(m), y(m);
          for (size_t i = 0; i < m; ++i) {
            s[i] = trial[i] - r.theta[i];
            y[i] = g_new[i] - g[i];
          }
          if (dot(s, y) > 1e-12 * std::sqrt(dot(s, s) * dot(y, y)) && dot(y, y) > 0.0) {
            if (static_cast<int>(pairs.size()) == kLbfgsPairs) pairs.pop_front();
            pairs.emplace_back(std::move(s), std::move(y));
          }
          r.theta.swap(trial);
          g.swap(g_new);
          r.f = f_new;
          advanced = true;
          break;
        }
        // Minimiser of the quadratic through f(0), f'(0) and f(step), kept within [0.1, 0.5] x step.
        const double denom = 2.0 * (f_new - r.f - slope * step);
        double next = std::isfinite(f_new) && denom > 0.0 ? -slope * step * step / denom : 0.5 * step;
        step = std::clamp(next, 0.1 * step, 0.5 * step);
      }
      if (!advanced) pairs.clear();
    }
    if (!advanced) return r;  // no decrease along the steepest descent either: as close as doubles get
    ++r.iterations;
    const double scale = std::max({std::abs(f_before), std::abs(r.f), 1.0});
    stalled = f_before - r.f <= 64.0 * std::numeric_limits<double>::epsilon() * scale ? stalled + 1 : 0;
  }
}

}  // namespace

StatusOr<ClassificationHead> fit_intent_head(std::span<const float> embeddings, int64_t dim,
                                             std::span<const int32_t> label_ids, const std::vector<std::string>& labels,
                                             const IntentFitOptions& options, IntentFitStats* stats) {
  const int64_t rows = static_cast<int64_t>(label_ids.size());
  const int64_t k = static_cast<int64_t>(labels.size());
  if (!(options.l2 > 0.0 && options.l2 <= 1e6)) {
    return absl::InvalidArgumentError(
        absl::StrCat("IntentFitOptions::l2 is ", options.l2, "; expected a number in (0, 1e6]"));
  }
  if (options.max_iterations < 1 || options.max_iterations > 1000000) {
    return absl::InvalidArgumentError(
        absl::StrCat("IntentFitOptions::max_iterations is ", options.max_iterations, "; expected 1 to 1000000"));
  }
  if (!(options.tolerance > 0.0 && std::isfinite(options.tolerance))) {
    return absl::InvalidArgumentError(
        absl::StrCat("IntentFitOptions::tolerance is ", options.tolerance, "; expected a finite number > 0"));
  }
  if (k < kMinIntents || k > kMaxIntentLabels) {
    return absl::InvalidArgumentError(
        absl::StrCat("fit_intent_head: ", k, " labels; expected ", kMinIntents, " to ", kMaxIntentLabels));
  }
  std::set<std::string> distinct;
  for (const std::string& label : labels) {
    if (label.empty() || !distinct.insert(label).second) {
      return absl::InvalidArgumentError(absl::StrCat("fit_intent_head: the label '", label,
                                                     "' is empty or repeated; expected distinct non-empty labels"));
    }
  }
  if (dim < 1 || dim > kMaxIntentHeadDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("fit_intent_head: dim is ", dim, "; expected 1 to ", kMaxIntentHeadDim));
  }
  if (rows == 0) {
    return absl::InvalidArgumentError(
        "fit_intent_head: no examples (label_ids is empty); expected at least one per label");
  }
  if (static_cast<int64_t>(embeddings.size()) != rows * dim) {
    return absl::InvalidArgumentError(absl::StrCat("fit_intent_head: embeddings has ", embeddings.size(),
                                                   " floats for ", rows, " labelled rows of dim ", dim,
                                                   "; expected rows x dim = ", rows * dim));
  }
  std::vector<int64_t> counts(static_cast<size_t>(k), 0);
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t id = label_ids[static_cast<size_t>(i)];
    if (id < 0 || id >= k) {
      return absl::InvalidArgumentError(
          absl::StrCat("fit_intent_head: label_ids[", i, "] is ", id, "; expected a label id 0 to ", k - 1));
    }
    ++counts[static_cast<size_t>(id)];
  }
  for (int64_t c = 0; c < k; ++c) {
    if (counts[static_cast<size_t>(c)] == 0) {
      return absl::InvalidArgumentError(absl::StrCat("fit_intent_head: label '", labels[static_cast<size_t>(c)],
                                                     "' (id ", c, ") has no examples; expected at least one"));
    }
  }
  std::vector<double> x(embeddings.size());
  for (size_t i = 0; i < embeddings.size(); ++i) {
    if (!std::isfinite(embeddings[i])) {
      return absl::InvalidArgumentError(absl::StrCat("fit_intent_head: embeddings row ", static_cast<int64_t>(i) / dim,
                                                     " column ", static_cast<int64_t>(i) % dim, " is ", embeddings[i],
                                                     "; expected finite values"));
    }
    x[i] = embeddings[i];
  }
  // Balanced sample weights, as scikit-learn's class_weight="balanced": n / (k n_c).
  std::vector<double> s(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    s[static_cast<size_t>(i)] =
        static_cast<double>(rows) /
        (static_cast<double>(k) * static_cast<double>(counts[static_cast<size_t>(label_ids[i])]));
  }
  const SoftmaxObjective objective(std::move(x), std::vector<int32_t>(label_ids.begin(), label_ids.end()), std::move(s),
                                   dim, k, options.l2);
  LbfgsResult fit = minimise(objective, options.max_iterations, options.tolerance);

  // Biases on the sum-zero gauge (the iterates stay on it up to rounding; the softmax ignores a common shift).
  double* b = fit.theta.data() + k * dim;
  double mean = 0.0;
  for (int64_t c = 0; c < k; ++c) mean += b[c];
  mean /= static_cast<double>(k);
  for (int64_t c = 0; c < k; ++c) b[c] -= mean;

  ClassificationHead head;
  head.input = ClassificationHead::Input::kSentenceEmbedding;
  head.labels = labels;
  DenseLayer layer;
  layer.activation = HeadActivation::kNone;
  BRISK_ASSIGN_OR_RETURN(layer.weight, Tensor::empty({k, dim}, DType::kF32));
  BRISK_ASSIGN_OR_RETURN(layer.bias, Tensor::empty({k}, DType::kF32));
  for (int64_t p = 0; p < k * dim; ++p) layer.weight.data<float>()[p] = static_cast<float>(fit.theta[p]);
  for (int64_t c = 0; c < k; ++c) layer.bias.data<float>()[c] = static_cast<float>(b[c]);
  head.layers.push_back(std::move(layer));
  BRISK_RETURN_IF_ERROR(head.validate("fit_intent_head"));

  if (stats != nullptr) {
    std::vector<float> logits(static_cast<size_t>(rows * k));
    BRISK_RETURN_IF_ERROR(head.apply(embeddings.data(), rows, logits.data()));
    int64_t correct = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = logits.data() + i * k;
      correct += (std::max_element(row, row + k) - row) == label_ids[static_cast<size_t>(i)];
    }
    stats->iterations = fit.iterations;
    stats->converged = fit.converged;
    stats->objective = fit.f;
    stats->gradient_norm = fit.grad_inf;
    stats->training_accuracy = static_cast<double>(correct) / static_cast<double>(rows);
    stats->examples_per_label = std::move(counts);
  }
  return head;
}

}  // namespace brisk
