// fit_pair_verifier (brisk/runtime/pair_verifier.h): standardised pair features, a class-balanced logistic
// regression by fit_intent_head's L-BFGS, the L2 weight, the embedding features' weight and the threshold chosen
// by cross-validation grouped by the cached question.
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "brisk/model/intent_head.h"
#include "brisk/runtime/pair_verifier.h"
#include "pair_logistic.h"

namespace brisk {
namespace {

// Fits on the rows of x (n_features each) listed in `rows`. The standardised features from `first_embedding` on
// (|u - v| and u * v) enter the fit multiplied by embedding_weight: their L2 penalty is 1 / embedding_weight^2 times
// the others' (0: the text features alone). The stored weights apply to the plain standardised features.
StatusOr<PairLogistic> fit_rows(const std::vector<float>& x, size_t n_features, const std::vector<int32_t>& labels,
                                const std::vector<size_t>& rows, double l2, size_t first_embedding,
                                double embedding_weight) {
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
  IntentFitOptions o;
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

// FNV-1a: a fold assignment that is the same on every platform.
uint64_t stable_hash(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The smallest threshold whose precision is >= target, with the most recall; else the best precision.
struct Choice {
  float threshold = 1.0f;
  PrecisionRecall at;
  bool met = false;
};

Choice choose_threshold(const std::vector<float>& scores, const std::vector<int>& labels, double target) {
  std::vector<float> candidates = scores;
  std::sort(candidates.begin(), candidates.end(), std::greater<>());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  Choice best;
  Choice fallback;
  fallback.at.precision = -1.0;
  for (float t : candidates) {
    const PrecisionRecall pr = precision_recall(scores, labels, t);
    if (pr.precision >= target && (!best.met || pr.recall > best.at.recall)) best = {t, pr, true};
    if (pr.accepted > 0 && pr.precision > fallback.at.precision) fallback = {t, pr, false};
  }
  if (best.met) return best;
  if (fallback.at.precision < 0.0) fallback = {1.0f, precision_recall(scores, labels, 1.0f), false};
  return fallback;
}

}  // namespace

StatusOr<PairVerifier> fit_pair_verifier(std::span<const LabelledPair> pairs, const std::string& embedding_model_id,
                                         const PairVerifierFitOptions& options, PairVerifierFitReport* report) {
  const auto bad = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("fit_pair_verifier: ", what));
  };
  if (pairs.empty()) return bad("no pairs; expected labelled pairs of both labels");
  if (!(options.target_precision > 0.0f && options.target_precision <= 1.0f)) {
    return bad(absl::StrCat("target_precision is ", options.target_precision, "; expected (0, 1]"));
  }
  if (options.folds < 2) return bad(absl::StrCat("folds is ", options.folds, "; expected at least 2"));
  if (options.l2.empty()) return bad("l2 is empty; expected at least one weight > 0");
  for (double l2 : options.l2) {
    if (!(l2 > 0.0) || !std::isfinite(l2)) return bad(absl::StrCat("an l2 weight is ", l2, "; expected > 0"));
  }
  if (options.embedding_weights.empty()) return bad("embedding_weights is empty; expected at least one value >= 0");
  for (double e : options.embedding_weights) {
    if (!(e >= 0.0) || !std::isfinite(e)) {
      return bad(absl::StrCat("an embedding weight is ", e, "; expected a finite value >= 0"));
    }
  }
  const size_t dim = pairs.front().incoming_embedding.size();
  if (dim == 0) return bad("pair 0 has an empty embedding; expected the model's embeddings");
  std::vector<float> x;
  std::vector<int32_t> labels(pairs.size());
  std::vector<int> labels_int(pairs.size());
  size_t n_features = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const LabelledPair& p = pairs[i];
    if (p.incoming_embedding.size() != dim || p.cached_embedding.size() != dim) {
      return bad(absl::StrCat("pair ", i, " has embeddings of ", p.incoming_embedding.size(), " and ",
                              p.cached_embedding.size(), " values; expected ", dim));
    }
    if (p.label != 0 && p.label != 1) return bad(absl::StrCat("pair ", i, " has label ", p.label, "; expected 0 or 1"));
    const std::vector<float> f = pair_features(p.pair());
    n_features = f.size();
    x.insert(x.end(), f.begin(), f.end());
    labels[i] = p.label;
    labels_int[i] = p.label;
  }
  const int64_t positives = std::count(labels.begin(), labels.end(), 1);
  if (positives == 0 || positives == static_cast<int64_t>(pairs.size())) {
    return bad(absl::StrCat(positives, " of ", pairs.size(), " pairs are labelled 1; expected both labels"));
  }

  // Folds grouped by the cached question: a question's pairs are never on both sides of a split.
  std::vector<int> fold(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) fold[i] = static_cast<int>(stable_hash(pairs[i].cached) % options.folds);

  const size_t first_embedding = pair_text_feature_names().size();
  PairVerifierFitReport best;
  double best_key = -1.0;
  for (double l2 : options.l2) {
    for (double embedding_weight : options.embedding_weights) {
      std::vector<float> oof(pairs.size(), 0.0f);
      for (int k = 0; k < options.folds; ++k) {
        std::vector<size_t> train, held;
        for (size_t i = 0; i < pairs.size(); ++i) (fold[i] == k ? held : train).push_back(i);
        if (held.empty()) continue;
        const int64_t pos = std::count_if(train.begin(), train.end(), [&](size_t i) { return labels[i] == 1; });
        if (pos == 0 || pos == static_cast<int64_t>(train.size())) {
          return bad(absl::StrCat("fold ", k, " leaves training pairs of one label only; expected more pairs"));
        }
        BRISK_ASSIGN_OR_RETURN(PairLogistic m,
                               fit_rows(x, n_features, labels, train, l2, first_embedding, embedding_weight));
        for (size_t i : held) oof[i] = m.score(&x[i * n_features]);
      }
      const Choice c = choose_threshold(oof, labels_int, options.target_precision);
      // The target met first, then the most recall, then the best precision.
      const double key = (c.met ? 2.0 : 0.0) + c.at.recall + 1e-3 * c.at.precision;
      if (key > best_key) {
        best_key = key;
        best.l2 = l2;
        best.embedding_weight = embedding_weight;
        best.out_of_fold_scores = oof;
        best.threshold = c.threshold;
        best.precision = c.at.precision;
        best.recall = c.at.recall;
        best.target_met = c.met;
      }
    }
  }

  std::vector<size_t> all(pairs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  BRISK_ASSIGN_OR_RETURN(PairLogistic final_model,
                         fit_rows(x, n_features, labels, all, best.l2, first_embedding, best.embedding_weight));

  // Per category: the share of its pairs accepted at the threshold (recall for paraphrases, the false-accept rate
  // for the others), cross-validated.
  std::map<std::string, std::pair<int64_t, int64_t>> per_category;  // accepted, total
  for (size_t i = 0; i < pairs.size(); ++i) {
    auto& [accepted, total] = per_category[pairs[i].category];
    ++total;
    accepted += best.out_of_fold_scores[i] >= best.threshold;
  }
  nlohmann::json j;
  j["pairs"] = pairs.size();
  j["folds"] = options.folds;
  j["l2"] = best.l2;
  j["embedding_weight"] = best.embedding_weight;
  j["cv_precision"] = best.precision;
  j["cv_recall"] = best.recall;
  j["target_met"] = best.target_met;
  for (const auto& [category, counts] : per_category) {
    j["cv_accepted_share"][category] = double(counts.first) / double(counts.second);
  }
  if (report != nullptr) *report = best;
  return PairVerifier::create(embedding_model_id, static_cast<int64_t>(dim), std::move(final_model.mean),
                              std::move(final_model.scale), std::move(final_model.weight), final_model.bias,
                              best.threshold, options.target_precision, j.dump());
}

}  // namespace brisk
