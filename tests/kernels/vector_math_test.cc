// The vectorised exp / erf / tanh (shared by GeLU and softmax) against double-precision std:: functions over
// the whole float range, per ISA level.
#include "brisk/kernels/vector_math.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernel_test_util.h"

namespace brisk::kernels {
namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// Every float whose bit pattern is a multiple of `stride` (both signs, all exponents, NaNs dropped), plus a dense
// uniform sweep of [-lo_dense, lo_dense] where the functions bend.
std::vector<float> float_sweep(uint32_t stride, float dense_range, int dense_points) {
  std::vector<float> x;
  for (uint64_t b = 0; b <= 0xffffffffull; b += stride) {
    const float f = from_bits(static_cast<uint32_t>(b));
    if (!std::isnan(f)) x.push_back(f);
  }
  for (int i = 0; i <= dense_points; ++i) x.push_back(-dense_range + 2.0f * dense_range * i / dense_points);
  // Odd length: the last vector is partial.
  if (x.size() % 2 == 0) x.push_back(0.5f);
  return x;
}

TEST_CASE("vector_erf is within 1e-6 of std::erf over the whole float range", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const std::vector<float> x = float_sweep(4099, 6.0f, 200001);
  std::vector<float> y(x.size());
  REQUIRE(vector_erf(Device::kCPU, x.data(), y.data(), static_cast<int64_t>(x.size())).ok());
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = std::erf(static_cast<double>(x[i]));
  const testing::Closeness c = testing::compare_close(y.data(), want.data(), x.size(), 1e-6, 0.0);
  INFO(c.message);
  CHECK(c.ok);
  INFO("erf max abs error " << c.max_abs_error);
  // Near 0 erf(x) ~ 1.128 x: the error must scale with x, not sit at an absolute floor.
  const float tiny[] = {1e-30f, -1e-20f, 1e-10f, 3e-5f};
  float tiny_out[4];
  REQUIRE(vector_erf(Device::kCPU, tiny, tiny_out, 4).ok());
  for (int i = 0; i < 4; ++i) {
    INFO("x " << tiny[i]);
    CHECK(std::fabs(tiny_out[i] - std::erf(static_cast<double>(tiny[i]))) <= 1e-6 * std::fabs(tiny[i]));
  }
}

TEST_CASE("vector_erf is exactly +-1 wherever float(erf(x)) is, whatever the CPU's reciprocal", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  // From 3.9196 (erfc(3.9195) < 2^-25: the float nearest erf is 1) to 1e6 by single ulps near the bound, then
  // coarser: a last bit off here is x * 1e-7 off in gelu(x) = x (1 + erf(x / sqrt 2)) / 2 for large negative x
  // (vrcpps is vendor-specific: a Zen 4 gave gelu(-1e20) = 1.2e13 before erf returned +-1 exactly).
  std::vector<float> x;
  for (float v = 3.9196f; v < 3.93f; v = std::nextafter(v, 4.0f)) x.push_back(v);
  for (float v = 3.93f; v < 1e6f; v *= 1.001f) x.push_back(v);
  const size_t half = x.size();
  for (size_t i = 0; i < half; ++i) x.push_back(-x[i]);
  x.push_back(FLT_MAX);
  x.push_back(-FLT_MAX);
  std::vector<float> y(x.size());
  REQUIRE(vector_erf(Device::kCPU, x.data(), y.data(), static_cast<int64_t>(x.size())).ok());
  size_t wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    REQUIRE(static_cast<float>(std::erf(static_cast<double>(x[i]))) == (x[i] > 0 ? 1.0f : -1.0f));
    if (y[i] != (x[i] > 0 ? 1.0f : -1.0f)) {
      if (wrong++ == 0) UNSCOPED_INFO("first: erf(" << x[i] << ") = " << y[i]);
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("vector_exp is within 2e-7 relative of std::exp, flushes below -87.3 to 0, overflows to inf",
          "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const std::vector<float> x = float_sweep(4099, 90.0f, 200001);
  std::vector<float> y(x.size());
  REQUIRE(vector_exp(Device::kCPU, x.data(), y.data(), static_cast<int64_t>(x.size())).ok());
  double max_rel = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    if (xi >= -87.3 && xi <= 88.37) {
      const double want = std::exp(xi);
      const double rel = std::fabs(y[i] - want) / want;
      max_rel = std::max(max_rel, rel);
      if (!(rel <= 2e-7)) {
        FAIL_CHECK("x " << x[i] << ": got " << y[i] << ", relative error " << rel);
        break;
      }
    } else if (xi > 88.7229) {
      if (y[i] != INFINITY) {
        FAIL_CHECK("x " << x[i] << ": got " << y[i] << ", expected inf");
        break;
      }
    } else if (xi < -87.3 && isa != CpuIsa::kScalar) {
      // The SIMD exp never returns a denormal (the scalar reference is std::exp, which does).
      if (y[i] != 0.0f) {
        FAIL_CHECK("x " << x[i] << ": got " << y[i] << ", expected exactly 0");
        break;
      }
    }
  }
  INFO("exp max relative error " << max_rel);
  if (isa != CpuIsa::kScalar) {
    for (const float v : y) {
      if (v != 0.0f && std::fabs(v) < FLT_MIN) {
        FAIL_CHECK("denormal result " << v);
        break;
      }
    }
  }
}

TEST_CASE("vector_tanh is within 2e-7 of std::tanh, and relatively accurate near 0", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const std::vector<float> x = float_sweep(4099, 5.0f, 200001);
  std::vector<float> y(x.size());
  REQUIRE(vector_tanh(Device::kCPU, x.data(), y.data(), static_cast<int64_t>(x.size())).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::tanh(static_cast<double>(x[i]));
    const double err = std::fabs(y[i] - want);
    // Absolute 2e-7 everywhere; relative 1e-6 in the polynomial range, where tanh(x) ~ x is small.
    const double tol = std::fabs(x[i]) <= 0.625f ? 1e-6 * std::fabs(want) : 2e-7;
    if (!(err <= tol)) {
      FAIL_CHECK("x " << x[i] << ": got " << y[i] << ", want " << want << " (error " << err << ")");
      break;
    }
  }
  SUCCEED();
}

TEST_CASE("vector_* work in place and on lengths that are not a multiple of the vector width", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const int64_t n : {1, 7, 15, 16, 17, 4095, 4097, 10007}) {
    INFO("n " << n);
    std::vector<float> x = testing::random_floats(static_cast<size_t>(n), -3.0f, 3.0f, static_cast<uint32_t>(n));
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = std::erf(static_cast<double>(x[i]));
    // A sentinel after the end must survive (partial vectors are masked, not over-written).
    x.push_back(123.0f);
    REQUIRE(vector_erf(Device::kCPU, x.data(), x.data(), n).ok());
    CHECK(x.back() == 123.0f);
    x.pop_back();
    CHECK_CLOSE(x, want, 1e-6, 0.0);
  }
}

TEST_CASE("dot matches a double-precision sum for every length 0..70, per ISA level", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  std::vector<float> a(70), b(70);
  for (int i = 0; i < 70; ++i) {
    a[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
    b[i] = std::cos(0.11f * static_cast<float>(i)) - 0.25f;
  }
  for (int64_t n = 0; n <= 70; ++n) {
    double want = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      want += static_cast<double>(a[i]) * b[i];
      mag += std::fabs(static_cast<double>(a[i]) * b[i]);
    }
    INFO("n = " << n);
    CHECK(std::fabs(dot(a.data(), b.data(), n) - want) <= 1e-6 * mag + 1e-7);
  }
  CHECK(dot(a.data(), b.data(), -1) == 0.0f);
}

}  // namespace
}  // namespace brisk::kernels
