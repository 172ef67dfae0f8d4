// PairVerifier: a learned semantic-cache verifier that scores a (cached, incoming) question pair from what the cache
// already has, with no extra forward pass: the two embeddings (their cosine, and a learned weighting of the SBERT
// pair features |u - v| and u * v) and the two texts (word overlap, numbers, negation words, capitalised or
// entity-like words, length ratio, and the default guards' verdicts). Two models, the better one chosen by grouped
// cross-validation for a target precision (with the decision threshold, stored with it):
//   - a class-balanced L2-regularised logistic regression over the standardised features, fitted by
//     fit_intent_head's L-BFGS (the scikit-learn objective, brisk/model/intent_head.h); its L2 weights (one for the
//     text features, one for the embedding features) are chosen the same way;
//   - gradient-boosted trees over the text features (PairTrees), which can weigh the cosine by what changed between
//     the two questions.
//
//   BRISK_ASSIGN_OR_RETURN(PairVerifier v, PairVerifier::load("verifier.safetensors", rt->embedding_model_id()));
//   opts.verifier = v.as_semantic_verifier();        // scores P(same question) in [0, 1]
//   opts.verifier_threshold = v.threshold();         // chosen for the target precision at fit time
//
// The file is safetensors with metadata format "brisk-pair-verifier", version "1", model ("logistic", the default
// when absent, or "trees"), embedding_model_id, dim, features (the text feature names, a JSON array), bias (the
// trees' base margin), threshold, target_precision and fit_report (a JSON object); and the tensors of its model:
// f32 pair_verifier.mean, .scale and .weight [features] (logistic), or i32 pair_verifier.tree_feature, .tree_left,
// .tree_right, .tree_roots and f32 .tree_threshold, .tree_value (trees). load() checks all of it (the trees: every
// index in range, children after their parents) and refuses a file fitted for another embedding model.
//
// Thread safety: a PairVerifier is immutable after construction; score() may run concurrently from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/cache/semantic_cache.h"
#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk {

inline constexpr const char* kPairVerifierFormat = "brisk-pair-verifier";
inline constexpr const char* kPairVerifierVersion = "1";

// The text features, in order, before the 2 * dim embedding features (|u - v|, then u * v).
BRISK_API const std::vector<std::string>& pair_text_feature_names();
// Features of one pair: the text features, then |u - v| and u * v (2 * dim values; dim = the embeddings' length).
// The embeddings must be L2-normalised and of equal length (as SemanticPair gives them).
BRISK_API std::vector<float> pair_features(const cache::SemanticPair& pair);

// Gradient-boosted regression trees over the text features (the first pair_text_feature_names().size() features):
// P(same question) = sigmoid(base + the leaf each tree reaches). Node i is internal when feature[i] >= 0: the row
// goes to left[i] when its feature value is <= threshold[i], else to right[i]; children always come after their
// parent. A leaf has feature -1 and its value in value[i]. roots holds each tree's first node.
struct BRISK_API PairTrees {
  std::vector<int32_t> feature, left, right;
  std::vector<float> threshold, value;
  std::vector<int32_t> roots;
  float base = 0.0f;
};
inline constexpr int64_t kMaxPairTreeNodes = 1 << 20;

class BRISK_API PairVerifier {
 public:
  PairVerifier() = default;
  // `mean`, `scale` and `weight` have one value per feature (pair_text_feature_names().size() + 2 * dim).
  static StatusOr<PairVerifier> create(std::string embedding_model_id, int64_t dim, std::vector<float> mean,
                                       std::vector<float> scale, std::vector<float> weight, float bias, float threshold,
                                       float target_precision, std::string fit_report_json = "{}");
  // A verifier that scores with `trees` (checked: well formed over the text features) instead of the logistic model.
  static StatusOr<PairVerifier> create_trees(std::string embedding_model_id, int64_t dim, PairTrees trees,
                                             float threshold, float target_precision,
                                             std::string fit_report_json = "{}");
  // Reads and checks the file (see the top). `expected_model_id` non-empty: the file must have been fitted for
  // that embedding model (Runtime::embedding_model_id()); FailedPrecondition names both otherwise.
  static StatusOr<PairVerifier> load(const std::string& path, std::string_view expected_model_id = {});
  Status save(const std::string& path) const;

  // P(the pair asks the same question), in [0, 1]: 1 when the two questions have the same cache::question_key()
  // (the same question, up to case and trailing punctuation), else the model's. InvalidArgument when an embedding's
  // length is not dim().
  StatusOr<float> score(const cache::SemanticPair& pair) const;
  // A SemanticCacheOptions::verifier that calls score() (it shares this verifier's state).
  cache::SemanticVerifier as_semantic_verifier() const;

  const std::string& embedding_model_id() const;
  int64_t dim() const;
  float threshold() const;
  float target_precision() const;
  const std::string& fit_report_json() const;
  bool uses_trees() const;  // scores with PairTrees (create_trees, or a file whose model is "trees")

  struct State;

 private:
  explicit PairVerifier(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

// ---- fitting ----------------------------------------------------------------------------------------------------

// One labelled pair with its embeddings (L2-normalised, dim each).
struct BRISK_API LabelledPair {
  int label = 0;         // 1: the cached answer answers the incoming question
  std::string category;  // paraphrase, negation, entity_swap, number_change, different_intent, ...
  std::string cached;
  std::string incoming;
  std::vector<float> cached_embedding;
  std::vector<float> incoming_embedding;

  // The pair as the cache hands it to a verifier, with the cosine of the two embeddings (views into this pair).
  cache::SemanticPair pair() const;
};

struct BRISK_API PairVerifierFitOptions {
  float target_precision = 0.95f;  // in (0, 1]: the threshold gives at least this cross-validated precision
  int folds = 5;                   // grouped by the cached question, so that no question is in two folds; >= 2
  // The L2 weights tried (fit_intent_head's l2, on standardised features); the one with the best cross-validated
  // recall at the target precision is kept. Each > 0.
  std::vector<double> l2 = {1e-2, 1e-1, 1.0};
  // The weights tried for the 2 * dim embedding features against the text features: each multiplies their
  // standardised values in the fit, so their L2 penalty is 1 / weight^2 times the others' (0 leaves them out). With
  // ~1000 training pairs, 768 per-dimension weights overfit (on benchmarks/data/verifier_pairs.tsv, 1 gives a
  // cross-validated recall of 0.38 at precision 0.95, 0 gives 0.50). Each >= 0.
  std::vector<double> embedding_weights = {0.0, 0.1, 0.3, 1.0};
  // The models tried: the logistic regression (each l2 and embedding weight above), and gradient-boosted trees over
  // the text features (300 trees of 7 leaves, learning rate 0.05, leaf L2 1, 20 pairs a leaf at the least). The one
  // with the best cross-validated recall at the target precision is kept. Trees express what a linear score cannot
  // (a high cosine counts only when no number or entity changed): on benchmarks/data/verifier_pairs.tsv they reach
  // the target with more recall (benchmarks/RESULTS.md, "Learned pair verifier").
  bool try_logistic = true;
  bool try_trees = true;
};

// The fit's cross-validated result: each pair's out-of-fold score (with the chosen l2) and the point chosen on it.
struct BRISK_API PairVerifierFitReport {
  std::string model;  // "logistic" or "trees": the one kept
  double l2 = 0.0;    // logistic
  double embedding_weight = 0.0;
  std::vector<float> out_of_fold_scores;  // one per training pair
  float threshold = 1.0f;                 // the smallest score with cross-validated precision >= the target
  double precision = 0.0;                 // cross-validated, at the threshold
  double recall = 0.0;
  bool target_met = false;  // false: no threshold reaches the target; the one with the best precision is kept
};

// Fits on `pairs` (every embedding of length dim, labels 0 or 1, both labels present). Errors name the pair.
BRISK_API StatusOr<PairVerifier> fit_pair_verifier(std::span<const LabelledPair> pairs,
                                                   const std::string& embedding_model_id,
                                                   const PairVerifierFitOptions& options = {},
                                                   PairVerifierFitReport* report = nullptr);

// ---- the labelled pairs file ---------------------------------------------------------------------------------------

// One line of a pairs file: `label<TAB>category<TAB>cached<TAB>incoming` and an optional fifth column, the split
// (benchmarks/data/verifier_pairs.tsv: train or heldout).
struct BRISK_API PairRow {
  int label = 0;
  std::string category, cached, incoming, split;
  int64_t line = 0;  // 1-based
};
inline constexpr int64_t kMaxPairRows = 1000000;
// Reads a UTF-8 TSV whose first line is the header (label, category, cached, incoming[, split]). Errors name the
// file and line: a wrong column count, a label other than 0 or 1, an empty field, invalid UTF-8, more than
// kMaxPairRows rows. `source` names the text in errors.
BRISK_API StatusOr<std::vector<PairRow>> parse_pair_rows(std::string_view text, const std::string& source);
BRISK_API StatusOr<std::vector<PairRow>> read_pair_rows(const std::string& path);

// Precision and recall of accepting the pairs whose score is >= threshold.
struct BRISK_API PrecisionRecall {
  double precision = 0.0;  // 1 when nothing is accepted
  double recall = 0.0;
  int64_t accepted = 0;
};
BRISK_API PrecisionRecall precision_recall(std::span<const float> scores, std::span<const int> labels, float threshold);

// Per category, in name order: how many of its pairs score >= threshold, and how many it has (the recall of the
// paraphrases; the false-accept count of every other category). scores has one value per pair.
struct BRISK_API CategoryCount {
  int64_t accepted = 0;
  int64_t total = 0;
  double share() const { return total > 0 ? double(accepted) / double(total) : 0.0; }
};
BRISK_API std::map<std::string, CategoryCount> accepted_by_category(std::span<const LabelledPair> pairs,
                                                                    std::span<const float> scores, float threshold);

}  // namespace brisk
