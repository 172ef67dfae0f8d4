// Few-shot intent heads: the head file (safetensors with format "brisk-intent-head"; see brisk/model/intent_head.h).
#include <fmt/format.h>
#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "brisk/core/internal/bounded_input.h"
#include "brisk/core/internal/finite.h"
#include "brisk/core/utf8.h"
#include "brisk/model/intent_head.h"
#include "brisk/model/safetensors.h"

namespace brisk {

namespace {

using json = nlohmann::json;

constexpr const char* kWeightName = "intent_head.weight";
constexpr const char* kBiasName = "intent_head.bias";

Status bad(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("intent head '", path, "': ", what));
}

// Distinct, non-empty, valid UTF-8 labels, 2 to kMaxIntentLabels of them.
Status check_labels(const std::vector<std::string>& labels, const std::string& path) {
  if (static_cast<int64_t>(labels.size()) < kMinIntents || static_cast<int64_t>(labels.size()) > kMaxIntentLabels) {
    return bad(path, absl::StrCat("has ", labels.size(), " labels; expected ", kMinIntents, " to ", kMaxIntentLabels));
  }
  std::set<std::string_view> seen;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].empty() || !is_valid_utf8(labels[i])) {
      return bad(path, absl::StrCat("label ", i, " is empty or not UTF-8; expected a non-empty UTF-8 name"));
    }
    if (!seen.insert(labels[i]).second) {
      return bad(path, absl::StrCat("label ", i, " ('", labels[i], "') is repeated; expected distinct labels"));
    }
  }
  return absl::OkStatus();
}

Status check_finite(const Tensor& t, const std::string& name, const std::string& path) {
  const float* v = t.data<float>();
  if (const int64_t i = first_non_finite(v, t.numel()); i >= 0) {
    return bad(path, absl::StrCat(name, " element ", i, " is ", v[i], "; expected finite values"));
  }
  return absl::OkStatus();
}

StatusOr<json> parse_object(const std::map<std::string, std::string>& metadata, const std::string& key,
                            const std::string& path) {
  auto it = metadata.find(key);
  if (it == metadata.end()) return bad(path, absl::StrCat("the metadata has no '", key, "'; expected a JSON object"));
  StatusOr<json> parsed = parse_json_bounded(it->second, absl::StrCat("metadata '", key, "'"));
  if (!parsed.ok()) return bad(path, absl::StrCat(parsed.status().message(), "; expected a JSON object"));
  json j = std::move(*parsed);
  if (!j.is_object()) {
    return bad(path, absl::StrCat("metadata '", key, "' is not a JSON object; expected {...}"));
  }
  return j;
}

StatusOr<double> number_field(const json& obj, const std::string& object, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number() || !std::isfinite(it->get<double>())) {
    return bad(path, absl::StrCat("metadata '", object, "' has no finite number '", key, "'; expected one"));
  }
  return it->get<double>();
}

StatusOr<int64_t> integer_field(const json& obj, const std::string& object, const char* key, int64_t lo, int64_t hi,
                                const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi ||
      (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi))) {
    return bad(
        path, absl::StrCat("metadata '", object, "' has no integer '", key, "' in [", lo, ", ", hi, "]; expected one"));
  }
  return it->get<int64_t>();
}

}  // namespace

Status save_intent_head(const std::string& path, const IntentHeadFile& file) {
  const ClassificationHead& head = file.head;
  if (head.input != ClassificationHead::Input::kSentenceEmbedding || head.layers.size() != 1 ||
      head.layers[0].activation != HeadActivation::kNone || head.multi_label) {
    return bad(path,
               "the head is not one softmax layer over the sentence embedding; expected the head of "
               "fit_intent_head (Input::kSentenceEmbedding, one DenseLayer with HeadActivation::kNone)");
  }
  BRISK_RETURN_IF_ERROR(head.validate(absl::StrCat("intent head '", path, "'")));
  BRISK_RETURN_IF_ERROR(check_labels(head.labels, path));
  const DenseLayer& layer = head.layers[0];
  if (layer.weight.device() != Device::kCPU || layer.weight.dim(1) > kMaxIntentHeadDim) {
    return bad(path, absl::StrCat("the weight is ", layer.weight.shape_string(), " on ",
                                  layer.weight.device() == Device::kCPU ? "the cpu" : "a gpu",
                                  "; expected a host tensor [labels, dim <= ", kMaxIntentHeadDim, "]"));
  }
  BRISK_RETURN_IF_ERROR(check_finite(layer.weight, kWeightName, path));
  BRISK_RETURN_IF_ERROR(check_finite(layer.bias, kBiasName, path));
  if (file.embedding_model_id.empty() || !is_valid_utf8(file.embedding_model_id)) {
    return bad(path, "embedding_model_id is empty or not UTF-8; expected the embedding Runtime's cache_model_id()");
  }
  if (!(file.unknown_threshold >= 0.0f && file.unknown_threshold <= 1.0f)) {
    return bad(path,
               absl::StrCat("unknown_threshold is ", file.unknown_threshold, "; expected a probability in [0, 1]"));
  }
  const IntentFitOptions& o = file.fit_options;
  const IntentFitStats& s = file.training_stats;
  const json fit_options = {{"l2", o.l2}, {"max_iterations", o.max_iterations}, {"tolerance", o.tolerance}};
  const json training_stats = {{"iterations", s.iterations},
                               {"converged", s.converged},
                               {"objective", s.objective},
                               {"gradient_norm", s.gradient_norm},
                               {"training_accuracy", s.training_accuracy},
                               {"examples_per_label", s.examples_per_label}};
  // json::dump writes a non-finite double as null, which load_intent_head then refuses: check them here.
  for (double v : {o.l2, o.tolerance, s.objective, s.gradient_norm, s.training_accuracy}) {
    if (!std::isfinite(v)) return bad(path, "the fit options or training stats hold a non-finite number");
  }
  if (!s.examples_per_label.empty() && s.examples_per_label.size() != head.labels.size()) {
    return bad(path, absl::StrCat("training_stats.examples_per_label has ", s.examples_per_label.size(), " counts for ",
                                  head.labels.size(), " labels; expected one per label (or none)"));
  }
  std::map<std::string, std::string> metadata = {
      {"format", kIntentHeadFormat},
      {"version", kIntentHeadVersion},
      {"labels", json(head.labels).dump()},
      {"embedding_model_id", file.embedding_model_id},
      {"unknown_threshold", fmt::format("{}", file.unknown_threshold)},  // shortest text that reads back exactly
      {"fit_options", fit_options.dump()},
      {"training_stats", training_stats.dump()},
  };
  return write_safetensors(path, {{kWeightName, layer.weight}, {kBiasName, layer.bias}}, metadata);
}

StatusOr<IntentHeadFile> load_intent_head(const std::string& path) {
  BRISK_ASSIGN_OR_RETURN(SafetensorsFile st, SafetensorsFile::open(path));
  const std::map<std::string, std::string>& md = st.metadata();
  auto format = md.find("format");
  if (format == md.end() || format->second != kIntentHeadFormat) {
    return bad(path, absl::StrCat("the metadata format is ",
                                  format == md.end() ? "absent" : absl::StrCat("'", format->second, "'"),
                                  "; expected '", kIntentHeadFormat, "' (a head written by `brisk fit-intents`)"));
  }
  auto version = md.find("version");
  if (version == md.end() || version->second != kIntentHeadVersion) {
    return bad(path, absl::StrCat("the metadata version is ",
                                  version == md.end() ? "absent" : absl::StrCat("'", version->second, "'"),
                                  "; expected '", kIntentHeadVersion, "'"));
  }
  IntentHeadFile out;
  ClassificationHead& head = out.head;
  head.input = ClassificationHead::Input::kSentenceEmbedding;
  {
    auto it = md.find("labels");
    const json labels = it == md.end() ? json() : json::parse(it->second, nullptr, /*allow_exceptions=*/false);
    if (!labels.is_array()) {
      return bad(path, "the metadata 'labels' is absent or not a JSON array; expected [\"label\", ...] by id");
    }
    for (const json& label : labels) {
      if (!label.is_string()) return bad(path, "the metadata 'labels' holds a non-string; expected label names");
      head.labels.push_back(label.get<std::string>());
    }
    BRISK_RETURN_IF_ERROR(check_labels(head.labels, path));
  }
  const int64_t k = head.num_labels();
  const std::set<std::string> expected_names = {kBiasName, kWeightName};
  if (std::set<std::string>(st.tensor_names().begin(), st.tensor_names().end()) != expected_names) {
    std::string names;
    for (const std::string& n : st.tensor_names()) absl::StrAppend(&names, names.empty() ? "" : ", ", n);
    return bad(path,
               absl::StrCat("holds the tensors [", names, "]; expected exactly ", kWeightName, " and ", kBiasName));
  }
  BRISK_ASSIGN_OR_RETURN(SafetensorsTensorInfo w, st.info(kWeightName));
  BRISK_ASSIGN_OR_RETURN(SafetensorsTensorInfo b, st.info(kBiasName));
  const bool weight_ok = w.dtype == DType::kF32 && w.shape.size() == 2 && w.shape[0] == k && w.shape[1] >= 1 &&
                         w.shape[1] <= kMaxIntentHeadDim;
  const bool bias_ok = b.dtype == DType::kF32 && b.shape.size() == 1 && b.shape[0] == k;
  if (!weight_ok || !bias_ok) {
    auto shape = [](const std::vector<int64_t>& s) {
      std::string t;
      for (int64_t d : s) absl::StrAppend(&t, t.empty() ? "" : ", ", d);
      return absl::StrCat("[", t, "]");
    };
    return bad(
        path, absl::StrCat(kWeightName, " is ", std::string(safetensors_dtype_name(w.dtype)), " ", shape(w.shape),
                           " and ", kBiasName, " is ", std::string(safetensors_dtype_name(b.dtype)), " ",
                           shape(b.shape), "; expected F32 [", k, ", dim] (dim 1 to ", kMaxIntentHeadDim, ") and F32 [",
                           k, "] for the ", k, " labels"));
  }
  DenseLayer layer;
  layer.activation = HeadActivation::kNone;
  BRISK_ASSIGN_OR_RETURN(layer.weight, st.get(kWeightName));
  BRISK_ASSIGN_OR_RETURN(layer.bias, st.get(kBiasName));
  BRISK_RETURN_IF_ERROR(check_finite(layer.weight, kWeightName, path));
  BRISK_RETURN_IF_ERROR(check_finite(layer.bias, kBiasName, path));
  head.layers.push_back(std::move(layer));
  BRISK_RETURN_IF_ERROR(head.validate(absl::StrCat("intent head '", path, "'")));

  auto model_id = md.find("embedding_model_id");
  if (model_id == md.end() || model_id->second.empty()) {
    return bad(path, "the metadata has no embedding_model_id; expected the embedding model's cache_model_id()");
  }
  out.embedding_model_id = model_id->second;
  {
    auto it = md.find("unknown_threshold");
    const std::string text = it == md.end() ? "" : it->second;
    float v = NAN;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (it == md.end() || ec != std::errc() || end != text.data() + text.size() || !(v >= 0.0f && v <= 1.0f)) {
      return bad(path, absl::StrCat("the metadata unknown_threshold is ",
                                    it == md.end() ? "absent" : absl::StrCat("'", text.substr(0, 40), "'"),
                                    "; expected a decimal probability in [0, 1]"));
    }
    out.unknown_threshold = v;
  }
  BRISK_ASSIGN_OR_RETURN(json options, parse_object(md, "fit_options", path));
  BRISK_ASSIGN_OR_RETURN(out.fit_options.l2, number_field(options, "fit_options", "l2", path));
  BRISK_ASSIGN_OR_RETURN(out.fit_options.tolerance, number_field(options, "fit_options", "tolerance", path));
  BRISK_ASSIGN_OR_RETURN(int64_t max_iterations,
                         integer_field(options, "fit_options", "max_iterations", 1, 1000000, path));
  out.fit_options.max_iterations = static_cast<int>(max_iterations);

  BRISK_ASSIGN_OR_RETURN(json stats, parse_object(md, "training_stats", path));
  IntentFitStats& s = out.training_stats;
  BRISK_ASSIGN_OR_RETURN(int64_t iterations, integer_field(stats, "training_stats", "iterations", 0, 1000000, path));
  s.iterations = static_cast<int>(iterations);
  BRISK_ASSIGN_OR_RETURN(s.objective, number_field(stats, "training_stats", "objective", path));
  BRISK_ASSIGN_OR_RETURN(s.gradient_norm, number_field(stats, "training_stats", "gradient_norm", path));
  BRISK_ASSIGN_OR_RETURN(s.training_accuracy, number_field(stats, "training_stats", "training_accuracy", path));
  auto converged = stats.find("converged");
  if (converged == stats.end() || !converged->is_boolean()) {
    return bad(path, "metadata 'training_stats' has no boolean 'converged'; expected one");
  }
  s.converged = converged->get<bool>();
  auto counts = stats.find("examples_per_label");
  if (counts == stats.end() || !counts->is_array() || (!counts->empty() && static_cast<int64_t>(counts->size()) != k)) {
    return bad(path, absl::StrCat("metadata 'training_stats' has no array 'examples_per_label' of ", k,
                                  " counts; expected one count per label"));
  }
  for (const json& c : *counts) {
    if (!c.is_number_integer() || c.get<int64_t>() < 0) {
      return bad(path, "metadata 'training_stats.examples_per_label' holds a value that is not a count >= 0");
    }
    s.examples_per_label.push_back(c.get<int64_t>());
  }
  return out;
}

bool is_intent_head_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 8) return false;
  std::ifstream in(path, std::ios::binary);
  unsigned char len_bytes[8] = {};
  if (!in.read(reinterpret_cast<char*>(len_bytes), 8)) return false;
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | len_bytes[i];
  if (len == 0 || len > SafetensorsFile::kMaxHeaderBytes || len > static_cast<uint64_t>(st.st_size) - 8) return false;
  std::string header(static_cast<size_t>(len), '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(len))) return false;
  StatusOr<json> parsed = parse_json_bounded(header, "header");
  if (!parsed.ok() || !parsed->is_object()) return false;
  const json& j = *parsed;
  auto md = j.find("__metadata__");
  if (md == j.end() || !md->is_object()) return false;
  auto format = md->find("format");
  return format != md->end() && format->is_string() && format->get<std::string>() == kIntentHeadFormat;
}

}  // namespace brisk
