// Activation calibrators (minmax, ema, percentile, entropy, mse) and SmoothQuant factors; see calibrate.h.
#include "brisk/quant/calibrate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace brisk::quant {
namespace {

constexpr std::array<std::pair<CalibrationMethod, std::string_view>, 5> kMethodNames = {{
    {CalibrationMethod::kMinMax, "minmax"},
    {CalibrationMethod::kEma, "ema"},
    {CalibrationMethod::kPercentile, "percentile"},
    {CalibrationMethod::kEntropy, "entropy"},
    {CalibrationMethod::kMse, "mse"},
}};
constexpr int kMaxBins = 65536;

// Debian's Abseil does not alias absl::string_view to std::string_view, so StrCat needs the conversion.
absl::string_view av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool uses_histogram(CalibrationMethod m) {
  return m == CalibrationMethod::kPercentile || m == CalibrationMethod::kEntropy || m == CalibrationMethod::kMse;
}

std::string for_tensor(std::string_view tensor_name) {
  return tensor_name.empty() ? std::string() : absl::StrCat(" (tensor '", av(tensor_name), "')");
}

}  // namespace

std::string_view calibration_method_name(CalibrationMethod method) {
  for (const auto& [m, name] : kMethodNames) {
    if (m == method) return name;
  }
  return "unknown";
}

StatusOr<CalibrationMethod> parse_calibration_method(std::string_view name) {
  for (const auto& [m, n] : kMethodNames) {
    if (absl::EqualsIgnoreCase(av(n), av(name))) return m;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "calibration method '", av(name), "' is unknown; expected one of minmax, ema, percentile, entropy, mse"));
}

Status validate_calibration_options(const CalibrationOptions& o, std::string_view tensor_name) {
  const std::string where = for_tensor(tensor_name);
  if (calibration_method_name(o.method) == "unknown") {
    return absl::InvalidArgumentError(absl::StrCat("CalibrationOptions.method is ", static_cast<int>(o.method), where,
                                                   "; expected one of minmax, ema, percentile, entropy, mse"));
  }
  if (o.method == CalibrationMethod::kEma && !(o.ema_constant > 0 && o.ema_constant <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CalibrationOptions.ema_constant is ", o.ema_constant, where, "; expected a value in (0, 1]"));
  }
  if (o.method == CalibrationMethod::kPercentile) {
    const double lowest = o.symmetric ? 0 : 50;
    const bool ok =
        o.symmetric ? (o.percentile > 0 && o.percentile <= 100) : (o.percentile >= 50 && o.percentile <= 100);
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("CalibrationOptions.percentile is ", o.percentile, where,
                                                     "; expected a value in ", o.symmetric ? "(" : "[", lowest,
                                                     ", 100]", o.symmetric ? "" : " for an asymmetric range"));
    }
  }
  if (uses_histogram(o.method) && (o.bins < 1 || o.bins > kMaxBins)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CalibrationOptions.bins is ", o.bins, where, "; expected a value in [1, ", kMaxBins, "]"));
  }
  if (o.method == CalibrationMethod::kEntropy && (o.quant_levels < 1 || o.quant_levels > o.bins)) {
    return absl::InvalidArgumentError(absl::StrCat("CalibrationOptions.quant_levels is ", o.quant_levels, where,
                                                   "; expected a value in [1, bins = ", o.bins, "] for entropy"));
  }
  if (o.method == CalibrationMethod::kMse && o.quant_levels < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("CalibrationOptions.quant_levels is ", o.quant_levels, where, "; expected >= 2 for mse"));
  }
  if ((o.method == CalibrationMethod::kEntropy || o.method == CalibrationMethod::kMse) && !o.symmetric) {
    return absl::InvalidArgumentError(absl::StrCat("CalibrationOptions.symmetric is false", where, " with method ",
                                                   av(calibration_method_name(o.method)),
                                                   "; expected true (entropy and mse calibrate a threshold over |x|)"));
  }
  return absl::OkStatus();
}

ActivationObserver::ActivationObserver(std::string tensor_name, CalibrationOptions options)
    : tensor_name_(std::move(tensor_name)), options_(options) {
  options_status_ = validate_calibration_options(options_, tensor_name_);
}

Status ActivationObserver::observe(const float* x, int64_t n) {
  BRISK_RETURN_IF_ERROR(options_status_);
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("element count of tensor '", tensor_name_, "' is ", n, "; expected >= 0"));
  }
  if (n == 0) return absl::OkStatus();
  if (x == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("data of tensor '", tensor_name_, "' is null with ", n, " elements; expected a pointer"));
  }
  // Validate the whole batch before touching any state, so a rejected batch leaves the observer unchanged.
  float lo = x[0], hi = x[0];
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("element ", i, " of tensor '", tensor_name_, "' is ", x[i], "; expected a finite value"));
    }
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  const float abs_hi = std::max(std::fabs(lo), std::fabs(hi));
  const bool first = batches_ == 0;
  min_ = first ? lo : std::min(min_, lo);
  max_ = first ? hi : std::max(max_, hi);
  absmax_ = first ? abs_hi : std::max(absmax_, abs_hi);

  if (options_.method == CalibrationMethod::kEma) {
    const double batch_lo = options_.symmetric ? -double(abs_hi) : lo;
    const double batch_hi = options_.symmetric ? double(abs_hi) : hi;
    const double c = options_.ema_constant;
    ema_lo_ = first ? batch_lo : (1 - c) * ema_lo_ + c * batch_lo;
    ema_hi_ = first ? batch_hi : (1 - c) * ema_hi_ + c * batch_hi;
  } else if (uses_histogram(options_.method)) {
    add_to_histogram(x, n, options_.symmetric ? 0.0f : lo, options_.symmetric ? abs_hi : hi);
  }
  ++batches_;
  return absl::OkStatus();
}

void ActivationObserver::add_to_histogram(const float* x, int64_t n, float batch_lo, float batch_hi) {
  if (hist_.empty()) {
    hist_.assign(static_cast<size_t>(options_.bins), 0.0);
    hist_lo_ = batch_lo;
    hist_hi_ = batch_hi;
  } else if (batch_lo < hist_lo_ || batch_hi > hist_hi_) {
    widen_histogram(std::min<double>(hist_lo_, batch_lo), std::max<double>(hist_hi_, batch_hi));
  }
  const int bins = options_.bins;
  const double span = hist_hi_ - hist_lo_;
  const double per_unit = span > 0 ? bins / span : 0.0;  // span 0: every value sits in bin 0
  const bool absolute = options_.symmetric;
  for (int64_t i = 0; i < n; ++i) {
    const double v = absolute ? std::fabs(double(x[i])) : double(x[i]);
    const int b = std::clamp(static_cast<int>((v - hist_lo_) * per_unit), 0, bins - 1);
    hist_[static_cast<size_t>(b)] += 1.0;
  }
  hist_total_ += static_cast<double>(n);
}

void ActivationObserver::widen_histogram(double new_lo, double new_hi) {
  const int bins = options_.bins;
  const double old_w = (hist_hi_ - hist_lo_) / bins;
  const double new_w = (new_hi - new_lo) / bins;  // > 0: the range strictly grew
  std::vector<double> widened(static_cast<size_t>(bins), 0.0);
  auto bin_of = [&](double v) { return std::clamp(static_cast<int>((v - new_lo) / new_w), 0, bins - 1); };
  for (int j = 0; j < bins; ++j) {
    const double count = hist_[static_cast<size_t>(j)];
    if (count == 0) continue;
    const double a = hist_lo_ + j * old_w;
    if (old_w == 0) {  // a degenerate old range holds a point mass at hist_lo_
      widened[static_cast<size_t>(bin_of(a))] += count;
      continue;
    }
    // new_w >= old_w, so the old bin [a, a + old_w] overlaps at most two new bins.
    const int k = bin_of(a);
    const double edge = new_lo + (k + 1) * new_w;
    const double inside = std::clamp((edge - a) / old_w, 0.0, 1.0);
    widened[static_cast<size_t>(k)] += count * inside;
    if (inside < 1.0) widened[static_cast<size_t>(std::min(k + 1, bins - 1))] += count * (1.0 - inside);
  }
  hist_ = std::move(widened);
  hist_lo_ = new_lo;
  hist_hi_ = new_hi;
}

// The value below which `fraction` of the histogram's mass lies, interpolated inside the crossing bin.
double ActivationObserver::histogram_quantile(double fraction) const {
  const double target = fraction * hist_total_;
  const double w = (hist_hi_ - hist_lo_) / options_.bins;
  if (target <= 0) {  // the lowest non-empty bin's lower edge
    for (size_t b = 0; b < hist_.size(); ++b) {
      if (hist_[b] > 0) return hist_lo_ + static_cast<double>(b) * w;
    }
    return hist_lo_;
  }
  double cumulative = 0;
  for (size_t b = 0; b < hist_.size(); ++b) {
    const double c = hist_[b];
    if (c > 0 && cumulative + c >= target) return hist_lo_ + (static_cast<double>(b) + (target - cumulative) / c) * w;
    cumulative += c;
  }
  return hist_hi_;
}

double ActivationObserver::entropy_threshold() const {
  const int bins = options_.bins;
  const int levels = options_.quant_levels;
  const double w = hist_hi_ / bins;
  const double total = hist_total_;
  // suffix[i] = mass in bins >= i: the outliers folded into P's last bin.
  std::vector<double> suffix(static_cast<size_t>(bins) + 1, 0.0);
  for (int b = bins - 1; b >= 0; --b) suffix[b] = suffix[b + 1] + hist_[b];
  if (total <= 0) return hist_hi_;

  std::vector<double> p(static_cast<size_t>(bins));
  double best_kl = std::numeric_limits<double>::infinity();
  int best_i = bins;
  for (int i = levels; i <= bins; ++i) {
    // Q is built from the unfolded hist[0:i]: merging P itself would make Q == P at i == levels (KL 0), and
    // the folded outliers are exactly the clipping error Q must be charged for.
    const double q_total = total - suffix[i];
    if (q_total <= 0) continue;
    std::copy(hist_.begin(), hist_.begin() + i, p.begin());
    p[i - 1] += suffix[i];
    const int merged = i / levels;
    double kl = 0;
    for (int g = 0; g < levels && std::isfinite(kl); ++g) {
      const int start = g * merged;
      const int stop = g == levels - 1 ? i : start + merged;
      double sum = 0;
      int nonzero = 0;
      for (int k = start; k < stop; ++k) {
        sum += hist_[k];
        nonzero += p[k] > 0;
      }
      if (nonzero == 0) continue;
      if (sum <= 0) {  // P has mass where Q has none
        kl = std::numeric_limits<double>::infinity();
        break;
      }
      const double q = sum / nonzero / q_total;
      for (int k = start; k < stop; ++k) {
        if (p[k] > 0) kl += p[k] / total * std::log(p[k] / total / q);
      }
    }
    if (kl < best_kl) {
      best_kl = kl;
      best_i = i;
    }
  }
  return best_i * w;
}

double ActivationObserver::mse_threshold() const {
  const int bins = options_.bins;
  const double w = hist_hi_ / bins;
  const double levels = options_.quant_levels - 1;
  double best_err = std::numeric_limits<double>::infinity();
  int best_k = bins;
  for (int k = 1; k <= bins; ++k) {
    const double t = k * w;
    const double scale = t / levels;
    double err = 0;
    for (int b = 0; b < bins; ++b) {
      const double count = hist_[static_cast<size_t>(b)];
      if (count == 0) continue;
      const double c = (b + 0.5) * w;
      const double d = c > t ? c - t : c - std::nearbyint(c / scale) * scale;
      err += count * d * d;
    }
    if (err < best_err) {
      best_err = err;
      best_k = k;
    }
  }
  return best_k * w;
}

StatusOr<CalibrationRange> ActivationObserver::range() const {
  BRISK_RETURN_IF_ERROR(options_status_);
  if (batches_ == 0) {
    return absl::FailedPreconditionError(absl::StrCat("tensor '", tensor_name_,
                                                      "' has observed 0 batches; expected observe() with at least one "
                                                      "non-empty batch before range()"));
  }
  const bool sym = options_.symmetric;
  auto symmetric_range = [](double t) {
    const float f = static_cast<float>(t);
    return CalibrationRange{-f, f};
  };
  switch (options_.method) {
    case CalibrationMethod::kMinMax: return sym ? CalibrationRange{-absmax_, absmax_} : CalibrationRange{min_, max_};
    case CalibrationMethod::kEma: return CalibrationRange{static_cast<float>(ema_lo_), static_cast<float>(ema_hi_)};
    case CalibrationMethod::kPercentile: {
      const double p = options_.percentile / 100.0;
      if (sym) return symmetric_range(std::min<double>(histogram_quantile(p), absmax_));
      const double lo = std::max<double>(histogram_quantile(1.0 - p), min_);
      const double hi = std::min<double>(histogram_quantile(p), max_);
      return CalibrationRange{static_cast<float>(lo), static_cast<float>(std::max(lo, hi))};
    }
    case CalibrationMethod::kEntropy:
      if (hist_hi_ <= 0) return CalibrationRange{};
      return symmetric_range(entropy_threshold());
    case CalibrationMethod::kMse:
      if (hist_hi_ <= 0) return CalibrationRange{};
      return symmetric_range(mse_threshold());
  }
  return absl::InternalError("unreachable calibration method");
}

Status validate_smoothquant_inputs(std::span<const float> activation_channel_absmax, const float* weight,
                                   int64_t out_features, int64_t in_features, float alpha) {
  if (out_features < 0 || in_features < 0) {
    return absl::InvalidArgumentError(absl::StrCat("smoothquant weight shape is [", out_features, ", ", in_features,
                                                   "]; expected non-negative sizes"));
  }
  if (static_cast<int64_t>(activation_channel_absmax.size()) != in_features) {
    return absl::InvalidArgumentError(absl::StrCat("smoothquant activation_channel_absmax has ",
                                                   activation_channel_absmax.size(),
                                                   " channels; expected in_features = ", in_features));
  }
  if (weight == nullptr && out_features * in_features > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("smoothquant weight is null; expected [", out_features, ", ", in_features, "] floats"));
  }
  if (!(alpha >= 0 && alpha <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("smoothquant alpha is ", alpha, "; expected a value in [0, 1]"));
  }
  for (size_t j = 0; j < activation_channel_absmax.size(); ++j) {
    const float a = activation_channel_absmax[j];
    if (!(std::isfinite(a) && a >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("smoothquant activation_channel_absmax[", j, "] is ", a, "; expected a finite value >= 0"));
    }
  }
  return absl::OkStatus();
}

std::vector<float> smoothquant_factors(std::span<const float> activation_channel_absmax, const float* weight,
                                       int64_t out_features, int64_t in_features, float alpha) {
  if (!validate_smoothquant_inputs(activation_channel_absmax, weight, out_features, in_features, alpha).ok()) {
    return {};
  }
  std::vector<double> weight_absmax(static_cast<size_t>(in_features), 0.0);
  for (int64_t o = 0; o < out_features; ++o) {
    const float* row = weight + o * in_features;
    for (int64_t j = 0; j < in_features; ++j) {
      weight_absmax[j] = std::max<double>(weight_absmax[j], std::fabs(row[j]));  // NaN never wins std::max here
    }
  }
  std::vector<float> s(static_cast<size_t>(in_features), 1.0f);
  for (int64_t j = 0; j < in_features; ++j) {
    const double a = activation_channel_absmax[j];
    const double wj = weight_absmax[j];
    if (a <= 0 || !(wj > 0) || !std::isfinite(wj)) continue;
    const double f = std::pow(a, double(alpha)) / std::pow(wj, 1.0 - double(alpha));
    const float ff = static_cast<float>(f);
    if (std::isfinite(ff) && ff > 0) s[j] = ff;
  }
  return s;
}

}  // namespace brisk::quant
