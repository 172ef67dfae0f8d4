// Sequence-classification heads: reading Hugging Face's from a checkpoint, and applying one on the host.
#include "brisk/model/classification_head.h"
#include "brisk/core/internal/bounded_input.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "brisk/kernels/vector_math.h"

namespace brisk {

namespace {

StatusOr<Tensor> find_f32(const NamedTensors& tensors, const std::string& name, const std::string& source) {
  auto it = tensors.find(name);
  if (it == tensors.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no tensor named '", name, "'; expected it in a sequence-classification checkpoint"));
  }
  return to_float32(it->second);
}

StatusOr<DenseLayer> read_dense(const NamedTensors& tensors, const std::string& name, HeadActivation activation,
                                const std::string& source) {
  DenseLayer layer;
  layer.activation = activation;
  BRISK_ASSIGN_OR_RETURN(layer.weight, find_f32(tensors, name + ".weight", source));
  BRISK_ASSIGN_OR_RETURN(layer.bias, find_f32(tensors, name + ".bias", source));
  return layer;
}

}  // namespace

StatusOr<LabelConfig> read_label_config(const std::string& config_json, const std::string& source) {
  BRISK_ASSIGN_OR_RETURN(const nlohmann::json config, parse_json_bounded(config_json, source + ": config.json"));
  if (!config.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": config.json is not a JSON object"));
  }
  LabelConfig out;
  if (auto it = config.find("problem_type"); it != config.end() && !it->is_null()) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": problem_type is ", it->dump(), "; expected a string"));
    }
    out.multi_label = it->get<std::string>() == "multi_label_classification";
  }
  auto it = config.find("id2label");
  if (it == config.end()) return out;
  if (!it->is_object() || it->size() > (size_t{1} << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": id2label is ", it->is_object() ? "an object of more than 2^20 labels" : it->type_name(),
                     "; expected an object {\"0\": \"label\", ...}"));
  }
  const int64_t n = static_cast<int64_t>(it->size());
  out.labels.resize(it->size());
  for (const auto& [key, value] : it->items()) {
    int64_t id = -1;
    const bool digits = !key.empty() && key.size() <= 9 &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || !absl::SimpleAtoi(key, &id) || id >= n || (key.size() > 1 && key[0] == '0')) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": id2label has the key '", key, "'; expected label ids 0..", n - 1));
    }
    if (!out.labels[static_cast<size_t>(id)].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": id2label names label ", id, " twice"));
    }
    if (!value.is_string() || value.get<std::string>().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": id2label[", key, "] is ", shown_json(value), "; expected a non-empty string"));
    }
    out.labels[static_cast<size_t>(id)] = value.get<std::string>();
  }
  return out;
}

int64_t ClassificationHead::input_token(std::span<const int32_t> ids) const {
  if (ids.empty() || input == Input::kSentenceEmbedding) return -1;
  if (input == Input::kFirstToken) return 0;
  for (int64_t i = static_cast<int64_t>(ids.size()) - 1; i > 0; --i) {
    if (ids[static_cast<size_t>(i)] != pad_token) return i;
  }
  return 0;
}

int64_t ClassificationHead::input_size() const {
  return layers.empty() || layers.front().weight.rank() != 2 ? 0 : layers.front().weight.dim(1);
}

Status ClassificationHead::validate(const std::string& source) const {
  if (layers.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": the head has no layers"));
  int64_t width = input_size();
  for (size_t i = 0; i < layers.size(); ++i) {
    const DenseLayer& l = layers[i];
    if (l.weight.dtype() != DType::kF32 || l.bias.dtype() != DType::kF32 || l.weight.rank() != 2 ||
        l.bias.rank() != 1 || width <= 0 || l.weight.dim(1) != width || l.bias.dim(0) != l.weight.dim(0) ||
        l.weight.dim(0) <= 0 || !l.weight.is_contiguous() || !l.bias.is_contiguous()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": head layer ", i, " has weight ",
                                                     dtype_name(l.weight.dtype()), l.weight.shape_string(),
                                                     " and bias ", dtype_name(l.bias.dtype()), l.bias.shape_string(),
                                                     "; expected f32 [out, ", width, "] and f32 [out]"));
    }
    width = l.weight.dim(0);
  }
  if (num_labels() != width) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": the head has ", num_labels(), " labels for ", width, " logits; expected one each"));
  }
  return absl::OkStatus();
}

Status ClassificationHead::apply(const float* in, int64_t rows, float* logits) const {
  if (rows < 0) return absl::InvalidArgumentError(absl::StrCat("rows is ", rows, "; expected >= 0"));
  if (rows > 0 && (in == nullptr || logits == nullptr)) {
    return absl::InvalidArgumentError("ClassificationHead::apply: in or logits is null; expected host arrays");
  }
  BRISK_RETURN_IF_ERROR(validate("ClassificationHead::apply"));
  std::vector<float> current(in, in + rows * input_size());
  std::vector<float> next;
  for (const DenseLayer& l : layers) {
    const int64_t out = l.weight.dim(0), width = l.weight.dim(1);
    next.assign(static_cast<size_t>(rows * out), 0.0f);
    const float* w = l.weight.data<float>();
    const float* b = l.bias.data<float>();
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = current.data() + r * width;
      float* y = next.data() + r * out;
      for (int64_t o = 0; o < out; ++o) {
        float v = kernels::dot(x, w + o * width, width) + b[o];
        if (l.activation == HeadActivation::kTanh) v = std::tanh(v);
        if (l.activation == HeadActivation::kRelu) v = std::max(v, 0.0f);
        y[o] = v;
      }
    }
    current.swap(next);
  }
  std::copy(current.begin(), current.end(), logits);
  return absl::OkStatus();
}

namespace {

// A decoder's score layer: a Linear without a bias (zeros, so that every DenseLayer has one) on the last token.
StatusOr<ClassificationHead> read_decoder_head(const NamedTensors& tensors, const std::string& config_json,
                                               const std::string& source) {
  ClassificationHead head;
  head.input = ClassificationHead::Input::kLastToken;
  DenseLayer score;
  BRISK_ASSIGN_OR_RETURN(score.weight, find_f32(tensors, "score.weight", source));
  if (tensors.contains("score.bias")) {
    BRISK_ASSIGN_OR_RETURN(score.bias, find_f32(tensors, "score.bias", source));
  } else if (score.weight.rank() == 2) {
    BRISK_ASSIGN_OR_RETURN(score.bias, Tensor::zeros({score.weight.dim(0)}, DType::kF32));
  }
  head.layers.push_back(std::move(score));
  // transformers reads config.pad_token_id: null or absent means the last token, whatever its id.
  BRISK_ASSIGN_OR_RETURN(const nlohmann::json config, parse_json_bounded(config_json, source + ": config.json"));
  if (auto it = config.find("pad_token_id"); config.is_object() && it != config.end() && !it->is_null()) {
    // A whole number, as config.json's other ids (5.0 reads as 5).
    const double id = it->is_number() ? it->get<double>() : -1.0;
    if (!(id >= 0.0 && id < 2147483648.0 && id == std::floor(id))) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": pad_token_id is ", shown_json(*it), "; expected a token id >= 0 or null"));
    }
    head.pad_token = static_cast<int64_t>(id);
  }
  return head;
}

}  // namespace

StatusOr<std::optional<ClassificationHead>> read_sequence_classification_head(const NamedTensors& tensors,
                                                                              const std::string& config_json,
                                                                              ModelFamily family,
                                                                              const std::string& source) {
  const bool decoder = is_decoder_family(family);
  const bool roberta = !decoder && tensors.contains("classifier.out_proj.weight");  // dense + tanh + out_proj on <s>
  if (decoder ? !tensors.contains("score.weight") : !tensors.contains("classifier.weight") && !roberta) {
    return std::optional<ClassificationHead>();
  }
  BRISK_ASSIGN_OR_RETURN(LabelConfig labels, read_label_config(config_json, source));
  ClassificationHead head;
  if (decoder) {
    BRISK_ASSIGN_OR_RETURN(head, read_decoder_head(tensors, config_json, source));
  } else {
    head.input = ClassificationHead::Input::kFirstToken;
    if (roberta) {
      BRISK_ASSIGN_OR_RETURN(DenseLayer dense, read_dense(tensors, "classifier.dense", HeadActivation::kTanh, source));
      head.layers.push_back(std::move(dense));
    } else if (family == ModelFamily::kDistilBert) {
      BRISK_ASSIGN_OR_RETURN(DenseLayer pre, read_dense(tensors, "pre_classifier", HeadActivation::kRelu, source));
      head.layers.push_back(std::move(pre));
    } else {
      BRISK_ASSIGN_OR_RETURN(DenseLayer pooler,
                             read_dense(tensors, "bert.pooler.dense", HeadActivation::kTanh, source));
      head.layers.push_back(std::move(pooler));
    }
    BRISK_ASSIGN_OR_RETURN(DenseLayer classifier, read_dense(tensors, roberta ? "classifier.out_proj" : "classifier",
                                                             HeadActivation::kNone, source));
    head.layers.push_back(std::move(classifier));
  }
  const Tensor& last = head.layers.back().weight;
  const int64_t num_logits = last.rank() == 2 ? last.dim(0) : 0;
  head.multi_label = labels.multi_label;
  head.labels = std::move(labels.labels);
  if (head.labels.empty()) {
    for (int64_t i = 0; i < num_logits; ++i) head.labels.push_back(absl::StrCat("LABEL_", i));
  } else if (static_cast<int64_t>(head.labels.size()) != num_logits) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": id2label has ", head.labels.size(),
                                                   " labels but the classifier has ", num_logits,
                                                   " outputs; expected one label per output"));
  }
  BRISK_RETURN_IF_ERROR(head.validate(source));
  return std::optional<ClassificationHead>(std::move(head));
}

NamedTensors sequence_classification_head_tensors(const NamedTensors& tensors) {
  NamedTensors head;
  if (!tensors.contains("classifier.weight") && !tensors.contains("classifier.out_proj.weight") &&
      !tensors.contains("score.weight")) {
    return head;
  }
  for (const char* layer :
       {"bert.pooler.dense", "pre_classifier", "classifier", "classifier.dense", "classifier.out_proj", "score"}) {
    for (const char* part : {".weight", ".bias"}) {
      const std::string name = absl::StrCat(layer, part);
      if (auto it = tensors.find(name); it != tensors.end()) {
        // f32 whatever the checkpoint stores (f16, bf16), as the head is read; a tensor that cannot convert is left
        // for read_sequence_classification_head to name.
        StatusOr<Tensor> f32 = to_float32(it->second);
        head.emplace(name, f32.ok() ? *f32 : it->second);
      }
    }
  }
  return head;
}

bool uses_sigmoid(bool multi_label, int64_t num_labels) { return multi_label || num_labels == 1; }

std::vector<float> label_probabilities(std::span<const float> logits, int64_t num_labels, bool multi_label) {
  std::vector<float> p(logits.begin(), logits.end());
  if (uses_sigmoid(multi_label, num_labels)) {
    for (float& v : p) v = 1.0f / (1.0f + std::exp(-v));
    return p;
  }
  const size_t n = static_cast<size_t>(std::max<int64_t>(num_labels, 1));
  for (size_t row = 0; row + n <= p.size(); row += n) {
    const float top =
        *std::max_element(p.begin() + static_cast<ptrdiff_t>(row), p.begin() + static_cast<ptrdiff_t>(row + n));
    float sum = 0.0f;
    for (size_t i = row; i < row + n; ++i) sum += (p[i] = std::exp(p[i] - top));
    for (size_t i = row; i < row + n; ++i) p[i] /= sum;
  }
  return p;
}

}  // namespace brisk
