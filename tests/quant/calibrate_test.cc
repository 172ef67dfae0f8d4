// Activation calibrators against brute-force references computed from the raw samples: exact percentiles of the
// sorted data, a KL-divergence search written out from scratch, and a grid search that quantizes the samples.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "brisk/quant/calibrate.h"

using brisk::Status;
using brisk::quant::ActivationObserver;
using brisk::quant::CalibrationMethod;
using brisk::quant::CalibrationOptions;
using brisk::quant::CalibrationRange;

namespace {

std::vector<float> gaussian(size_t n, double sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, static_cast<float>(sigma));
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> uniform(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> laplace(size_t n, double b, uint32_t seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<double> e(1.0 / b);
  std::bernoulli_distribution sign(0.5);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(sign(rng) ? e(rng) : -e(rng));
  return v;
}

CalibrationRange calibrate(const std::vector<float>& x, CalibrationOptions opts) {
  ActivationObserver obs("t", opts);
  REQUIRE(obs.observe(x.data(), static_cast<int64_t>(x.size())).ok());
  auto r = obs.range();
  REQUIRE(r.ok());
  return *r;
}

double absmax_of(const std::vector<float>& x) {
  double m = 0;
  for (float v : x) m = std::max(m, std::fabs(double(v)));
  return m;
}

// Nearest-rank percentile: the smallest sample with at least p% of the samples at or below it.
double exact_percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  const size_t idx = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(v.size()))) - 1;
  return v[idx];
}

std::vector<double> abs_values(const std::vector<float>& x) {
  std::vector<double> a(x.size());
  for (size_t i = 0; i < x.size(); ++i) a[i] = std::fabs(double(x[i]));
  return a;
}

// TensorRT's entropy calibration, written directly from its description: histogram |x| over [0, max] and,
// for every candidate end bin, compare the clipped distribution P with its quant_levels-bin version Q.
double brute_force_entropy_threshold(const std::vector<float>& x, int bins, int levels) {
  const double mx = absmax_of(x);
  const double width = mx / bins;
  std::vector<double> hist(bins, 0.0);
  for (float v : x) hist[std::min(bins - 1, static_cast<int>(std::fabs(double(v)) / width))] += 1;
  double best = 1e300;
  int best_end = -1;
  for (int end = levels; end <= bins; ++end) {
    std::vector<double> p(hist.begin(), hist.begin() + end);
    for (int k = end; k < bins; ++k) p[end - 1] += hist[k];
    // Q: the histogram inside the clip (outliers not folded) squeezed into `levels` groups, then each group's
    // mass shared equally among the bins where P is non-zero.
    const int per_group = end / levels;
    std::vector<double> group_mass(levels, 0.0), group_nonzero(levels, 0.0);
    auto group_of = [&](int k) { return std::min(k / per_group, levels - 1); };
    for (int k = 0; k < end; ++k) {
      group_mass[group_of(k)] += hist[k];
      if (p[k] != 0) group_nonzero[group_of(k)] += 1;
    }
    std::vector<double> q(end, 0.0);
    for (int k = 0; k < end; ++k) {
      if (p[k] != 0) q[k] = group_mass[group_of(k)] / group_nonzero[group_of(k)];
    }
    double sum_p = 0, sum_q = 0;
    for (int k = 0; k < end; ++k) sum_p += p[k], sum_q += q[k];
    double kl = 0;
    for (int k = 0; k < end; ++k) {
      if (p[k] == 0) continue;
      const double pk = p[k] / sum_p, qk = q[k] / sum_q;
      kl += qk > 0 ? pk * std::log(pk / qk) : INFINITY;
    }
    if (kl < best) best = kl, best_end = end;
  }
  return best_end * width;
}

// Mean squared error of symmetric quantization of the raw samples with threshold t and `levels` positive levels.
double quantization_mse(const std::vector<float>& x, double t, int levels) {
  const double scale = t / levels;
  double err = 0;
  for (float v : x) {
    const double q = std::clamp(std::nearbyint(double(v) / scale), double(-levels), double(levels)) * scale;
    err += (double(v) - q) * (double(v) - q);
  }
  return err / static_cast<double>(x.size());
}

}  // namespace

TEST_CASE("calibration method names parse and print", "[quant]") {
  for (auto m : {CalibrationMethod::kMinMax, CalibrationMethod::kEma, CalibrationMethod::kPercentile,
                 CalibrationMethod::kEntropy, CalibrationMethod::kMse}) {
    auto parsed = brisk::quant::parse_calibration_method(brisk::quant::calibration_method_name(m));
    REQUIRE(parsed.ok());
    CHECK(*parsed == m);
  }
  CHECK(brisk::quant::calibration_method_name(CalibrationMethod::kEntropy) == "entropy");
  CHECK(*brisk::quant::parse_calibration_method("MinMax") == CalibrationMethod::kMinMax);
  for (const char* bad : {"kl", "", "min-max", "entropyy"}) {
    auto r = brisk::quant::parse_calibration_method(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    const std::string msg(r.status().message());
    INFO(msg);
    CHECK(msg.find(std::string("'") + bad + "'") != std::string::npos);
    for (const char* name : {"minmax", "ema", "percentile", "entropy", "mse"}) {
      CHECK(msg.find(name) != std::string::npos);
    }
  }
}

TEST_CASE("invalid calibration options are reported by observe and range", "[quant]") {
  const float x[] = {1.0f};
  auto check_rejected = [&](CalibrationOptions o, const char* field) {
    ActivationObserver obs("enc.l0.ffn_in", o);
    Status st = obs.observe(x, 1);
    INFO(st.message());
    CHECK(st.code() == absl::StatusCode::kInvalidArgument);
    CHECK(st.message().find(field) != std::string_view::npos);
    CHECK(st.message().find("enc.l0.ffn_in") != std::string_view::npos);
    CHECK(obs.range().status().code() == absl::StatusCode::kInvalidArgument);
  };
  check_rejected({.method = CalibrationMethod::kEma, .ema_constant = 0}, "ema_constant");
  check_rejected({.method = CalibrationMethod::kPercentile, .percentile = 100.5}, "percentile");
  check_rejected({.method = CalibrationMethod::kPercentile, .percentile = 30, .symmetric = false}, "percentile");
  check_rejected({.method = CalibrationMethod::kPercentile, .bins = 0}, "bins");
  check_rejected({.method = CalibrationMethod::kEntropy, .bins = 64, .quant_levels = 128}, "quant_levels");
  check_rejected({.method = CalibrationMethod::kEntropy, .symmetric = false}, "symmetric");
  check_rejected({.method = CalibrationMethod::kMse, .quant_levels = 1}, "quant_levels");
  CHECK(brisk::quant::validate_calibration_options({}).ok());
}

TEST_CASE("minmax is exact over batches, symmetric and asymmetric", "[quant]") {
  const std::vector<float> a = {-3.0f, 1.5f, 2.0f, -0.5f}, b = {4.0f, -1.0f};
  for (bool sym : {true, false}) {
    ActivationObserver obs("x", {.method = CalibrationMethod::kMinMax, .symmetric = sym});
    REQUIRE(obs.observe(a.data(), 4).ok());
    REQUIRE(obs.observe(b.data(), 0).ok());  // empty batches are ignored
    REQUIRE(obs.observe(b.data(), 2).ok());
    CHECK(obs.batches() == 2);
    auto r = obs.range();
    REQUIRE(r.ok());
    CHECK(r->min == (sym ? -4.0f : -3.0f));
    CHECK(r->max == 4.0f);
    CHECK(r->absmax() == 4.0f);
  }
}

TEST_CASE("ema follows the hand-written iteration", "[quant]") {
  const double c = 0.1;
  for (bool sym : {true, false}) {
    INFO("symmetric " << sym);
    ActivationObserver obs("x", {.method = CalibrationMethod::kEma, .ema_constant = c, .symmetric = sym});
    double lo = 0, hi = 0;
    for (int b = 0; b < 12; ++b) {
      // Batches with shifting centre and scale, so min and max move independently.
      std::vector<float> x = uniform(100, -1.0f - 0.3f * b, 2.0f + 0.5f * (b % 5), 100 + b);
      double bl = x[0], bh = x[0];
      for (float v : x) bl = std::min(bl, double(v)), bh = std::max(bh, double(v));
      if (sym) bh = std::max(std::fabs(bl), std::fabs(bh)), bl = -bh;
      if (b == 0) {
        lo = bl, hi = bh;
      } else {
        lo = (1 - c) * lo + c * bl;
        hi = (1 - c) * hi + c * bh;
      }
      REQUIRE(obs.observe(x.data(), static_cast<int64_t>(x.size())).ok());
      auto r = obs.range();
      REQUIRE(r.ok());
      CHECK(r->min == Approx(lo).epsilon(1e-6));
      CHECK(r->max == Approx(hi).epsilon(1e-6));
    }
  }
}

TEST_CASE("percentile matches the sorted samples within one bin", "[quant]") {
  const int bins = 2048;
  struct Case {
    const char* name;
    std::vector<float> x;
  };
  const std::vector<Case> cases = {{"gaussian", gaussian(200'000, 1.5, 7)},
                                   {"uniform", uniform(200'000, -2.0f, 3.0f, 11)}};
  for (const Case& c : cases) {
    for (double p : {99.0, 99.9, 99.99}) {
      INFO(c.name << " percentile " << p);
      const double width = absmax_of(c.x) / bins;
      const CalibrationRange sym =
          calibrate(c.x, {.method = CalibrationMethod::kPercentile, .percentile = p, .bins = bins});
      const double want = exact_percentile(abs_values(c.x), p);
      CHECK(std::fabs(sym.max - want) <= width);
      CHECK(sym.min == -sym.max);

      // Asymmetric: the (100 - p)th and pth percentiles of x itself.
      const CalibrationRange asym =
          calibrate(c.x, {.method = CalibrationMethod::kPercentile, .percentile = p, .bins = bins, .symmetric = false});
      std::vector<double> raw(c.x.begin(), c.x.end());
      const double asym_width =
          (*std::max_element(raw.begin(), raw.end()) - *std::min_element(raw.begin(), raw.end())) / bins;
      CHECK(std::fabs(asym.max - exact_percentile(raw, p)) <= asym_width);
      CHECK(std::fabs(asym.min - exact_percentile(raw, 100 - p)) <= asym_width);
    }
  }
}

TEST_CASE("percentile re-bins the histogram when a later batch widens the range", "[quant]") {
  const int bins = 2048;
  const double p = 99.9;
  const std::vector<float> narrow = gaussian(60'000, 1.0, 21), wide = gaussian(60'000, 3.0, 22);
  std::vector<float> all = narrow;
  all.insert(all.end(), wide.begin(), wide.end());
  const double width = absmax_of(all) / bins;
  REQUIRE(absmax_of(wide) > 2 * absmax_of(narrow));  // the second batch really extends the range

  const CalibrationOptions opts{.method = CalibrationMethod::kPercentile, .percentile = p, .bins = bins};
  const double at_once = calibrate(all, opts).max;
  ActivationObserver two("x", opts);
  REQUIRE(two.observe(narrow.data(), static_cast<int64_t>(narrow.size())).ok());
  REQUIRE(two.observe(wide.data(), static_cast<int64_t>(wide.size())).ok());
  const double in_two = two.range()->max;
  const double want = exact_percentile(abs_values(all), p);
  CHECK(std::fabs(at_once - want) <= width);
  CHECK(std::fabs(in_two - at_once) <= 2 * width);

  // Many small widenings (scale creeping up batch by batch) must not smear the histogram away.
  ActivationObserver creeping("x", {.method = CalibrationMethod::kPercentile, .percentile = 99.0, .bins = bins});
  std::vector<float> everything;
  for (int b = 0; b < 40; ++b) {
    std::vector<float> x = gaussian(5'000, 1.0 + 0.05 * b, 300 + b);
    REQUIRE(creeping.observe(x.data(), static_cast<int64_t>(x.size())).ok());
    everything.insert(everything.end(), x.begin(), x.end());
  }
  const double creeping_width = absmax_of(everything) / bins;
  const double creeping_want = exact_percentile(abs_values(everything), 99.0);
  INFO("creeping got " << creeping.range()->max << " want " << creeping_want << " width " << creeping_width);
  CHECK(std::fabs(creeping.range()->max - creeping_want) <= 3 * creeping_width);
}

TEST_CASE("entropy agrees with a brute-force KL search", "[quant]") {
  const int levels = 128;
  struct Case {
    const char* name;
    std::vector<float> x;
    int bins;
  };
  // Both picks land inside the histogram (3.96 of max 4.54; 4.96 of max 6.28), not on a boundary candidate.
  const std::vector<Case> cases = {{"gaussian", gaussian(100'000, 1.0, 31), 1024},
                                   {"laplace", laplace(100'000, 0.5, 32), 2048}};
  for (const Case& c : cases) {
    INFO(c.name);
    const double width = absmax_of(c.x) / c.bins;
    const double got =
        calibrate(c.x, {.method = CalibrationMethod::kEntropy, .bins = c.bins, .quant_levels = levels}).max;
    const double want = brute_force_entropy_threshold(c.x, c.bins, levels);
    INFO("got " << got << " want " << want << " width " << width);
    CHECK(std::fabs(got - want) <= width * 1.0001);
    CHECK(want > (levels + 1) * width);
    CHECK(want < absmax_of(c.x) - width);
  }
}

TEST_CASE("entropy clips a few huge outliers", "[quant]") {
  std::vector<float> x = gaussian(100'000, 1.0, 41);
  for (float v : {40.0f, -38.0f, 39.5f, 40.0f, -40.0f}) x.push_back(v);
  const CalibrationRange r = calibrate(x, {.method = CalibrationMethod::kEntropy});
  INFO("threshold " << r.max);
  CHECK(r.max < 0.25 * 40.0);
  CHECK(r.max > 3.0);  // still covers the bulk of the Gaussian
  CHECK(r.min == -r.max);
}

TEST_CASE("mse agrees with a grid search that quantizes the samples", "[quant]") {
  const int bins = 2048, grid = 512, levels = 127;
  struct Case {
    const char* name;
    std::vector<float> x;
  };
  std::vector<float> outliers = gaussian(50'000, 1.0, 51);
  for (float v : {30.0f, -25.0f, 28.0f}) outliers.push_back(v);
  const std::vector<Case> cases = {
      {"gaussian", gaussian(50'000, 1.0, 52)}, {"laplace", laplace(50'000, 1.0, 53)}, {"gaussian+outliers", outliers}};
  for (const Case& c : cases) {
    INFO(c.name);
    const double mx = absmax_of(c.x);
    const double got = calibrate(c.x, {.method = CalibrationMethod::kMse, .bins = bins}).max;
    double best_t = 0, best_err = 1e300;
    for (int k = 1; k <= grid; ++k) {
      const double t = k * mx / grid;
      const double e = quantization_mse(c.x, t, levels);
      if (e < best_err) best_err = e, best_t = t;
    }
    const double got_err = quantization_mse(c.x, got, levels);
    INFO("got t " << got << " err " << got_err << "; grid t " << best_t << " err " << best_err);
    CHECK(got_err <= 1.02 * best_err);
    CHECK(std::fabs(got - best_t) <= 4 * mx / grid);
  }
}

TEST_CASE("non-finite values are rejected naming the tensor and index", "[quant]") {
  for (auto method : {CalibrationMethod::kMinMax, CalibrationMethod::kEma, CalibrationMethod::kPercentile,
                      CalibrationMethod::kEntropy, CalibrationMethod::kMse}) {
    INFO(brisk::quant::calibration_method_name(method));
    ActivationObserver obs("encoder.layer.3.output", {.method = method});
    for (float bad : {NAN, INFINITY, -INFINITY}) {
      const std::vector<float> x = {0.5f, -1.0f, 2.0f, bad, 1.0f};
      Status st = obs.observe(x.data(), 5);
      INFO(st.message());
      CHECK(st.code() == absl::StatusCode::kInvalidArgument);
      CHECK(st.message().find("encoder.layer.3.output") != std::string_view::npos);
      CHECK(st.message().find("element 3") != std::string_view::npos);
    }
    CHECK(obs.batches() == 0);  // rejected batches leave no trace
    const std::vector<float> good = {0.5f, -1.0f};
    REQUIRE(obs.observe(good.data(), 2).ok());
    CHECK(obs.batches() == 1);
    auto r = obs.range();
    REQUIRE(r.ok());
    if (method == CalibrationMethod::kMinMax || method == CalibrationMethod::kEma) CHECK(r->max == 1.0f);
  }
  ActivationObserver obs("t", {});
  CHECK(obs.observe(nullptr, 3).code() == absl::StatusCode::kInvalidArgument);
  CHECK(obs.observe(nullptr, -1).code() == absl::StatusCode::kInvalidArgument);
  CHECK(obs.observe(nullptr, 0).ok());
}

TEST_CASE("range before any batch is an error naming the tensor", "[quant]") {
  ActivationObserver obs("pooler.dense", {.method = CalibrationMethod::kPercentile});
  auto r = obs.range();
  CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(r.status().message().find("pooler.dense") != std::string_view::npos);
  CHECK(obs.tensor_name() == "pooler.dense");
  const float none = 0;
  REQUIRE(obs.observe(&none, 0).ok());  // an empty batch does not count
  CHECK(obs.range().status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("all-zero tensors calibrate to an empty range", "[quant]") {
  const std::vector<float> zeros(100, 0.0f), later = {0.0f, 2.0f, -1.0f};
  for (auto method : {CalibrationMethod::kMinMax, CalibrationMethod::kPercentile, CalibrationMethod::kEntropy,
                      CalibrationMethod::kMse}) {
    INFO(brisk::quant::calibration_method_name(method));
    ActivationObserver obs("x", {.method = method, .percentile = 50.0});
    REQUIRE(obs.observe(zeros.data(), 100).ok());
    CHECK(obs.range()->max == 0.0f);
    CHECK(obs.range()->min == 0.0f);
    // Widening from a zero-width histogram keeps the zeros at zero.
    REQUIRE(obs.observe(later.data(), 3).ok());
    if (method == CalibrationMethod::kPercentile) CHECK(obs.range()->max <= 2.0f / 2048);
  }
}

TEST_CASE("smoothquant factors follow the formula", "[quant]") {
  // W [out = 2, in = 4]; column maxima |W_j| = {1, 4, 3, 0}.
  const std::vector<float> w = {1.0f,  -2.0f, 3.0f, 0.0f,  //
                                -0.5f, 4.0f,  1.0f, 0.0f};
  const std::vector<float> act = {4.0f, 1.0f, 0.0f, 9.0f};
  const std::vector<float> s = brisk::quant::smoothquant_factors(act, w.data(), 2, 4, 0.5f);
  REQUIRE(s.size() == 4);
  CHECK(s[0] == Approx(2.0));  // sqrt(4) / sqrt(1)
  CHECK(s[1] == Approx(0.5));  // sqrt(1) / sqrt(4)
  CHECK(s[2] == 1.0f);         // zero activation channel
  CHECK(s[3] == 1.0f);         // zero weight column
  const std::vector<float> s8 = brisk::quant::smoothquant_factors(act, w.data(), 2, 4, 0.8f);
  CHECK(s8[1] == Approx(std::pow(1.0, 0.8) / std::pow(4.0, 0.2)));
  CHECK(s8[0] == Approx(std::pow(4.0, 0.8) / std::pow(1.0, 0.2)));

  CHECK(brisk::quant::smoothquant_factors(act, w.data(), 2, 3, 0.5f).empty());  // 4 channels for in = 3
  CHECK(brisk::quant::smoothquant_factors(act, nullptr, 2, 4, 0.5f).empty());
  Status st = brisk::quant::validate_smoothquant_inputs(act, w.data(), 2, 3, 0.5f);
  CHECK(st.message().find("in_features") != std::string_view::npos);
  CHECK(brisk::quant::validate_smoothquant_inputs(act, w.data(), 2, 4, 1.5f).message().find("alpha") !=
        std::string_view::npos);
}

TEST_CASE("smoothquant keeps X * W^T and balances the channel maxima", "[quant]") {
  const int64_t tokens = 16, in = 24, out = 10;
  std::vector<float> x = gaussian(tokens * in, 1.0, 61), w = gaussian(out * in, 0.1, 62);
  for (int64_t t = 0; t < tokens; ++t) x[t * in + 5] *= 50.0f;  // an outlier channel, as in LLM activations
  std::vector<float> act(in, 0.0f), wmax(in, 0.0f);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < in; ++j) act[j] = std::max(act[j], std::fabs(x[t * in + j]));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < in; ++j) wmax[j] = std::max(wmax[j], std::fabs(w[o * in + j]));
  const std::vector<float> s = brisk::quant::smoothquant_factors(act, w.data(), out, in, 0.5f);
  REQUIRE(s.size() == static_cast<size_t>(in));
  for (int64_t j = 0; j < in; ++j) {
    // alpha = 0.5 makes the smoothed maxima equal: max|X_j| / s_j == max|W_j| * s_j.
    CHECK(act[j] / s[j] == Approx(wmax[j] * s[j]).epsilon(1e-5));
  }
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t o = 0; o < out; ++o) {
      double plain = 0, smoothed = 0;
      for (int64_t j = 0; j < in; ++j) {
        plain += double(x[t * in + j]) * w[o * in + j];
        smoothed += double(x[t * in + j] / s[j]) * double(w[o * in + j] * s[j]);
      }
      CHECK(smoothed == Approx(plain).epsilon(1e-5).margin(1e-5));
    }
  }
}
