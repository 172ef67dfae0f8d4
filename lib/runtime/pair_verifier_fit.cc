// fit_pair_verifier (brisk/runtime/pair_verifier.h): standardised pair features, a class-balanced logistic
// regression by fit_intent_head's L-BFGS, the L2 weight, the embedding features' weight and the threshold chosen
// by cross-validation grouped by the cached question.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "brisk/runtime/pair_verifier.h"
#include "pair_logistic.h"
#include "pair_trees.h"

namespace brisk {
namespace {

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
  if (!options.try_logistic && !options.try_trees) {
    return bad("try_logistic and try_trees are both false; expected at least one model to try");
  }
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
  // Out-of-fold scores of one model: fit(train rows) -> score(row).
  const auto cross_validate = [&](auto fit) -> StatusOr<std::vector<float>> {
    std::vector<float> oof(pairs.size(), 0.0f);
    for (int k = 0; k < options.folds; ++k) {
      std::vector<size_t> train, held;
      for (size_t i = 0; i < pairs.size(); ++i) (fold[i] == k ? held : train).push_back(i);
      if (held.empty()) continue;
      const int64_t pos = std::count_if(train.begin(), train.end(), [&](size_t i) { return labels[i] == 1; });
      if (pos == 0 || pos == static_cast<int64_t>(train.size())) {
        return bad(absl::StrCat("fold ", k, " leaves training pairs of one label only; expected more pairs"));
      }
      BRISK_ASSIGN_OR_RETURN(auto score, fit(train));
      for (size_t i : held) oof[i] = score(&x[i * n_features]);
    }
    return oof;
  };
  // Keeps the model whose cross-validated point is best: the target met first, then the most recall, then the best
  // precision.
  const auto consider = [&](const std::string& model, double l2, double embedding_weight, std::vector<float> oof) {
    const Choice c = choose_threshold(oof, labels_int, options.target_precision);
    const double key = (c.met ? 2.0 : 0.0) + c.at.recall + 1e-3 * c.at.precision;
    if (key <= best_key) return;
    best_key = key;
    best.model = model;
    best.l2 = l2;
    best.embedding_weight = embedding_weight;
    best.out_of_fold_scores = std::move(oof);
    best.threshold = c.threshold;
    best.precision = c.at.precision;
    best.recall = c.at.recall;
    best.target_met = c.met;
  };
  const auto logistic_fit = [&](double l2, double embedding_weight) {
    return [&, l2, embedding_weight](const std::vector<size_t>& rows) -> StatusOr<std::function<float(const float*)>> {
      BRISK_ASSIGN_OR_RETURN(PairLogistic m,
                             fit_pair_logistic(x, n_features, labels, rows, l2, first_embedding, embedding_weight));
      return std::function<float(const float*)>([m = std::move(m)](const float* row) { return m.score(row); });
    };
  };
  const auto trees_fit = [&](const std::vector<size_t>& rows) -> StatusOr<std::function<float(const float*)>> {
    BRISK_ASSIGN_OR_RETURN(PairTrees t, fit_pair_trees(x, n_features, first_embedding, labels, rows));
    return std::function<float(const float*)>(
        [t = std::move(t)](const float* row) { return pair_trees_score(t, row); });
  };
  if (options.try_logistic) {
    for (double l2 : options.l2) {
      for (double embedding_weight : options.embedding_weights) {
        BRISK_ASSIGN_OR_RETURN(std::vector<float> oof, cross_validate(logistic_fit(l2, embedding_weight)));
        consider("logistic", l2, embedding_weight, std::move(oof));
      }
    }
  }
  if (options.try_trees) {
    BRISK_ASSIGN_OR_RETURN(std::vector<float> oof, cross_validate(trees_fit));
    consider("trees", 0.0, 0.0, std::move(oof));
  }

  std::vector<size_t> all(pairs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;

  nlohmann::json j;
  j["pairs"] = pairs.size();
  j["folds"] = options.folds;
  j["model"] = best.model;
  if (best.model == "logistic") {
    j["l2"] = best.l2;
    j["embedding_weight"] = best.embedding_weight;
  }
  j["cv_precision"] = best.precision;
  j["cv_recall"] = best.recall;
  j["target_met"] = best.target_met;
  for (const auto& [category, count] : accepted_by_category(pairs, best.out_of_fold_scores, best.threshold)) {
    j["cv_accepted_share"][category] = count.share();
  }
  if (report != nullptr) *report = best;
  if (best.model == "trees") {
    BRISK_ASSIGN_OR_RETURN(PairTrees trees, fit_pair_trees(x, n_features, first_embedding, labels, all));
    return PairVerifier::create_trees(embedding_model_id, static_cast<int64_t>(dim), std::move(trees), best.threshold,
                                      options.target_precision, j.dump());
  }
  BRISK_ASSIGN_OR_RETURN(PairLogistic final_model, fit_pair_logistic(x, n_features, labels, all, best.l2,
                                                                     first_embedding, best.embedding_weight));
  return PairVerifier::create(embedding_model_id, static_cast<int64_t>(dim), std::move(final_model.mean),
                              std::move(final_model.scale), std::move(final_model.weight), final_model.bias,
                              best.threshold, options.target_precision, j.dump());
}

}  // namespace brisk
