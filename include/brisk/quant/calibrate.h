// Activation calibration for int8 quantization: an ActivationObserver watches one tensor over calibration
// batches and reports the range [min, max] its quantizer should cover; smoothquant_factors computes SmoothQuant's
// per-channel scales that move activation outliers into the weights before calibration.
//
//   CalibrationOptions opts{.method = CalibrationMethod::kEntropy};
//   ActivationObserver obs("encoder.layer.0.attention.output", opts);
//   for (const Batch& b : calibration_set) BRISK_RETURN_IF_ERROR(obs.observe(b.data(), b.size()));
//   BRISK_ASSIGN_OR_RETURN(CalibrationRange r, obs.range());
//   const float scale = r.absmax() / 127.0f;            // symmetric int8
//
// Methods (symmetric: the range is [-t, t] for a threshold t over |x|; asymmetric: [lo, hi] over x):
//   minmax      t = max|x| over all batches; asymmetric: the global min and max.
//   ema         per batch range r_b; range = r_1, then range = (1 - c) * range + c * r_b (c = ema_constant).
//               Symmetric averages max|x| per batch; asymmetric averages min and max separately.
//   percentile  t = the given percentile of |x|; asymmetric: lo = the (100 - p)th, hi = the pth percentile of x.
//               Interpolated linearly inside the histogram bin where the cumulative count crosses the target.
//   entropy     TensorRT's KL-divergence search (symmetric only). For i in [quant_levels, bins]: P = hist[0:i]
//               with the counts of bins >= i added to P[i - 1]; Q = hist[0:i] (without those outliers) merged
//               into quant_levels groups of floor(i / quant_levels) bins (the remainder joins the last group) and
//               spread evenly back over each group's bins where P is non-zero. P and Q are normalised separately;
//               the i with the smallest KL(P || Q) wins (the smallest i on ties; a Q that is zero where P is not
//               rules i out), and t = i * bin_width, the upper edge of P's last bin.
//   mse         (symmetric only) over the candidate bin edges t = k * bin_width, k in [1, bins], the t with the
//               smallest estimated squared error of symmetric quantization with scale t / (quant_levels - 1)
//               (127 for int8): each bin is represented by its centre c with weight count; c > t costs (c - t)^2
//               (clipping), c <= t costs (c - round(c / scale) * scale)^2 (rounding). Smallest t on ties.
// The asymmetric range is the data's own; it need not contain 0 (the quantizer extends it if it must).
//
// Histogram (percentile, entropy, mse): `bins` bins of equal width over [0, max|x| so far] (symmetric) or
// [min x, max x] (asymmetric). The bin count is fixed: when a batch extends the range, the old histogram is
// re-binned into the wider bins, each old bin's count split between the (at most two) new bins it overlaps in
// proportion to the overlap, i.e. assuming the values are spread evenly inside an old bin. A result can
// therefore be off by about one bin width of the final histogram compared with observing everything at once.
// range() runs the search each time: O(bins) for percentile, O(bins^2) for entropy and mse.
//
// Bad input: a NaN or infinite element makes observe() fail with InvalidArgument (naming the tensor and the
// index) and leaves the observer unchanged. Invalid options (see validate_calibration_options) make observe()
// and range() fail. An all-zero tensor gives the range [0, 0].
//
// Thread safety: an ActivationObserver is not synchronised: observe() must not run concurrently with any other
// call on the same observer; const members may run concurrently with each other. Distinct observers are
// independent. The free functions are reentrant.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk::quant {

enum class CalibrationMethod : uint8_t { kMinMax, kEma, kPercentile, kEntropy, kMse };

// "minmax", "ema", "percentile", "entropy", "mse".
BRISK_API std::string_view calibration_method_name(CalibrationMethod method);
// The inverse of calibration_method_name (ASCII case ignored); unknown names are InvalidArgument listing the
// valid ones.
BRISK_API StatusOr<CalibrationMethod> parse_calibration_method(std::string_view name);

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::kMinMax;
  double ema_constant = 0.01;  // ema: weight of the newest batch, in (0, 1]
  double percentile = 99.99;   // percentile: in (0, 100]; asymmetric needs >= 50 so that lo <= hi
  int bins = 2048;             // histogram bins (percentile, entropy, mse), in [1, 65536]
  int quant_levels = 128;      // entropy: target bins (int8 symmetric: 128); mse: quant_levels - 1 positive levels
  bool symmetric = true;       // entropy and mse require true
};

// OK, or InvalidArgument naming the field, its value and what is expected; tensor_name goes into the message.
BRISK_API Status validate_calibration_options(const CalibrationOptions& options, std::string_view tensor_name = "");

struct CalibrationRange {
  float min = 0;
  float max = 0;
  float absmax() const { return max > -min ? max : -min; }
};

// Accumulates one tensor's statistics over calibration batches (one observe() per batch).
class BRISK_API ActivationObserver {
 public:
  ActivationObserver(std::string tensor_name, CalibrationOptions options);

  // Adds one batch of n contiguous fp32 values. n == 0 is accepted and ignored (it is not counted as a batch).
  Status observe(const float* x, int64_t n);
  // FailedPrecondition naming the tensor when no non-empty batch was observed.
  StatusOr<CalibrationRange> range() const;
  // Non-empty batches observed.
  int64_t batches() const { return batches_; }
  const std::string& tensor_name() const { return tensor_name_; }
  const CalibrationOptions& options() const { return options_; }

 private:
  void add_to_histogram(const float* x, int64_t n, float batch_lo, float batch_hi);
  void widen_histogram(double new_lo, double new_hi);
  double histogram_quantile(double fraction) const;
  double entropy_threshold() const;
  double mse_threshold() const;

  std::string tensor_name_;
  CalibrationOptions options_;
  Status options_status_;
  int64_t batches_ = 0;
  float min_ = 0, max_ = 0, absmax_ = 0;  // exact, over all batches
  double ema_lo_ = 0, ema_hi_ = 0;        // ema: symmetric keeps max|x| in ema_hi_
  // Histogram over [hist_lo_, hist_hi_] of |x| (symmetric) or x (asymmetric); fractional after re-binning.
  std::vector<double> hist_;
  double hist_lo_ = 0, hist_hi_ = 0, hist_total_ = 0;
};

// SmoothQuant (Xiao et al., 2023): per input channel j,
//   s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)
// with W [out_features, in_features] row-major (PyTorch's Linear layout) and max|W_j| over column j. X is then
// divided by s (per column) and W's column j multiplied by s_j, which leaves X * W^T unchanged. A channel whose
// activation or weight maximum is zero, or whose factor is not a finite positive number, gets s = 1.
// Invalid input (see validate_smoothquant_inputs) returns an empty vector.
BRISK_API std::vector<float> smoothquant_factors(std::span<const float> activation_channel_absmax, const float* weight,
                                                 int64_t out_features, int64_t in_features, float alpha = 0.5f);
// OK, or InvalidArgument saying which argument is wrong: sizes that disagree, a negative size, a null weight,
// a negative or non-finite activation maximum, alpha outside [0, 1].
BRISK_API Status validate_smoothquant_inputs(std::span<const float> activation_channel_absmax, const float* weight,
                                             int64_t out_features, int64_t in_features, float alpha);

}  // namespace brisk::quant
