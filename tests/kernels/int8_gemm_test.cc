// The dynamic-int8 GEMM (lib/kernels/cpu/int8_gemm.h) against references computed here from the raw s8 weights
// and the float inputs: the integer accumulation exactly, the fused epilogues within tolerances derived from the
// float roundings, the whole quantised product against the float product within the quantisation error, and
// quantize_rows_u8's round trip; per ISA level (the VNNI kernel at avx512, the scalar reference below it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "../../lib/kernels/cpu/int8_gemm.h"
#include "kernel_test_util.h"

namespace brisk {
namespace {

using kernels::cpu::Int8Epilogue;
using kernels::cpu::Int8PackedWeights;
using testing::random_floats;

constexpr Int8Epilogue kEpilogues[] = {Int8Epilogue::kBias, Int8Epilogue::kBiasGeluErf, Int8Epilogue::kBiasGeluTanh,
                                       Int8Epilogue::kBiasRelu, Int8Epilogue::kBiasAccumulate};

const char* epilogue_name(Int8Epilogue e) {
  switch (e) {
    case Int8Epilogue::kBias: return "bias";
    case Int8Epilogue::kBiasGeluErf: return "bias+gelu_erf";
    case Int8Epilogue::kBiasGeluTanh: return "bias+gelu_tanh";
    case Int8Epilogue::kBiasRelu: return "bias+relu";
    case Int8Epilogue::kBiasAccumulate: return "bias+accumulate";
  }
  return "?";
}

std::vector<int8_t> random_weights(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-127, 127);
  std::vector<int8_t> w(static_cast<size_t>(n * k));
  for (int8_t& v : w) v = static_cast<int8_t>(dist(rng));
  return w;
}

int64_t round_up4(int64_t k) { return (k + 3) / 4 * 4; }

double gelu_erf_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}

// Exact sum_k (xq[r, k] - 128) * w[j, k] from the raw row-major weights.
std::vector<int64_t> reference_dots(const std::vector<uint8_t>& xq, int64_t ldq, const std::vector<int8_t>& w,
                                    int64_t m, int64_t n, int64_t k) {
  std::vector<int64_t> dots(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t acc = 0;
      for (int64_t c = 0; c < k; ++c) acc += (int64_t{xq[r * ldq + c]} - 128) * w[j * k + c];
      dots[r * n + j] = acc;
    }
  }
  return dots;
}

// Checks quantize_rows_u8's outputs for x [rows, k] against the definition: scale = absmax / 127 (1 for an
// all-zero row), codes in [1, 255], |(code - 128) * scale - x| <= scale / 2, padding 128.
void check_quantized(const std::vector<float>& x, int64_t rows, int64_t k, int64_t ldq, const std::vector<uint8_t>& xq,
                     const std::vector<float>& scales) {
  for (int64_t r = 0; r < rows; ++r) {
    double absmax = 0.0;
    for (int64_t c = 0; c < k; ++c) absmax = std::max(absmax, std::fabs(double{x[r * k + c]}));
    const double scale = scales[r];
    INFO("row " << r << " absmax " << absmax << " scale " << scale);
    if (absmax == 0.0) {
      CHECK(scale == 1.0);
    } else {
      CHECK(std::fabs(scale - absmax / 127.0) <= 1e-7 * absmax / 127.0);  // one float rounding of absmax / 127
    }
    for (int64_t c = 0; c < k; ++c) {
      const int code = xq[r * ldq + c];
      const double x_rc = x[r * k + c];
      const double error = std::fabs((code - 128) * scale - x_rc);
      // scale / 2, plus the float roundings of 127 / absmax, of x * that and of absmax / 127: each moves x's
      // position on the code grid by at most 127 ulp(1) = 7.6e-6 codes, 3e-5 codes together.
      if (code < 1 || !(error <= scale * (0.5 + 3e-5))) {
        FAIL_CHECK("row " << r << " col " << c << ": x " << x_rc << " code " << code << " scale " << scale
                          << " dequantisation error " << error);
        return;
      }
    }
    for (int64_t c = k; c < ldq; ++c) {
      if (xq[r * ldq + c] != 128) {
        FAIL_CHECK("row " << r << " padding byte " << c << " is " << int{xq[r * ldq + c]});
        return;
      }
    }
  }
}

struct Shape {
  int64_t m, n, k;
};

struct Problem {
  int64_t m, n, k, ldq, ldy;
  std::vector<float> x;
  std::vector<int8_t> w;
  std::vector<float> col_scales, bias, y0;
  Int8PackedWeights packed;
  std::vector<uint8_t> xq;
  std::vector<float> row_scales;
};

// Random inputs in [-3, 3] (row 0 all zero and row 2 a single outlier when there are enough rows), weights in
// [-127, 127], per-channel scales ~ 1/127 as a symmetric weight quantiser gives, quantised with row stride ldq.
Problem make_problem(const Shape& s, uint32_t seed, int64_t ldq_extra = 0, int64_t ldy_extra = 0) {
  Problem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.ldq = round_up4(s.k) + ldq_extra;
  p.ldy = s.n + ldy_extra;
  p.x = random_floats(static_cast<size_t>(s.m * s.k), -3.0f, 3.0f, seed);
  if (s.m >= 2) std::fill(p.x.begin(), p.x.begin() + s.k, 0.0f);
  if (s.m >= 3) {
    for (int64_t c = 0; c < s.k; ++c) p.x[2 * s.k + c] *= 1e-3f;
    p.x[2 * s.k + s.k / 2] = 250.0f;
  }
  p.w = random_weights(s.n, s.k, seed + 1);
  p.col_scales = random_floats(static_cast<size_t>(s.n), 0.2f / 127, 2.0f / 127, seed + 2);
  p.bias = random_floats(static_cast<size_t>(s.n), -1.0f, 1.0f, seed + 3);
  p.y0 = random_floats(static_cast<size_t>(s.m * p.ldy), -2.0f, 2.0f, seed + 4);
  p.packed = kernels::cpu::pack_int8_weights(p.w.data(), s.n, s.k);
  p.xq.assign(static_cast<size_t>(s.m * p.ldq), 0xEE);
  p.row_scales.assign(static_cast<size_t>(s.m), -1.0f);
  kernels::cpu::quantize_rows_u8(p.x.data(), s.m, s.k, p.ldq, p.xq.data(), p.row_scales.data());
  return p;
}

// Runs int8_gemm on p and checks every output (and that y's padding columns are untouched).
void check_gemm(const Problem& p, Int8Epilogue e, bool with_bias) {
  INFO("m " << p.m << " n " << p.n << " k " << p.k << " ldq " << p.ldq << " ldy " << p.ldy << " epilogue "
            << epilogue_name(e) << " bias " << with_bias);
  check_quantized(p.x, p.m, p.k, p.ldq, p.xq, p.row_scales);
  std::vector<float> y = p.y0;
  kernels::cpu::int8_gemm(p.xq.data(), p.ldq, p.row_scales.data(), p.m, p.packed, p.col_scales.data(),
                          with_bias ? p.bias.data() : nullptr, e, y.data(), p.ldy);
  const std::vector<int64_t> dots = reference_dots(p.xq, p.ldq, p.w, p.m, p.n, p.k);
  constexpr double u = 0x1p-24;  // float's unit roundoff
  for (int64_t r = 0; r < p.m; ++r) {
    for (int64_t j = 0; j < p.ldy; ++j) {
      const size_t at = static_cast<size_t>(r * p.ldy + j);
      if (j >= p.n) {
        if (y[at] != p.y0[at]) {
          FAIL_CHECK("row " << r << " padding column " << j << " was written");
          return;
        }
        continue;
      }
      const double b = with_bias ? p.bias[j] : 0.0;
      // The kernel computes fma(float(acc), float(row_scale * col_scale), bias): two relative roundings on the
      // product term and one on the sum.
      const double scaled = static_cast<double>(dots[r * p.n + j]) * p.row_scales[r] * p.col_scales[j];
      const double linear = scaled + b;
      const double linear_tol = 2.5 * u * std::fabs(scaled) + 1.5 * u * std::fabs(linear) + 1e-30;
      double want = linear;
      double tol = linear_tol;
      switch (e) {
        case Int8Epilogue::kBias: break;
        case Int8Epilogue::kBiasRelu: want = std::max(linear, 0.0); break;
        case Int8Epilogue::kBiasAccumulate:
          want = p.y0[at] + linear;
          tol += 1.5 * u * std::fabs(want);
          break;
        case Int8Epilogue::kBiasGeluErf:
          // |gelu'| <= 1.13; erf's 1e-6 absolute error scaled by 0.5 |x|; float evaluation around it.
          want = gelu_erf_ref(linear);
          tol = 1.13 * linear_tol + 6e-7 * std::fabs(linear) + 2e-7 * std::fabs(want) + 1e-7;
          break;
        case Int8Epilogue::kBiasGeluTanh:
          want = gelu_tanh_ref(linear);
          tol = 1.13 * linear_tol + 1e-5 * std::fabs(want) + 1e-7;
          break;
      }
      const double err = std::fabs(y[at] - want);
      if (!(err <= tol)) {
        FAIL_CHECK("row " << r << " col " << j << ": got " << y[at] << ", want " << want << " (dot "
                          << dots[r * p.n + j] << ", error " << err << ", tolerance " << tol << ")");
        return;
      }
    }
  }
  SUCCEED();
}

const Shape kRaggedShapes[] = {
    {1, 1, 1},     {1, 16, 4},     {3, 15, 7},    {3, 17, 5},    {17, 50, 3},   {17, 64, 64},   {16, 100, 33},
    {5, 129, 383}, {16, 384, 384}, {7, 47, 1536}, {17, 130, 67}, {200, 77, 45}, {400, 96, 130}, {64, 1152, 384},
};

TEST_CASE("int8_gemm matches the exact integer reference for every epilogue on ragged shapes", "[kernels][int8]") {
  BRISK_FOR_EACH_CPU_ISA();
  uint32_t seed = 1;
  for (const Shape& s : kRaggedShapes) {
    const Problem p = make_problem(s, seed += 10);
    for (const Int8Epilogue e : kEpilogues) {
      for (const bool with_bias : {true, false}) check_gemm(p, e, with_bias);
    }
  }
}

TEST_CASE("int8_gemm honours row strides beyond the packed width", "[kernels][int8]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const Shape& s : {Shape{3, 17, 5}, Shape{17, 70, 130}}) {
    const Problem p = make_problem(s, 77, /*ldq_extra=*/8, /*ldy_extra=*/5);
    for (const Int8Epilogue e : {Int8Epilogue::kBias, Int8Epilogue::kBiasAccumulate}) check_gemm(p, e, true);
  }
}

// With unit scales and no bias y is float(acc): exact while |acc| < 2^24, which is the case for every value here
// including the extreme one (all codes at +-127 against weights at +-127: 384 * 127 * 127 = 6.2e6).
TEST_CASE("int8_gemm's integer accumulation is exact", "[kernels][int8]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const Shape& s : {Shape{6, 64, 384}, Shape{17, 100, 1536}, Shape{1, 33, 1000}}) {
    INFO("m " << s.m << " n " << s.n << " k " << s.k);
    Problem p = make_problem(s, 5);
    if (s.k == 384) {
      // Row 0: all +max (code 255); row 1: all -max (code 1); weights of column 0 all 127, of column 1 all -127.
      for (int64_t c = 0; c < s.k; ++c) {
        p.x[c] = 1.0f;
        p.x[s.k + c] = -1.0f;
        p.w[c] = 127;
        p.w[s.k + c] = -127;
      }
      p.packed = kernels::cpu::pack_int8_weights(p.w.data(), s.n, s.k);
      kernels::cpu::quantize_rows_u8(p.x.data(), s.m, s.k, p.ldq, p.xq.data(), p.row_scales.data());
      REQUIRE(p.xq[0] == 255);
      REQUIRE(p.xq[p.ldq] == 1);
    }
    for (int64_t j = 0; j < s.n; ++j) {
      int64_t sum = 0;
      for (int64_t c = 0; c < s.k; ++c) sum += p.w[j * s.k + c];
      REQUIRE(p.packed.column_sums[j] == sum);
    }
    const std::vector<float> ones_m(static_cast<size_t>(s.m), 1.0f);
    const std::vector<float> ones_n(static_cast<size_t>(s.n), 1.0f);
    std::vector<float> y(static_cast<size_t>(s.m * s.n), -1.0f);
    kernels::cpu::int8_gemm(p.xq.data(), p.ldq, ones_m.data(), s.m, p.packed, ones_n.data(), nullptr,
                            Int8Epilogue::kBias, y.data(), s.n);
    const std::vector<int64_t> dots = reference_dots(p.xq, p.ldq, p.w, s.m, s.n, s.k);
    int64_t mismatches = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      REQUIRE(std::llabs(dots[i]) < (int64_t{1} << 24));
      if (static_cast<double>(y[i]) != static_cast<double>(dots[i]) && mismatches++ == 0) {
        FAIL_CHECK("element " << i << ": got " << y[i] << ", want " << dots[i]);
      }
    }
    CHECK(mismatches == 0);
    if (s.k == 384) {
      CHECK(y[0] == 384.0f * 127 * 127);
      CHECK(y[1] == -384.0f * 127 * 127);
      CHECK(y[s.n] == -384.0f * 127 * 127);
      CHECK(y[s.n + 1] == 384.0f * 127 * 127);
    }
  }
}

// End to end from the float inputs: the quantised product differs from x . w^T (weights dequantised with
// col_scales) by at most sum_k |w[j,k]| * col_scale * row_scale / 2, the rounding of each activation.
TEST_CASE("int8_gemm stays within the quantisation error of the float product", "[kernels][int8]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const Shape& s : {Shape{16, 384, 384}, Shape{3, 50, 1536}, Shape{17, 33, 7}}) {
    INFO("m " << s.m << " n " << s.n << " k " << s.k);
    const Problem p = make_problem(s, 9);
    std::vector<float> y(static_cast<size_t>(s.m * s.n));
    kernels::cpu::int8_gemm(p.xq.data(), p.ldq, p.row_scales.data(), s.m, p.packed, p.col_scales.data(), p.bias.data(),
                            Int8Epilogue::kBias, y.data(), s.n);
    double worst_ratio = 0.0;
    for (int64_t r = 0; r < s.m; ++r) {
      for (int64_t j = 0; j < s.n; ++j) {
        double exact = p.bias[j];
        double abs_w = 0.0;
        for (int64_t c = 0; c < s.k; ++c) {
          exact += double{p.x[r * s.k + c]} * p.w[j * s.k + c] * p.col_scales[j];
          abs_w += std::abs(p.w[j * s.k + c]);
        }
        // Each activation is off by at most row_scale * (0.5 + 3e-5) (see check_quantized); the output rounding
        // is relative to the scaled dot, at most 127 * sum |w| * col_scale * row_scale.
        const double quant = abs_w * p.col_scales[j] * p.row_scales[r];
        const double bound = quant * (0.5 + 3e-5) + 4 * 0x1p-24 * (127 * quant + std::fabs(exact)) + 1e-30;
        const double err = std::fabs(y[r * s.n + j] - exact);
        worst_ratio = std::max(worst_ratio, err / bound);
        if (!(err <= bound)) {
          FAIL_CHECK("row " << r << " col " << j << ": got " << y[r * s.n + j] << ", float product " << exact
                            << " (error " << err << ", bound " << bound << ")");
          return;
        }
      }
    }
    // The zero row (row 0) reproduces the bias exactly.
    for (int64_t j = 0; j < s.n; ++j) CHECK(y[j] == p.bias[j]);
    INFO("worst error / bound " << worst_ratio);
    SUCCEED();
  }
}

TEST_CASE("quantize_rows_u8 round trip, zero rows, outliers and padding", "[kernels][int8]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const int64_t k : {1, 3, 15, 16, 17, 383, 384, 1536}) {
    const int64_t rows = 5;
    const int64_t ldq = round_up4(k) + 4;
    std::vector<float> x = random_floats(static_cast<size_t>(rows * k), -5.0f, 5.0f, static_cast<uint32_t>(k));
    std::fill(x.begin() + k, x.begin() + 2 * k, 0.0f);                                         // row 1: zero
    x[2 * k + k / 3] = -1e4f;                                                                  // row 2: one outlier
    for (int64_t c = 0; c < k; ++c) x[3 * k + c] = (c % 2 ? 1.0f : -1.0f) * 1e-30f * (1 + c);  // row 3: tiny
    std::vector<uint8_t> xq(static_cast<size_t>(rows * ldq), 0xEE);
    std::vector<float> scales(static_cast<size_t>(rows), -1.0f);
    INFO("k " << k);
    kernels::cpu::quantize_rows_u8(x.data(), rows, k, ldq, xq.data(), scales.data());
    check_quantized(x, rows, k, ldq, xq, scales);
    CHECK(scales[1] == 1.0f);
    for (int64_t c = 0; c < ldq; ++c) CHECK(xq[ldq + c] == 128);
    CHECK(xq[2 * ldq + k / 3] == 1);  // the outlier is -absmax: code -127 + 128
  }
}

// The VNNI kernel and the scalar reference compute the same float operations for the non-GeLU epilogues and the
// same quantisation, so they agree bit for bit.
TEST_CASE("int8 kernels agree bit for bit across ISA levels", "[kernels][int8]") {
  if (cpu_isa() < CpuIsa::kAvx512Vnni) {
    WARN("skipping: this CPU lacks AVX-512 VNNI");
    return;
  }
  const Shape s{19, 200, 131};
  const std::vector<float> x = random_floats(static_cast<size_t>(s.m * s.k), -4.0f, 4.0f, 3);
  const std::vector<int8_t> w = random_weights(s.n, s.k, 4);
  const std::vector<float> cs = random_floats(static_cast<size_t>(s.n), 0.001f, 0.02f, 5);
  const std::vector<float> bias = random_floats(static_cast<size_t>(s.n), -1.0f, 1.0f, 6);
  const Int8PackedWeights packed = kernels::cpu::pack_int8_weights(w.data(), s.n, s.k);
  const int64_t ldq = packed.k_padded;
  for (const Int8Epilogue e : {Int8Epilogue::kBias, Int8Epilogue::kBiasRelu, Int8Epilogue::kBiasAccumulate}) {
    std::vector<uint8_t> xq[2];
    std::vector<float> scales[2], y[2];
    for (int i = 0; i < 2; ++i) {
      testing::IsaCapGuard guard(i == 0 ? CpuIsa::kScalar : CpuIsa::kAvx512);
      xq[i].assign(static_cast<size_t>(s.m * ldq), 0);
      scales[i].assign(static_cast<size_t>(s.m), 0.0f);
      y[i] = random_floats(static_cast<size_t>(s.m * s.n), -1.0f, 1.0f, 7);
      kernels::cpu::quantize_rows_u8(x.data(), s.m, s.k, ldq, xq[i].data(), scales[i].data());
      kernels::cpu::int8_gemm(xq[i].data(), ldq, scales[i].data(), s.m, packed, cs.data(), bias.data(), e, y[i].data(),
                              s.n);
    }
    INFO("epilogue " << epilogue_name(e));
    CHECK(xq[0] == xq[1]);
    CHECK(scales[0] == scales[1]);
    CHECK(y[0] == y[1]);
  }
}

}  // namespace
}  // namespace brisk
