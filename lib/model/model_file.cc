// The quantized model file: tensors and their checks. See include/brisk/model/model_file.h; the metadata is in
// model_file_metadata.cc.
#include "brisk/model/model_file.h"

#include "brisk/model/classification_head.h"

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "brisk/core/half.h"
#include "brisk/model/safetensors.h"
#include "brisk/model/weights.h"
#include "model_file_metadata.h"

namespace brisk {
namespace {

std::string shape_str(const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

// Takes tensors by name from a file's tensors, checking dtype and shape, and remembers which were taken.
class Taker {
 public:
  Taker(const NamedTensors& tensors, const std::string& file) : tensors_(tensors), file_(file) {}
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }

  // `shapes`: the acceptable shapes; `why` says which precision asks for the tensor.
  StatusOr<Tensor> take(const std::string& name, DType dtype, const std::vector<std::vector<int64_t>>& shapes,
                        const std::string& why) {
    std::vector<std::string> options;
    for (const auto& s : shapes) options.push_back(absl::StrCat(dtype_name(dtype), " ", shape_str(s)));
    const std::string expected = absl::StrCat(absl::StrJoin(options, " or "), " (", why, ")");
    auto it = tensors_.find(name);
    if (it == tensors_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(file_, ": tensor '", name, "' is missing; expected ", expected));
    }
    const Tensor& t = it->second;
    bool shape_ok = false;
    for (const auto& s : shapes) shape_ok = shape_ok || t.shape() == s;
    if (t.dtype() != dtype || !shape_ok || !t.is_contiguous()) {
      return absl::InvalidArgumentError(absl::StrCat(file_, ": tensor '", name, "' is ", dtype_name(t.dtype()), " ",
                                                     t.shape_string(), "; expected ", expected));
    }
    taken_.insert(name);
    return t;
  }

  // Scales must be finite and positive; minimums (positive = false) only finite.
  Status check_values(const std::string& name, const Tensor& t, bool positive) const {
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) {
      const float v = t.dtype() == DType::kF16 ? f16_to_float(t.data<uint16_t>()[i]) : t.data<float>()[i];
      if (!std::isfinite(v) || (positive && !(v > 0.0f))) {
        return absl::InvalidArgumentError(absl::StrCat(file_, ": tensor '", name, "' has ", v, " at element ", i,
                                                       "; expected ",
                                                       positive ? "finite positive scales" : "finite values"));
      }
    }
    return absl::OkStatus();
  }

  // The first tensor of the file that no precision asked for; `describe` says what its layer is.
  Status check_all_taken(const std::function<std::string(const std::string&)>& describe) const {
    for (const auto& [name, t] : tensors_) {
      if (taken_.count(name) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(file_, ": tensor '", name, "' is not part of the model",
                                                       describe(name), "; expected only the tensors of the config's ",
                                                       "layers in the precisions brisk.precisions gives them"));
      }
    }
    return absl::OkStatus();
  }

 private:
  const NamedTensors& tensors_;
  const std::string& file_;
  std::set<std::string> taken_;
};

std::string for_precision(const PrecisionSpec& spec) {
  return absl::StrCat("for precision ", precision_name(spec), " in brisk.precisions");
}

// An int4 matrix [rows, cols] under `name` (.weight, .weight_scale, .weight_min).
StatusOr<Int4Matrix> take_int4(Taker& r, const std::string& file, const std::string& name, const PrecisionSpec& spec,
                               int64_t rows, int64_t cols) {
  const std::string why = for_precision(spec);
  if (cols % spec.group_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": layer '", name, "' has ", cols, " input columns; expected ",
                                                   "a multiple of the group size ", spec.group_size, " ", why));
  }
  const std::vector<int64_t> groups{rows, cols / spec.group_size};
  const std::string group_why = absl::StrCat(why, ": one scale per ", spec.group_size, " columns");
  Int4Matrix q;
  q.group_size = spec.group_size;
  BRISK_ASSIGN_OR_RETURN(q.packed, r.take(name + ".weight", DType::kU8, {{rows, cols / 2}}, why));
  BRISK_ASSIGN_OR_RETURN(q.scales, r.take(name + ".weight_scale", DType::kF16, {groups}, group_why));
  BRISK_RETURN_IF_ERROR(r.check_values(name + ".weight_scale", q.scales, true));
  if (spec.with_min) {
    BRISK_ASSIGN_OR_RETURN(q.mins, r.take(name + ".weight_min", DType::kF16, {groups}, group_why));
    BRISK_RETURN_IF_ERROR(r.check_values(name + ".weight_min", q.mins, false));
  }
  BRISK_RETURN_IF_ERROR(check_int4_matrix(q, name));
  return q;
}

Status take_linear(Taker& r, const std::string& file, const LinearSlot& l, const LayerPrecision& lp,
                   QuantizedModel& m) {
  const std::string& name = l.name;
  const PrecisionSpec& spec = lp.spec;
  const std::string why = for_precision(spec);
  const std::vector<int64_t> shape{l.out_features, l.in_features};
  switch (spec.precision) {
    case Precision::kF32: {
      BRISK_ASSIGN_OR_RETURN(*l.weight, r.take(name + ".weight", DType::kF32, {shape}, why));
      break;
    }
    case Precision::kBF16: {
      BRISK_ASSIGN_OR_RETURN(*l.weight, r.take(name + ".weight", DType::kBF16, {shape}, why));
      break;
    }
    case Precision::kInt8Dynamic:
    case Precision::kInt8Static: {
      BRISK_ASSIGN_OR_RETURN(*l.weight, r.take(name + ".weight", DType::kI8, {shape}, why));
      BRISK_ASSIGN_OR_RETURN(l.scales->weight_scale,
                             r.take(name + ".weight_scale", DType::kF32, {{l.out_features}, {1}}, why));
      BRISK_RETURN_IF_ERROR(r.check_values(name + ".weight_scale", l.scales->weight_scale, true));
      l.scales->activation_scale = lp.activation_scale;
      if (r.has(name + ".input_scale")) {
        BRISK_ASSIGN_OR_RETURN(l.scales->input_scale,
                               r.take(name + ".input_scale", DType::kF32, {{l.in_features}}, "SmoothQuant's divisors"));
        BRISK_RETURN_IF_ERROR(r.check_values(name + ".input_scale", l.scales->input_scale, true));
      }
      break;
    }
    case Precision::kInt4: {
      BRISK_ASSIGN_OR_RETURN(Int4Matrix q, take_int4(r, file, name, spec, l.out_features, l.in_features));
      BRISK_ASSIGN_OR_RETURN(*l.weight, dequantize_int4(q));
      m.int4_linears[name] = std::move(q);
      break;
    }
  }
  BRISK_ASSIGN_OR_RETURN(*l.bias, r.take(name + ".bias", DType::kF32, {{l.out_features}}, "every linear layer's bias"));
  return absl::OkStatus();
}

Status take_word_embeddings(Taker& r, const std::string& file, const PrecisionSpec& spec, QuantizedModel& m) {
  const std::string name = kWordEmbeddingsName;
  const int64_t v = m.config.vocab_size, h = m.config.hidden_size;
  EmbeddingWeights& e = m.weights.embeddings;
  const std::string why = for_precision(spec);
  switch (spec.precision) {
    case Precision::kF32: {
      BRISK_ASSIGN_OR_RETURN(e.word, r.take(name + ".weight", DType::kF32, {{v, h}}, why));
      break;
    }
    case Precision::kInt8Dynamic: {
      BRISK_ASSIGN_OR_RETURN(e.word, r.take(name + ".weight", DType::kI8, {{v, h}}, why));
      BRISK_ASSIGN_OR_RETURN(e.word_scale,
                             r.take(name + ".weight_scale", DType::kF32, {{v}}, why + ": one scale per row"));
      BRISK_RETURN_IF_ERROR(r.check_values(name + ".weight_scale", e.word_scale, true));
      break;
    }
    case Precision::kInt4: {
      BRISK_ASSIGN_OR_RETURN(Int4Matrix q, take_int4(r, file, name, spec, v, h));
      e.word = q.packed;
      e.word_scale = q.scales;
      e.word_min = q.mins;
      break;
    }
    case Precision::kBF16:
    case Precision::kInt8Static:
      return absl::InvalidArgumentError(absl::StrCat(file, ": brisk.precisions gives layer '", name, "' precision ",
                                                     precision_name(spec), "; expected fp32, int8-dynamic or ",
                                                     "int4-gN[-min] for the word embeddings"));
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<QuantizedModel> assemble_quantized_model(const NamedTensors& tensors, ModelMetadata meta,
                                                  const std::string& file) {
  QuantizedModel m;
  m.config = std::move(meta.config);
  m.model_files = std::move(meta.files);
  m.plan = std::move(meta.plan);
  m.source_sha256 = std::move(meta.source_sha256);
  m.report_json = std::move(meta.report);
  const BertConfig& c = m.config;
  // Each layer has at least 14 tensors (a Qwen2 layer's 7 weights and biases; a BERT layer 16); checking the count
  // first keeps a hostile num_hidden_layers from allocating.
  const int64_t per_layer = c.is_decoder() ? 14 : 16;
  if (c.num_hidden_layers > static_cast<int64_t>(tensors.size()) / per_layer) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": brisk.config has num_hidden_layers = ", c.num_hidden_layers,
                                                   " but the file holds only ", tensors.size(),
                                                   " tensors; expected at least ", per_layer, " per layer"));
  }
  m.weights.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  std::vector<LinearSlot> lin = linear_slots(m.weights, c);
  std::map<std::string, const LinearSlot*> by_name;
  for (const LinearSlot& l : lin) by_name[l.name] = &l;
  for (const auto& [name, lp] : meta.precisions) {
    if (by_name.count(name) == 0 && name != kWordEmbeddingsName) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": brisk.precisions names layer '", name, "', which is not a layer of the config (",
                       c.summary(), "); expected a linear layer such as '",
                       lin.empty() ? std::string("?") : lin[0].name, "' or '", kWordEmbeddingsName, "'"));
    }
    m.precisions[name] = lp.spec;
  }
  auto precision_of = [&](const std::string& name) {
    auto it = meta.precisions.find(name);
    return it == meta.precisions.end() ? LayerPrecision{} : it->second;
  };

  Taker r(tensors, file);
  BRISK_RETURN_IF_ERROR(take_word_embeddings(r, file, precision_of(kWordEmbeddingsName).spec, m));
  for (const F32TensorSlot& t : f32_tensors(m.weights, c)) {
    BRISK_ASSIGN_OR_RETURN(*t.tensor, r.take(t.name, DType::kF32, {t.shape}, "an f32 tensor of the encoder"));
  }
  for (const LinearSlot& l : lin) BRISK_RETURN_IF_ERROR(take_linear(r, file, l, precision_of(l.name), m));
  for (const auto& [name, t] : sequence_classification_head_tensors(tensors)) {
    BRISK_ASSIGN_OR_RETURN(m.head_tensors[name],
                           r.take(name, DType::kF32, {t.shape()}, "a classification head tensor"));
  }
  BRISK_RETURN_IF_ERROR(r.check_all_taken([&](const std::string& tensor) -> std::string {
    const size_t dot = tensor.rfind('.');
    const std::string layer = dot == std::string::npos ? tensor : tensor.substr(0, dot);
    if (by_name.count(layer) == 0 && layer != kWordEmbeddingsName) return "";
    return absl::StrCat(" (layer '", layer, "' is ", precision_name(precision_of(layer).spec), ")");
  }));
  m.weights.weights_file = file;
  m.weights.num_parameters = EncoderWeights::expected_num_parameters(c);
  return m;
}

namespace {

// The tensors a QuantizedModel is written as (checked afterwards by assemble_quantized_model).
StatusOr<std::vector<std::pair<std::string, Tensor>>> model_tensors(const std::string& path,
                                                                    const QuantizedModel& model) {
  EncoderWeights w = model.weights;  // shares the tensors; linear_slots wants a mutable struct
  const BertConfig& c = model.config;
  if (static_cast<int64_t>(w.layers.size()) != c.num_hidden_layers) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the weights have ", w.layers.size(),
                                                   " layers; expected num_hidden_layers = ", c.num_hidden_layers));
  }
  auto spec_of = [&](const std::string& name) {
    auto it = model.precisions.find(name);
    return it == model.precisions.end() ? PrecisionSpec{} : it->second;
  };
  std::vector<std::pair<std::string, Tensor>> out;
  const std::string word = kWordEmbeddingsName;
  out.emplace_back(word + ".weight", w.embeddings.word);
  if (w.embeddings.word_scale.defined()) out.emplace_back(word + ".weight_scale", w.embeddings.word_scale);
  if (w.embeddings.word_min.defined()) out.emplace_back(word + ".weight_min", w.embeddings.word_min);
  for (const F32TensorSlot& t : f32_tensors(w, c)) out.emplace_back(t.name, *t.tensor);
  for (const auto& [name, t] : model.head_tensors) out.emplace_back(name, t);
  for (const LinearSlot& l : linear_slots(w, c)) {
    const std::string& name = l.name;
    const PrecisionSpec spec = spec_of(name);
    const kernels::QuantScales& s = *l.scales;
    const bool int8 = spec.precision == Precision::kInt8Dynamic || spec.precision == Precision::kInt8Static;
    if (!int8 && s.weight_scale.defined()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": layer '", name, "' has a weight_scale but is ",
                                                     precision_name(spec), "; expected int8 for a scaled weight"));
    }
    if (spec.precision != Precision::kInt8Static && s.activation_scale != 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": layer '", name, "' has activation_scale ",
                                                     s.activation_scale, " but is ", precision_name(spec),
                                                     "; expected 0 (or precision int8-static)"));
    }
    if (spec.precision == Precision::kInt4) {
      Int4Matrix q;
      if (auto it = model.int4_linears.find(name); it != model.int4_linears.end()) {
        q = it->second;
      } else {
        BRISK_ASSIGN_OR_RETURN(q, quantize_int4(*l.weight, spec.group_size, spec.with_min, name));
      }
      out.emplace_back(name + ".weight", q.packed);
      out.emplace_back(name + ".weight_scale", q.scales);
      if (q.mins.defined()) out.emplace_back(name + ".weight_min", q.mins);
    } else {
      out.emplace_back(name + ".weight", *l.weight);
      // An int8 layer without scales is left for the checks to name.
      if (int8 && s.weight_scale.defined()) out.emplace_back(name + ".weight_scale", s.weight_scale);
      if (int8 && s.input_scale.defined()) out.emplace_back(name + ".input_scale", s.input_scale);
    }
    out.emplace_back(name + ".bias", *l.bias);
  }
  for (const auto& [name, t] : out) {
    if (!t.defined() || t.device() != Device::kCPU || !t.is_contiguous()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor '", name, "' is ",
                                                     t.defined() ? "not a contiguous cpu tensor" : "missing",
                                                     "; expected the weights of the config's layers"));
    }
  }
  return out;
}

}  // namespace

Status save_quantized_model(const std::string& path, const QuantizedModel& model) {
  BRISK_ASSIGN_OR_RETURN(auto metadata, model_metadata(path, model));
  BRISK_ASSIGN_OR_RETURN(auto tensors, model_tensors(path, model));
  // The loader's checks on exactly what is about to be written.
  BRISK_ASSIGN_OR_RETURN(ModelMetadata meta, parse_model_metadata(metadata, path));
  NamedTensors named;
  for (const auto& [name, t] : tensors) {
    if (!named.emplace(name, t).second) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor '", name, "' is written twice"));
    }
  }
  BRISK_RETURN_IF_ERROR(assemble_quantized_model(named, std::move(meta), path).status());
  return write_safetensors(path, tensors, metadata);
}

StatusOr<QuantizedModel> load_quantized_model(const std::string& path) {
  BRISK_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  BRISK_ASSIGN_OR_RETURN(ModelMetadata meta, parse_model_metadata(file.metadata(), path));
  NamedTensors tensors;
  for (const std::string& name : file.tensor_names()) {
    BRISK_ASSIGN_OR_RETURN(Tensor t, file.get(name));
    tensors.emplace(name, std::move(t));
  }
  return assemble_quantized_model(tensors, std::move(meta), path);
}

Status check_quantized_model_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file; expected a quantized model file"));
  }
  BRISK_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  if (file.metadata().count(kFormatKey) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": a safetensors file whose __metadata__ has no ", kFormatKey,
                                                   "; expected \"", kFormatKey, "\": \"", kQuantizedFormat, "\""));
  }
  return absl::OkStatus();
}

bool is_quantized_model_file(const std::string& path) { return check_quantized_model_file(path).ok(); }

}  // namespace brisk
