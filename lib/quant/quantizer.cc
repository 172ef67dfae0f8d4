// The quantizer. See include/brisk/quant/quantizer.h.
#include "brisk/quant/quantizer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "brisk/core/half.h"
#include "nlohmann/json.hpp"

namespace brisk::quant {
namespace {

bool is_int8(const PrecisionSpec& p) {
  return p.precision == Precision::kInt8Dynamic || p.precision == Precision::kInt8Static;
}

PrecisionSpec precision_of(const LayerPrecisions& precisions, const std::string& name) {
  auto it = precisions.find(name);
  return it == precisions.end() ? PrecisionSpec{} : it->second;
}

// The weight with column j multiplied by s[j] (a copy).
StatusOr<Tensor> scale_columns(const Tensor& w, const std::vector<float>& s) {
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(w.shape(), DType::kF32));
  const int64_t rows = w.dim(0), cols = w.dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out.data<float>()[r * cols + c] = w.data<float>()[r * cols + c] * s[c];
  }
  return out;
}

// SmoothQuant divisors for a group of layers that share one input (Q, K, V), from their stacked weights.
StatusOr<std::vector<float>> smoothing_for(const std::vector<const LinearSlot*>& group,
                                           const std::vector<float>& absmax, float alpha) {
  const int64_t in = group[0]->weight->dim(1);
  std::vector<float> stacked;
  for (const LinearSlot* slot : group) {
    const float* w = slot->weight->data<float>();
    stacked.insert(stacked.end(), w, w + slot->weight->numel());
  }
  const int64_t out = static_cast<int64_t>(stacked.size()) / in;
  BRISK_RETURN_IF_ERROR(validate_smoothquant_inputs(absmax, stacked.data(), out, in, alpha));
  return smoothquant_factors(absmax, stacked.data(), out, in, alpha);
}

Status quantize_linear(const LinearSlot& slot, const PrecisionSpec& spec, const ActivationRanges& ranges,
                       const std::vector<float>* smoothing) {
  switch (spec.precision) {
    case Precision::kF32: return absl::OkStatus();
    case Precision::kBF16: {
      BRISK_ASSIGN_OR_RETURN(*slot.weight, to_bfloat16(*slot.weight, slot.name + ".weight"));
      return absl::OkStatus();
    }
    case Precision::kInt8Dynamic:
    case Precision::kInt8Static: {
      float activation_scale = 0.0f;
      if (spec.precision == Precision::kInt8Static) {
        auto it = ranges.find(slot.name);
        if (it == ranges.end()) {
          return absl::FailedPreconditionError(
              absl::StrCat("layer '", slot.name,
                           "' is int8-static but has no calibrated activation range; expected calibrate() "
                           "to have run over it"));
        }
        const float range = it->second.absmax();
        activation_scale = range > 0.0f ? range / 127.0f : 1.0f;
      }
      Tensor weight = *slot.weight;
      Tensor input_scale;
      if (smoothing != nullptr) {
        BRISK_ASSIGN_OR_RETURN(weight, scale_columns(weight, *smoothing));
        BRISK_ASSIGN_OR_RETURN(input_scale, Tensor::empty({static_cast<int64_t>(smoothing->size())}, DType::kF32));
        std::copy(smoothing->begin(), smoothing->end(), input_scale.data<float>());
      }
      BRISK_ASSIGN_OR_RETURN(Int8Matrix q, quantize_int8(weight, slot.name + ".weight"));
      *slot.weight = std::move(q.values);
      *slot.scales = kernels::QuantScales{std::move(q.scales), activation_scale, std::move(input_scale)};
      return absl::OkStatus();
    }
    case Precision::kInt4: {
      // Weight-only: the layer computes in f32 from the dequantized weight; the file keeps the int4 groups.
      BRISK_ASSIGN_OR_RETURN(Int4Matrix q,
                             quantize_int4(*slot.weight, spec.group_size, spec.with_min, slot.name + ".weight"));
      BRISK_ASSIGN_OR_RETURN(*slot.weight, dequantize_int4(q));
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown precision");
}

Status quantize_word_embeddings(EmbeddingWeights& e, const PrecisionSpec& spec) {
  const std::string name = absl::StrCat(kWordEmbeddingsName, ".weight");
  if (spec.precision == Precision::kF32) return absl::OkStatus();
  if (is_int8(spec)) {
    BRISK_ASSIGN_OR_RETURN(Int8Matrix q, quantize_int8(e.word, name));
    e.word = std::move(q.values);
    e.word_scale = std::move(q.scales);
    return absl::OkStatus();
  }
  if (spec.precision == Precision::kInt4) {
    BRISK_ASSIGN_OR_RETURN(Int4Matrix q, quantize_int4(e.word, spec.group_size, spec.with_min, name));
    e.word = std::move(q.packed);
    e.word_scale = std::move(q.scales);
    e.word_min = std::move(q.mins);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("precision of ", kWordEmbeddingsName, " is ", precision_name(spec),
                                                 "; expected fp32, int8 or int4-gN"));
}

// Relative RMS error ||w - dequant(quant(w))|| / ||w|| of one weight in one precision.
StatusOr<double> weight_error(const Tensor& w, const PrecisionSpec& spec, const std::string& name, double* smin,
                              double* smax) {
  if (spec.precision == Precision::kF32) return 0.0;
  Tensor back;
  if (spec.precision == Precision::kBF16) {
    BRISK_ASSIGN_OR_RETURN(Tensor b, to_bfloat16(w, name));
    BRISK_ASSIGN_OR_RETURN(back, Tensor::empty(w.shape(), DType::kF32));
    for (int64_t i = 0; i < w.numel(); ++i) back.data<float>()[i] = bf16_to_float(b.data<uint16_t>()[i]);
  } else if (is_int8(spec)) {
    BRISK_ASSIGN_OR_RETURN(Int8Matrix q, quantize_int8(w, name));
    const float* s = q.scales.data<float>();
    *smin = *std::min_element(s, s + q.scales.numel());
    *smax = *std::max_element(s, s + q.scales.numel());
    BRISK_ASSIGN_OR_RETURN(back, dequantize_int8(q));
  } else {
    BRISK_ASSIGN_OR_RETURN(Int4Matrix q, quantize_int4(w, spec.group_size, spec.with_min, name));
    BRISK_ASSIGN_OR_RETURN(back, dequantize_int4(q));
  }
  double err = 0.0, norm = 0.0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    const double a = w.data<float>()[i], d = a - back.data<float>()[i];
    err += d * d;
    norm += a * a;
  }
  return norm > 0.0 ? std::sqrt(err / norm) : 0.0;
}

}  // namespace

StatusOr<ActivationRanges> calibrate(const BertEncoder& fp32, const std::vector<PackedSequences>& batches,
                                     const CalibrationOptions& options, const Progress& progress) {
  if (batches.empty()) {
    return absl::InvalidArgumentError("calibration has no batches; expected at least one tokenized text");
  }
  std::map<std::string, ActivationObserver> observers;
  const ActivationTap tap = [&](std::string_view name, const float* x, int64_t rows, int64_t cols) -> Status {
    auto it = observers.find(std::string(name));
    if (it == observers.end())
      it = observers.emplace(std::string(name), ActivationObserver(std::string(name), options)).first;
    return it->second.observe(x, rows * cols);
  };
  std::vector<float> hidden;
  for (size_t i = 0; i < batches.size(); ++i) {
    hidden.resize(static_cast<size_t>(batches[i].total_tokens() * fp32.hidden_size()));
    BRISK_RETURN_IF_ERROR(fp32.forward(batches[i], hidden.data(), tap));
    if (progress) progress("calibrate", static_cast<int64_t>(i + 1), static_cast<int64_t>(batches.size()));
  }
  ActivationRanges ranges;
  for (const auto& [name, observer] : observers) {
    BRISK_ASSIGN_OR_RETURN(ranges[name], observer.range());
  }
  return ranges;
}

StatusOr<ChannelAbsmax> channel_absmax(const BertEncoder& fp32, const std::vector<PackedSequences>& batches) {
  ChannelAbsmax out;
  const ActivationTap tap = [&](std::string_view name, const float* x, int64_t rows, int64_t cols) -> Status {
    std::vector<float>& m = out[std::string(name)];
    m.resize(static_cast<size_t>(cols), 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) m[c] = std::max(m[c], std::fabs(x[r * cols + c]));
    }
    return absl::OkStatus();
  };
  std::vector<float> hidden;
  for (const PackedSequences& batch : batches) {
    hidden.resize(static_cast<size_t>(batch.total_tokens() * fp32.hidden_size()));
    BRISK_RETURN_IF_ERROR(fp32.forward(batch, hidden.data(), tap));
  }
  return out;
}

StatusOr<EncoderWeights> quantize_weights(const EncoderWeights& fp32, const BertConfig& config,
                                          const LayerPrecisions& precisions, const ActivationRanges& ranges,
                                          const SmoothQuantOptions* smooth) {
  const std::vector<std::string> names = layer_names(config);
  for (const auto& [name, spec] : precisions) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return absl::InvalidArgumentError(absl::StrCat("layer '", name, "' is not a layer of this ", config.model_type,
                                                     " model; expected a name from layer_names()"));
    }
  }
  EncoderWeights out = fp32;  // shares every tensor; quantized ones are replaced below
  if (out.embeddings.word.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrCat(kWordEmbeddingsName, " is ", dtype_name(out.embeddings.word.dtype()),
                                                   "; expected the fp32 weights as the quantizer's input"));
  }
  const std::vector<LinearSlot> slots = linear_slots(out, config);
  for (const LinearSlot& slot : slots) {
    if (slot.weight->dtype() != DType::kF32) {
      return absl::InvalidArgumentError(absl::StrCat("layer '", slot.name, "' is ", dtype_name(slot.weight->dtype()),
                                                     "; expected the fp32 weights as the quantizer's input"));
    }
  }
  // SmoothQuant divisors per int8 layer with statistics. Linears that read one input (shared_input_linears) share
  // theirs when all are int8, so that the encoder can still run them as one GEMM.
  std::map<std::string, std::vector<float>> smoothing;
  if (smooth != nullptr) {
    const auto per_layer = static_cast<size_t>(linears_per_layer(config));
    const std::vector<std::vector<size_t>> shared_input = shared_input_linears(config);
    for (size_t i = 0; i < slots.size(); ++i) {
      const LinearSlot& slot = slots[i];
      auto stats = smooth->absmax.find(slot.name);
      // Dynamic layers only: a static scale would need the calibrator to see the smoothed input.
      auto dynamic = [&](size_t j) {
        return precision_of(precisions, slots[j].name).precision == Precision::kInt8Dynamic;
      };
      if (!dynamic(i) || stats == smooth->absmax.end()) continue;
      std::vector<const LinearSlot*> group{&slot};
      const size_t first = i - i % per_layer;
      for (const std::vector<size_t>& roles : shared_input) {
        if (std::find(roles.begin(), roles.end(), i % per_layer) == roles.end()) continue;
        if (std::all_of(roles.begin(), roles.end(), [&](size_t r) { return dynamic(first + r); })) {
          group.clear();
          for (size_t r : roles) group.push_back(&slots[first + r]);
        }
      }
      BRISK_ASSIGN_OR_RETURN(smoothing[slot.name], smoothing_for(group, stats->second, smooth->alpha));
    }
  }
  for (const LinearSlot& slot : slots) {
    auto s = smoothing.find(slot.name);
    const bool smoothed = s != smoothing.end();
    BRISK_RETURN_IF_ERROR(
        quantize_linear(slot, precision_of(precisions, slot.name), ranges, smoothed ? &s->second : nullptr));
  }
  BRISK_RETURN_IF_ERROR(quantize_word_embeddings(out.embeddings, precision_of(precisions, kWordEmbeddingsName)));
  return out;
}

StatusOr<QuantizationReport> describe(const EncoderWeights& fp32, const BertConfig& config,
                                      const LayerPrecisions& precisions, const ActivationRanges& ranges,
                                      std::string plan_text) {
  QuantizationReport report;
  report.plan = std::move(plan_text);
  EncoderWeights view = fp32;
  std::map<std::string, const Tensor*> weights;
  for (const LinearSlot& slot : linear_slots(view, config)) weights[slot.name] = slot.weight;
  weights[kWordEmbeddingsName] = &view.embeddings.word;
  for (const std::string& name : layer_names(config)) {
    LayerReport layer;
    layer.name = name;
    const PrecisionSpec spec = precision_of(precisions, name);
    layer.precision = precision_name(spec);
    BRISK_ASSIGN_OR_RETURN(layer.weight_error, weight_error(*weights.at(name), spec, name + ".weight",
                                                            &layer.weight_scale_min, &layer.weight_scale_max));
    if (auto it = ranges.find(name); it != ranges.end()) layer.activation_absmax = it->second.absmax();
    report.layers.push_back(std::move(layer));
  }
  return report;
}

std::string QuantizationReport::to_csv() const {
  std::string out = "layer,precision,weight_scale_min,weight_scale_max,weight_error,activation_absmax,sensitivity\n";
  for (const LayerReport& l : layers) {
    absl::StrAppend(&out, l.name, ",", l.precision, ",", l.weight_scale_min, ",", l.weight_scale_max, ",",
                    l.weight_error, ",", l.activation_absmax, ",", l.sensitivity, "\n");
  }
  return out;
}

std::string QuantizationReport::to_json() const {
  nlohmann::json j;
  j["plan"] = plan;
  j["mean_cosine"] = fidelity.mean_cosine;
  j["worst_cosine"] = fidelity.worst_cosine;
  j["metric"] = metric;
  j["layers"] = nlohmann::json::array();
  for (const LayerReport& l : layers) {
    j["layers"].push_back({{"layer", l.name},
                           {"precision", l.precision},
                           {"weight_scale_min", l.weight_scale_min},
                           {"weight_scale_max", l.weight_scale_max},
                           {"weight_error", l.weight_error},
                           {"activation_absmax", l.activation_absmax},
                           {"sensitivity", l.sensitivity}});
  }
  return j.dump(2);
}

StatusOr<AutoPlanResult> auto_plan(const BertConfig& config, const EncoderWeights& fp32,
                                   const std::vector<PackedSequences>& batches, Pooling pooling,
                                   const AutoPlanOptions& options) {
  if (batches.empty()) return absl::InvalidArgumentError("auto plan has no batches; expected calibration texts");
  const std::vector<std::string> names = layer_names(config);
  BRISK_ASSIGN_OR_RETURN(auto reference_encoder, BertEncoder::create(config, fp32, Device::kCPU));
  BRISK_ASSIGN_OR_RETURN(std::vector<float> reference, embed_all(*reference_encoder, batches, pooling));
  const int64_t h = config.hidden_size;

  // The word embeddings take no bf16 or static scheme: their nearest one instead.
  auto quantized_for = [&](const std::string& name) -> PrecisionSpec {
    if (name != kWordEmbeddingsName) return options.quantized;
    if (options.quantized.precision == Precision::kBF16) return PrecisionSpec{};
    if (options.quantized.precision == Precision::kInt8Static) return PrecisionSpec{Precision::kInt8Dynamic};
    return options.quantized;
  };

  // Every layer is quantized once per candidate precision; a trial only picks, per layer, which copy to use.
  LayerPrecisions all_quantized, all_fallback;
  for (const std::string& name : names) {
    all_quantized[name] = quantized_for(name);
    all_fallback[name] = name == kWordEmbeddingsName ? PrecisionSpec{} : options.fallback;
  }
  BRISK_ASSIGN_OR_RETURN(EncoderWeights quantized_weights,
                         quantize_weights(fp32, config, all_quantized, options.ranges, options.smoothquant));
  BRISK_ASSIGN_OR_RETURN(EncoderWeights fallback_weights,
                         quantize_weights(fp32, config, all_fallback, options.ranges, options.smoothquant));
  auto assemble = [&](const LayerPrecisions& precisions) {
    EncoderWeights out = fp32;
    EncoderWeights q = quantized_weights, fb = fallback_weights;  // shallow copies: slots need non-const access
    const std::vector<LinearSlot> dst = linear_slots(out, config), qs = linear_slots(q, config),
                                  fs = linear_slots(fb, config);
    for (size_t i = 0; i < dst.size(); ++i) {
      const PrecisionSpec p = precision_of(precisions, dst[i].name);
      const LinearSlot* src = p == all_quantized.at(dst[i].name) ? &qs[i] : p == options.fallback ? &fs[i] : nullptr;
      if (src == nullptr || p.precision == Precision::kF32) continue;
      *dst[i].weight = *src->weight;
      *dst[i].scales = *src->scales;
    }
    if (precision_of(precisions, kWordEmbeddingsName) == all_quantized.at(kWordEmbeddingsName)) {
      out.embeddings.word = q.embeddings.word;
      out.embeddings.word_scale = q.embeddings.word_scale;
      out.embeddings.word_min = q.embeddings.word_min;
    }
    return out;
  };

  // The score of a set of precisions: the user's metric, else the mean cosine against fp32.
  Fidelity last_fidelity;
  auto score = [&](const LayerPrecisions& precisions) -> StatusOr<double> {
    BRISK_ASSIGN_OR_RETURN(auto encoder, BertEncoder::create(config, assemble(precisions), Device::kCPU));
    BRISK_ASSIGN_OR_RETURN(std::vector<float> emb, embed_all(*encoder, batches, pooling));
    last_fidelity = compare_embeddings(reference, emb, h);
    if (options.metric) return options.metric(*encoder);
    return last_fidelity.mean_cosine;
  };
  const double tolerance = options.metric ? options.min_metric : options.min_mean_cosine;
  double fp32_score = 1.0;
  if (options.metric) {
    BRISK_ASSIGN_OR_RETURN(fp32_score, options.metric(*reference_encoder));
  }

  std::map<std::string, double> sensitivity;
  for (size_t i = 0; i < names.size(); ++i) {
    LayerPrecisions only{{names[i], quantized_for(names[i])}};
    BRISK_ASSIGN_OR_RETURN(double s, score(only));
    sensitivity[names[i]] = fp32_score - s;
    if (options.progress)
      options.progress("sensitivity", static_cast<int64_t>(i + 1), static_cast<int64_t>(names.size()));
  }

  AutoPlanResult result;
  for (const std::string& name : names) result.precisions[name] = quantized_for(name);
  std::vector<std::string> order = names;  // most sensitive first
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return sensitivity[a] > sensitivity[b]; });
  BRISK_ASSIGN_OR_RETURN(double current, score(result.precisions));
  for (const std::string& name : order) {
    if (current >= tolerance) break;
    result.precisions[name] = options.fallback;
    result.fallen_back.push_back(name);
    BRISK_ASSIGN_OR_RETURN(current, score(result.precisions));
    if (options.progress) {
      options.progress("fallback", static_cast<int64_t>(result.fallen_back.size()), static_cast<int64_t>(names.size()));
    }
  }
  std::string plan_text =
      absl::StrCat("auto(", precision_name(options.quantized), ", fallback ", precision_name(options.fallback), ")");
  BRISK_ASSIGN_OR_RETURN(result.report, describe(fp32, config, result.precisions, options.ranges, plan_text));
  for (LayerReport& l : result.report.layers) l.sensitivity = sensitivity[l.name];
  result.report.fidelity = last_fidelity;
  result.report.metric = current;
  return result;
}

}  // namespace brisk::quant
