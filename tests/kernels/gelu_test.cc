// bias_gelu on the cpu (exact erf form and FastGeLU tanh form) against double-precision references, per ISA level.
#include "brisk/kernels/gelu.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernel_test_util.h"

namespace brisk::kernels {
namespace {

using testing::random_floats;

double gelu_erf_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// 0.5 x (1 + tanh(u)) == x / (1 + exp(-2u)); the second form has no cancellation for x << 0, so it is the
// accurate reference even where double's 1 + tanh(u) rounds to 0.
double gelu_tanh_ref(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}

// Inputs the GeLU sees in a BERT FFN are mostly in [-10, 10]; add large and tiny magnitudes and exact zeros.
std::vector<float> gelu_inputs(size_t n, uint32_t seed) {
  std::vector<float> x = random_floats(n, -8.0f, 8.0f, seed);
  const float specials[] = {0.0f,  -0.0f, 1e-30f, -1e-30f, 3.9f,  -3.9f, 5.7f,
                            -5.7f, 12.0f, -12.0f, 1e4f,    -1e4f, 1e30f, -1e30f};
  for (size_t i = 0; i < n; i += 5) x[i] = specials[(i / 5) % (sizeof(specials) / sizeof(specials[0]))];
  return x;
}

void check_bias_gelu(int64_t rows, int64_t cols, bool with_bias, GeluApproximation approx, uint32_t seed) {
  const size_t n = static_cast<size_t>(rows * cols);
  std::vector<float> x = gelu_inputs(n, seed);
  const std::vector<float> bias = random_floats(static_cast<size_t>(cols), -1.0f, 1.0f, seed + 1);
  std::vector<double> want(n);
  // Error budget: the bias add is rounded in fp32 (as the kernel must), and gelu's own error is ~0.5|x| times
  // erf's (<= 1e-6 absolute) or a few ulp relative for the tanh form.
  std::vector<float> sum(n);
  for (size_t i = 0; i < n; ++i) {
    sum[i] = with_bias ? x[i] + bias[i % static_cast<size_t>(cols)] : x[i];
    want[i] = approx == GeluApproximation::kErf ? gelu_erf_ref(sum[i]) : gelu_tanh_ref(sum[i]);
  }
  REQUIRE(bias_gelu(Device::kCPU, x.data(), with_bias ? bias.data() : nullptr, rows, cols, approx).ok());
  for (size_t i = 0; i < n; ++i) {
    const double err = std::fabs(x[i] - want[i]);
    const double scale = std::fabs(static_cast<double>(sum[i]));
    // erf form: 1e-6 absolute on erf -> 0.5e-6 |x| on gelu; tanh form: 4e-6 relative (exp of -2u amplifies
    // exp's rounding by |2u| for x ~ -9), plus 1e-7 absolute for results near 0.
    const double tol = approx == GeluApproximation::kErf ? 1e-7 + 6e-7 * scale + 2e-7 * std::fabs(want[i])
                                                         : 1e-7 + 1e-5 * std::fabs(want[i]);
    if (!(err <= tol)) {
      FAIL_CHECK("element " << i << " x " << sum[i] << ": got " << x[i] << ", want " << want[i] << " (error " << err
                            << ", tolerance " << tol << ")");
      return;
    }
  }
  SUCCEED();
}

TEST_CASE("bias_gelu matches the double references on odd sizes", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const GeluApproximation approx : {GeluApproximation::kErf, GeluApproximation::kTanh}) {
    for (const int64_t cols : {1, 7, 15, 16, 17, 384, 1000, 1536}) {
      const int64_t rows = cols >= 384 ? 67 : 3;
      for (const bool with_bias : {false, true}) {
        INFO("approx " << (approx == GeluApproximation::kErf ? "erf" : "tanh") << " rows " << rows << " cols " << cols
                       << " bias " << with_bias);
        check_bias_gelu(rows, cols, with_bias, approx, static_cast<uint32_t>(cols * 2 + with_bias));
      }
    }
  }
}

TEST_CASE("bias_gelu limits: gelu(0) = 0, gelu(+big) = x, gelu(-big) = 0", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const GeluApproximation approx : {GeluApproximation::kErf, GeluApproximation::kTanh}) {
    // (-inf itself gives NaN, as in PyTorch: -inf * 0.)
    std::vector<float> x = {0.0f, 50.0f, 1e20f, 3e38f, -50.0f, -1e20f, -3e38f, INFINITY};
    REQUIRE(bias_gelu(Device::kCPU, x.data(), nullptr, 1, static_cast<int64_t>(x.size()), approx).ok());
    CHECK(x[0] == 0.0f);
    CHECK(x[1] == 50.0f);
    CHECK(x[2] == 1e20f);
    CHECK(x[3] == 3e38f);
    CHECK(x[7] == INFINITY);
    for (const int i : {4, 5, 6}) {
      INFO("element " << i);
      CHECK(std::fabs(x[static_cast<size_t>(i)]) <= 1e-30f);
    }
  }
  // The erf form from -5.6 down (erf(x / sqrt 2) is -1 in float there): exactly 0, not x times a reciprocal's
  // last-bit error.
  std::vector<float> neg;
  for (float v = -5.6f; v > -3e38f; v *= 1.01f) neg.push_back(v);
  std::vector<float> y = neg;
  REQUIRE(bias_gelu(Device::kCPU, y.data(), nullptr, 1, static_cast<int64_t>(y.size()), GeluApproximation::kErf).ok());
  size_t nonzero = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] != 0.0f && nonzero++ == 0) UNSCOPED_INFO("first: gelu(" << neg[i] << ") = " << y[i]);
  }
  CHECK(nonzero == 0);
}

TEST_CASE("bias_gelu's erf form stays within its documented error on a dense sweep and at every table edge",
          "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  // The zmm levels evaluate erf(t / sqrt 2) / 2 from a 32-interval table on [0, 8) (simd_math.h): 1.2e-7 absolute on
  // it, so 1.2e-7 |x| on gelu; the others through erf (0.5e-6 |x|). Every interval's two edges (where a wrong index
  // or a wrong u would show), a dense sweep of [-9, 9], and around 5.5, where the table becomes exactly 1/2.
  std::vector<float> x;
  for (int i = -36; i <= 36; ++i) {
    const float edge = 0.25f * static_cast<float>(i);
    x.push_back(edge);
    x.push_back(std::nextafter(edge, -100.0f));
    x.push_back(std::nextafter(edge, 100.0f));
  }
  for (int i = 0; i <= 180000; ++i) x.push_back(-9.0f + 18.0f * static_cast<float>(i) / 180000.0f);
  std::vector<float> y = x;
  REQUIRE(bias_gelu(Device::kCPU, y.data(), nullptr, 1, static_cast<int64_t>(y.size()), GeluApproximation::kErf).ok());
  const bool zmm = isa >= CpuIsa::kAvx512;
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = gelu_erf_ref(x[i]);
    const double err = std::fabs(y[i] - want);
    // The result's own rounding (half an ulp) on top of the approximation's error.
    const double tol = (zmm ? 1.2e-7 : 5e-7) * std::fabs(x[i]) + 6e-8 * std::fabs(want) + 1e-30;
    worst = std::max(worst, err / (std::fabs(x[i]) + 1e-30));
    if (!(err <= tol)) {
      FAIL_CHECK("gelu(" << x[i] << ") = " << y[i] << ", want " << want << " (error " << err << ", tolerance " << tol
                         << ")");
      return;
    }
  }
  INFO("max error / |x| " << worst);
  SUCCEED();
}

TEST_CASE("bias_gelu with zero rows or columns does nothing", "[kernels]") {
  float sentinel = 5.0f;
  REQUIRE(bias_gelu(Device::kCPU, &sentinel, nullptr, 0, 1, GeluApproximation::kErf).ok());
  REQUIRE(bias_gelu(Device::kCPU, &sentinel, nullptr, 1, 0, GeluApproximation::kTanh).ok());
  CHECK(sentinel == 5.0f);
}

}  // namespace
}  // namespace brisk::kernels
