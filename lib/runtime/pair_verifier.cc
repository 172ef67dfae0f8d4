// PairVerifier: scoring and the verifier file (brisk/runtime/pair_verifier.h).
#include "brisk/runtime/pair_verifier.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "brisk/cache/semantic_guards.h"
#include "brisk/core/internal/bounded_input.h"
#include "brisk/core/internal/finite.h"
#include "brisk/core/utf8.h"
#include "brisk/model/safetensors.h"
#include "pair_logistic.h"
#include "pair_trees.h"

namespace brisk {

struct PairVerifier::State {
  std::string model_id;
  int64_t dim = 0;
  PairLogistic model;
  std::optional<PairTrees> trees;  // set: the score is the trees', not the logistic model's
  float threshold = 0.5f;
  float target_precision = 0.95f;
  std::string fit_report_json = "{}";
};

namespace {

using json = nlohmann::json;

constexpr const char* kMeanName = "pair_verifier.mean";
constexpr const char* kScaleName = "pair_verifier.scale";
constexpr const char* kWeightName = "pair_verifier.weight";
constexpr const char* kTreeFeatureName = "pair_verifier.tree_feature";
constexpr const char* kTreeThresholdName = "pair_verifier.tree_threshold";
constexpr const char* kTreeLeftName = "pair_verifier.tree_left";
constexpr const char* kTreeRightName = "pair_verifier.tree_right";
constexpr const char* kTreeValueName = "pair_verifier.tree_value";
constexpr const char* kTreeRootsName = "pair_verifier.tree_roots";
constexpr int64_t kMaxDim = 65536;

Status bad(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("pair verifier ", where, ": ", what));
}

int64_t feature_count(int64_t dim) { return static_cast<int64_t>(pair_text_feature_names().size()) + 2 * dim; }

Status check_values(const std::string& where, const char* name, const std::vector<float>& v, int64_t n, bool positive) {
  if (static_cast<int64_t>(v.size()) != n) {
    return bad(where, absl::StrCat(name, " has ", v.size(), " values; expected ", n, " (one per feature)"));
  }
  if (const int64_t i = first_non_finite(v.data(), n); i >= 0) {
    return bad(where, absl::StrCat(name, "[", i, "] is ", v[i], "; expected finite values"));
  }
  if (positive) {
    for (int64_t i = 0; i < n; ++i) {
      if (!(v[i] > 0.0f)) return bad(where, absl::StrCat(name, "[", i, "] is ", v[i], "; expected a value > 0"));
    }
  }
  return absl::OkStatus();
}

StatusOr<float> float_field(const std::map<std::string, std::string>& md, const char* key, const std::string& path) {
  auto it = md.find(key);
  if (it == md.end()) return bad(path, absl::StrCat("the metadata has no '", key, "'; expected a decimal number"));
  float v = 0.0f;
  const std::string& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return bad(path, absl::StrCat("metadata '", key, "' is '", text.substr(0, 40), "'; expected a finite decimal"));
  }
  return v;
}

StatusOr<std::vector<float>> read_vector(const SafetensorsFile& file, const char* name, int64_t n,
                                         const std::string& path) {
  if (!file.contains(name)) return bad(path, absl::StrCat("has no tensor ", name, "; expected f32 [", n, "]"));
  BRISK_ASSIGN_OR_RETURN(Tensor t, file.get(name));
  if (t.dtype() != DType::kF32 || t.rank() != 1 || t.dim(0) != n) {
    return bad(path, absl::StrCat(name, " is ", dtype_name(t.dtype()), " ", t.shape_string(), "; expected f32 [", n,
                                  "] (one per feature)"));
  }
  return std::vector<float>(t.data<float>(), t.data<float>() + n);
}

// A rank-1 tensor of `dtype` of any length up to kMaxPairTreeNodes.
template <typename T>
StatusOr<std::vector<T>> read_array(const SafetensorsFile& file, const char* name, DType dtype,
                                    const std::string& path) {
  if (!file.contains(name)) {
    return bad(path, absl::StrCat("has no tensor ", name, "; expected ", dtype_name(dtype), " [nodes]"));
  }
  BRISK_ASSIGN_OR_RETURN(Tensor t, file.get(name));
  if (t.dtype() != dtype || t.rank() != 1 || t.dim(0) > kMaxPairTreeNodes) {
    return bad(path, absl::StrCat(name, " is ", dtype_name(t.dtype()), " ", t.shape_string(), "; expected ",
                                  dtype_name(dtype), " [at most ", kMaxPairTreeNodes, "]"));
  }
  return std::vector<T>(t.data<T>(), t.data<T>() + t.dim(0));
}

// The fields every verifier has, checked, in a new State.
StatusOr<std::shared_ptr<PairVerifier::State>> common_state(const std::string& where, std::string model_id, int64_t dim,
                                                            float threshold, float target_precision,
                                                            std::string fit_report_json) {
  if (model_id.empty() || !is_valid_utf8(model_id)) {
    return bad(where, "embedding_model_id is empty or not UTF-8; expected the embedding model's id");
  }
  if (dim < 1 || dim > kMaxDim) return bad(where, absl::StrCat("dim is ", dim, "; expected 1 to ", kMaxDim));
  if (!(threshold >= 0.0f && threshold <= 1.0f)) {
    return bad(where, absl::StrCat("threshold is ", threshold, "; expected a probability in [0, 1]"));
  }
  if (!(target_precision > 0.0f && target_precision <= 1.0f)) {
    return bad(where, absl::StrCat("target_precision is ", target_precision, "; expected (0, 1]"));
  }
  StatusOr<json> report = parse_json_bounded(fit_report_json, "fit_report");
  if (!report.ok() || !report->is_object()) return bad(where, "fit_report is not a JSON object; expected {...}");
  auto s = std::make_shared<PairVerifier::State>();
  s->model_id = std::move(model_id);
  s->dim = dim;
  s->threshold = threshold;
  s->target_precision = target_precision;
  s->fit_report_json = std::move(fit_report_json);
  return s;
}

}  // namespace

StatusOr<PairVerifier> PairVerifier::create_trees(std::string embedding_model_id, int64_t dim, PairTrees trees,
                                                  float threshold, float target_precision,
                                                  std::string fit_report_json) {
  const std::string where = "create_trees";
  BRISK_ASSIGN_OR_RETURN(std::shared_ptr<State> s, common_state(where, std::move(embedding_model_id), dim, threshold,
                                                                target_precision, std::move(fit_report_json)));
  if (std::string e = pair_trees_error(trees, pair_text_feature_names().size()); !e.empty()) {
    return bad(where, absl::StrCat("the trees: ", e));
  }
  s->trees = std::move(trees);
  return PairVerifier(std::move(s));
}

StatusOr<PairVerifier> PairVerifier::create(std::string embedding_model_id, int64_t dim, std::vector<float> mean,
                                            std::vector<float> scale, std::vector<float> weight, float bias,
                                            float threshold, float target_precision, std::string fit_report_json) {
  const std::string where = "create";
  BRISK_ASSIGN_OR_RETURN(std::shared_ptr<State> s, common_state(where, std::move(embedding_model_id), dim, threshold,
                                                                target_precision, std::move(fit_report_json)));
  const int64_t n = feature_count(dim);
  BRISK_RETURN_IF_ERROR(check_values(where, "mean", mean, n, false));
  BRISK_RETURN_IF_ERROR(check_values(where, "scale", scale, n, true));
  BRISK_RETURN_IF_ERROR(check_values(where, "weight", weight, n, false));
  if (!std::isfinite(bias)) return bad(where, absl::StrCat("bias is ", bias, "; expected a finite value"));
  s->model = PairLogistic{std::move(mean), std::move(scale), std::move(weight), bias};
  return PairVerifier(std::move(s));
}

StatusOr<PairVerifier> PairVerifier::load(const std::string& path, std::string_view expected_model_id) {
  BRISK_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  const auto& md = file.metadata();
  auto field = [&](const char* key) -> StatusOr<std::string> {
    auto it = md.find(key);
    if (it == md.end()) return bad(path, absl::StrCat("the metadata has no '", key, "'"));
    return it->second;
  };
  BRISK_ASSIGN_OR_RETURN(std::string format, field("format"));
  if (format != kPairVerifierFormat) {
    return bad(path, absl::StrCat("format is '", format.substr(0, 40), "'; expected '", kPairVerifierFormat, "'"));
  }
  BRISK_ASSIGN_OR_RETURN(std::string version, field("version"));
  if (version != kPairVerifierVersion) {
    return bad(path, absl::StrCat("version is '", version.substr(0, 40), "'; expected '", kPairVerifierVersion, "'"));
  }
  BRISK_ASSIGN_OR_RETURN(std::string model_id, field("embedding_model_id"));
  if (!expected_model_id.empty() && model_id != expected_model_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        "pair verifier ", path, " was fitted for embedding model '", model_id.substr(0, 80),
        "'; expected one fitted for this model, '", std::string(expected_model_id), "' (run brisk fit-verifier)"));
  }
  BRISK_ASSIGN_OR_RETURN(std::string dim_text, field("dim"));
  int64_t dim = 0;
  const auto [end, ec] = std::from_chars(dim_text.data(), dim_text.data() + dim_text.size(), dim);
  if (ec != std::errc() || end != dim_text.data() + dim_text.size() || dim < 1 || dim > kMaxDim) {
    return bad(path, absl::StrCat("dim is '", dim_text.substr(0, 40), "'; expected an integer in [1, ", kMaxDim, "]"));
  }
  BRISK_ASSIGN_OR_RETURN(std::string names_text, field("features"));
  StatusOr<json> names = parse_json_bounded(names_text, "metadata 'features'");
  const json expected_names = pair_text_feature_names();
  if (!names.ok() || *names != expected_names) {
    return bad(path, absl::StrCat("its text features are ", names_text.substr(0, 200), "; expected ",
                                  expected_names.dump(), " (a verifier file of another brisk version?)"));
  }
  BRISK_ASSIGN_OR_RETURN(float threshold, float_field(md, "threshold", path));
  BRISK_ASSIGN_OR_RETURN(float target, float_field(md, "target_precision", path));
  BRISK_ASSIGN_OR_RETURN(float bias, float_field(md, "bias", path));
  BRISK_ASSIGN_OR_RETURN(std::string report, field("fit_report"));
  const auto model = md.find("model");
  if (model != md.end() && model->second != "logistic" && model->second != "trees") {
    return bad(path, absl::StrCat("model is '", model->second.substr(0, 40), "'; expected 'logistic' or 'trees'"));
  }
  if (model != md.end() && model->second == "trees") {
    if (file.tensor_names().size() != 6) {
      return bad(path, absl::StrCat("has ", file.tensor_names().size(), " tensors; expected the 6 of a trees model"));
    }
    PairTrees t;
    BRISK_ASSIGN_OR_RETURN(t.feature, read_array<int32_t>(file, kTreeFeatureName, DType::kI32, path));
    BRISK_ASSIGN_OR_RETURN(t.left, read_array<int32_t>(file, kTreeLeftName, DType::kI32, path));
    BRISK_ASSIGN_OR_RETURN(t.right, read_array<int32_t>(file, kTreeRightName, DType::kI32, path));
    BRISK_ASSIGN_OR_RETURN(t.roots, read_array<int32_t>(file, kTreeRootsName, DType::kI32, path));
    BRISK_ASSIGN_OR_RETURN(t.threshold, read_array<float>(file, kTreeThresholdName, DType::kF32, path));
    BRISK_ASSIGN_OR_RETURN(t.value, read_array<float>(file, kTreeValueName, DType::kF32, path));
    t.base = bias;
    StatusOr<PairVerifier> v =
        create_trees(std::move(model_id), dim, std::move(t), threshold, target, std::move(report));
    if (!v.ok()) return bad(path, std::string(v.status().message()));
    return v;
  }
  const int64_t n = feature_count(dim);
  if (file.tensor_names().size() != 3) {
    return bad(path, absl::StrCat("has ", file.tensor_names().size(), " tensors; expected 3 (", kMeanName, ", ",
                                  kScaleName, ", ", kWeightName, ")"));
  }
  BRISK_ASSIGN_OR_RETURN(std::vector<float> mean, read_vector(file, kMeanName, n, path));
  BRISK_ASSIGN_OR_RETURN(std::vector<float> scale, read_vector(file, kScaleName, n, path));
  BRISK_ASSIGN_OR_RETURN(std::vector<float> weight, read_vector(file, kWeightName, n, path));
  StatusOr<PairVerifier> v = create(std::move(model_id), dim, std::move(mean), std::move(scale), std::move(weight),
                                    bias, threshold, target, std::move(report));
  if (!v.ok()) return bad(path, std::string(v.status().message()));
  return v;
}

Status PairVerifier::save(const std::string& path) const {
  if (state_ == nullptr)
    return absl::FailedPreconditionError(
        "PairVerifier::save: an empty verifier; expected one made by create, load or fit_pair_verifier");
  const State& s = *state_;
  auto tensor = [](const std::vector<float>& v) {
    return Tensor::borrow(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())}, DType::kF32);
  };
  auto ints = [](const std::vector<int32_t>& v) {
    return Tensor::borrow(const_cast<int32_t*>(v.data()), {static_cast<int64_t>(v.size())}, DType::kI32);
  };
  const json names = pair_text_feature_names();
  std::map<std::string, std::string> metadata = {{"format", kPairVerifierFormat},
                                                 {"version", kPairVerifierVersion},
                                                 {"model", s.trees ? "trees" : "logistic"},
                                                 {"embedding_model_id", s.model_id},
                                                 {"dim", std::to_string(s.dim)},
                                                 {"features", names.dump()},
                                                 {"bias", fmt::format("{}", s.trees ? s.trees->base : s.model.bias)},
                                                 {"threshold", fmt::format("{}", s.threshold)},
                                                 {"target_precision", fmt::format("{}", s.target_precision)},
                                                 {"fit_report", s.fit_report_json}};
  if (s.trees) {
    const PairTrees& t = *s.trees;
    return write_safetensors(path,
                             {{kTreeFeatureName, ints(t.feature)},
                              {kTreeThresholdName, tensor(t.threshold)},
                              {kTreeLeftName, ints(t.left)},
                              {kTreeRightName, ints(t.right)},
                              {kTreeValueName, tensor(t.value)},
                              {kTreeRootsName, ints(t.roots)}},
                             metadata);
  }
  return write_safetensors(
      path,
      {{kMeanName, tensor(s.model.mean)}, {kScaleName, tensor(s.model.scale)}, {kWeightName, tensor(s.model.weight)}},
      metadata);
}

StatusOr<float> PairVerifier::score(const cache::SemanticPair& pair) const {
  if (state_ == nullptr) return absl::FailedPreconditionError("PairVerifier::score: an empty verifier");
  const State& s = *state_;
  if (static_cast<int64_t>(pair.incoming_embedding.size()) != s.dim ||
      static_cast<int64_t>(pair.cached_embedding.size()) != s.dim) {
    return absl::InvalidArgumentError(absl::StrCat("PairVerifier::score: the embeddings have ",
                                                   pair.incoming_embedding.size(), " and ",
                                                   pair.cached_embedding.size(), " values; expected ", s.dim));
  }
  // The same question (the cache's identity: case-folded, trailing punctuation dropped) is always the same question,
  // whatever a model fitted on pairs that never repeat a question would extrapolate to.
  if (cache::question_key(pair.incoming) == cache::question_key(pair.cached)) return 1.0f;
  const std::vector<float> x = pair_features(pair);
  if (s.trees) return pair_trees_score(*s.trees, x.data());
  return s.model.score(x.data());
}

cache::SemanticVerifier PairVerifier::as_semantic_verifier() const {
  return [self = *this](const cache::SemanticPair& pair) { return self.score(pair); };
}

const std::string& PairVerifier::embedding_model_id() const {
  static const std::string kNone;
  return state_ != nullptr ? state_->model_id : kNone;
}
int64_t PairVerifier::dim() const { return state_ != nullptr ? state_->dim : 0; }
float PairVerifier::threshold() const { return state_ != nullptr ? state_->threshold : 1.0f; }
float PairVerifier::target_precision() const { return state_ != nullptr ? state_->target_precision : 0.0f; }
bool PairVerifier::uses_trees() const { return state_ != nullptr && state_->trees.has_value(); }
const std::string& PairVerifier::fit_report_json() const {
  static const std::string kNone = "{}";
  return state_ != nullptr ? state_->fit_report_json : kNone;
}

StatusOr<std::vector<PairRow>> parse_pair_rows(std::string_view text, const std::string& source) {
  auto bad_line = [&](int64_t line, const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": ", what));
  };
  if (!is_valid_utf8(text))
    return absl::InvalidArgumentError(absl::StrCat(source, ": not valid UTF-8; expected UTF-8 text"));
  std::vector<PairRow> rows;
  int64_t line = 0;
  size_t columns = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) continue;
    std::vector<std::string_view> f;
    for (size_t start = 0;;) {
      const size_t tab = l.find('\t', start);
      f.push_back(l.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
    if (columns == 0) {  // the header
      if (f.size() < 4 || f.size() > 5 || f[0] != "label" || f[1] != "category" || f[2] != "cached" ||
          f[3] != "incoming" || (f.size() == 5 && f[4] != "split")) {
        return bad_line(line,
                        "the header is not 'label, category, cached, incoming[, split]' (tab-separated); "
                        "expected those columns");
      }
      columns = f.size();
      continue;
    }
    if (f.size() != columns) {
      return bad_line(line, absl::StrCat("has ", f.size(), " tab-separated fields; expected ", columns));
    }
    if (f[0] != "0" && f[0] != "1") {
      return bad_line(line, absl::StrCat("label is '", std::string(f[0].substr(0, 20)), "'; expected 0 or 1"));
    }
    for (size_t i = 1; i < f.size(); ++i) {
      if (f[i].empty()) return bad_line(line, absl::StrCat("field ", i + 1, " is empty; expected text"));
    }
    if (static_cast<int64_t>(rows.size()) >= kMaxPairRows) {
      return bad_line(line, absl::StrCat("is past ", kMaxPairRows, " pairs; expected at most that many"));
    }
    PairRow r;
    r.label = f[0] == "1" ? 1 : 0;
    r.category = std::string(f[1]);
    r.cached = std::string(f[2]);
    r.incoming = std::string(f[3]);
    if (columns == 5) r.split = std::string(f[4]);
    r.line = line;
    rows.push_back(std::move(r));
  }
  if (columns == 0) return absl::InvalidArgumentError(absl::StrCat(source, ": empty; expected a header and pairs"));
  return rows;
}

StatusOr<std::vector<PairRow>> read_pair_rows(const std::string& path) {
  BRISK_ASSIGN_OR_RETURN(std::string text, read_text_file_bounded(path, int64_t{256} << 20, "pairs file"));
  return parse_pair_rows(text, path);
}

cache::SemanticPair LabelledPair::pair() const {
  double cosine = 0.0;
  for (size_t j = 0; j < incoming_embedding.size() && j < cached_embedding.size(); ++j) {
    cosine += double(incoming_embedding[j]) * cached_embedding[j];
  }
  return cache::SemanticPair{incoming, cached, incoming_embedding, cached_embedding, static_cast<float>(cosine)};
}

PrecisionRecall precision_recall(std::span<const float> scores, std::span<const int> labels, float threshold) {
  int64_t accepted = 0, true_accepted = 0, positives = 0;
  for (size_t i = 0; i < scores.size() && i < labels.size(); ++i) {
    positives += labels[i] == 1;
    if (scores[i] >= threshold) {
      ++accepted;
      true_accepted += labels[i] == 1;
    }
  }
  PrecisionRecall r;
  r.accepted = accepted;
  r.precision = accepted == 0 ? 1.0 : double(true_accepted) / double(accepted);
  r.recall = positives == 0 ? 0.0 : double(true_accepted) / double(positives);
  return r;
}

std::map<std::string, CategoryCount> accepted_by_category(std::span<const LabelledPair> pairs,
                                                          std::span<const float> scores, float threshold) {
  std::map<std::string, CategoryCount> m;
  for (size_t i = 0; i < pairs.size() && i < scores.size(); ++i) {
    CategoryCount& c = m[pairs[i].category];
    ++c.total;
    c.accepted += scores[i] >= threshold;
  }
  return m;
}

}  // namespace brisk
