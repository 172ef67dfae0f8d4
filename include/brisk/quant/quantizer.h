// The quantizer: turns fp32 encoder weights into the precisions a plan asks for, calibrates static activation
// scales, measures how far a quantized encoder drifts from fp32, and searches a plan automatically ("auto":
// accuracy-driven fallback of the most sensitive layers, as Intel Neural Compressor does).
//
//   std::vector<PackedSequences> calib = ...;                       // tokenized calibration texts, in batches
//   BRISK_ASSIGN_OR_RETURN(auto ranges, calibrate(*fp32_encoder, calib, CalibrationOptions{}, nullptr));
//   BRISK_ASSIGN_OR_RETURN(LayerPrecisions p, PrecisionPlan::parse("int8-static").value().resolve(names));
//   BRISK_ASSIGN_OR_RETURN(EncoderWeights q, quantize_weights(fp32_weights, config, p, ranges));
//
//   // or let the search pick, keeping the mean embedding cosine against fp32 >= 0.995:
//   BRISK_ASSIGN_OR_RETURN(AutoPlanResult r, auto_plan(config, fp32_weights, calib, Pooling::kMean, {}));
//
// Thread safety: the functions are reentrant; they read the fp32 weights and never modify them.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/encoder.h"
#include "brisk/model/fidelity.h"
#include "brisk/model/weights.h"
#include "brisk/quant/calibrate.h"
#include "brisk/quant/plan.h"

namespace brisk::quant {

using ActivationRanges = std::map<std::string, CalibrationRange>;

// Runs `fp32` over the batches and records the input range of every linear layer with the chosen calibrator. On an
// encoder made with EncoderOptions::reproducible (as `brisk quantize` makes it), the ranges, and channel_absmax's
// statistics, are the same bits on every CPU; otherwise they follow its kernels in their last bits.
BRISK_API StatusOr<ActivationRanges> calibrate(const BertEncoder& fp32, const std::vector<PackedSequences>& batches,
                                               const CalibrationOptions& options, const Progress& progress);

// Per input channel, the largest |x| each linear layer saw over the batches: SmoothQuant's statistics.
using ChannelAbsmax = std::map<std::string, std::vector<float>>;
BRISK_API StatusOr<ChannelAbsmax> channel_absmax(const BertEncoder& fp32, const std::vector<PackedSequences>& batches);

// SmoothQuant for int8-dynamic layers (static ones are left alone: their calibrated scale is of the raw input):
// per input channel s_j = max|X_j|^alpha / max|W_j|^(1 - alpha); the weight's column
// j is multiplied by s_j before quantization and the layer divides its input by s at run time. Q, K and V share
// one s (from their three weights), since they share their input.
struct BRISK_API SmoothQuantOptions {
  float alpha = 0.5f;
  ChannelAbsmax absmax;  // from channel_absmax(); int8 layers without an entry are not smoothed
};

// Quantizes each layer as `precisions` says (missing layers stay fp32). int8-static layers need a range in
// `ranges`; their activation scale is its absmax / 127. Tensors of fp32 layers are shared, not copied.
BRISK_API StatusOr<EncoderWeights> quantize_weights(const EncoderWeights& fp32, const BertConfig& config,
                                                    const LayerPrecisions& precisions, const ActivationRanges& ranges,
                                                    const SmoothQuantOptions* smooth = nullptr);

// embed_all, Fidelity and compare_embeddings: brisk/model/fidelity.h's.
using ::brisk::compare_embeddings;
using ::brisk::embed_all;
using ::brisk::Fidelity;

struct BRISK_API AutoPlanOptions {
  PrecisionSpec quantized{Precision::kInt8Dynamic};  // what every layer starts in
  PrecisionSpec fallback{Precision::kF32};           // what a sensitive layer falls back to
  double min_mean_cosine = 0.995;                    // the tolerance, when no metric is given
  AccuracyMetric metric;                             // optional: replaces the mean cosine
  double min_metric = 0.0;                           // the tolerance on metric()
  ActivationRanges ranges;                           // needed when `quantized` is int8-static
  const SmoothQuantOptions* smoothquant = nullptr;   // optional, for the int8 layers
  Progress progress;
};

struct BRISK_API LayerReport {
  std::string name;
  std::string precision;          // as chosen
  double weight_scale_min = 0.0;  // int8: the per-channel scales' range (0 otherwise)
  double weight_scale_max = 0.0;
  double weight_error = 0.0;       // relative RMS error of the dequantized weight in the chosen precision
  double activation_absmax = 0.0;  // calibrated input range (0 when not calibrated)
  double sensitivity = 0.0;        // drop in score when only this layer is quantized (auto only)
};

struct BRISK_API QuantizationReport {
  std::string plan;
  std::vector<LayerReport> layers;
  Fidelity fidelity;    // of the final model on the calibration batches
  double metric = 0.0;  // the user metric's final value, when one was given
  std::string to_csv() const;
  std::string to_json() const;
};

// Fills weight errors, scales and activation ranges for a finished set of precisions (and the fidelity when
// batches are given).
BRISK_API StatusOr<QuantizationReport> describe(const EncoderWeights& fp32, const BertConfig& config,
                                                const LayerPrecisions& precisions, const ActivationRanges& ranges,
                                                std::string plan_text);

struct BRISK_API AutoPlanResult {
  LayerPrecisions precisions;
  QuantizationReport report;
  std::vector<std::string> fallen_back;  // in the order they fell back
};

// Quantize everything, rank layers by sensitivity (one layer quantized at a time), then fall back the most
// sensitive ones one at a time until the tolerance holds.
BRISK_API StatusOr<AutoPlanResult> auto_plan(const BertConfig& config, const EncoderWeights& fp32,
                                             const std::vector<PackedSequences>& batches, Pooling pooling,
                                             const AutoPlanOptions& options);

}  // namespace brisk::quant
