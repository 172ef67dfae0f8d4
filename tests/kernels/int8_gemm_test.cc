// The int8 GEMM (lib/kernels/cpu/int8_gemm.h) against references computed here from the raw s8 weights and the
// float inputs: the integer accumulation exactly (the worst case included: every activation at +-127 against
// weights at -128), the fused epilogues within tolerances derived from the float roundings, the whole quantised
// product against the float product within the quantisation error, and quantize_activations' round trip. Each
// test case runs once per kernel (scalar, avx2, avx_vnni, avx512, avx512_vnni: one ctest entry each); a kernel
// whose ISA level this CPU lacks is skipped.
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/int8_gemm.h"
#include "kernel_test_util.h"

namespace brisk::kernels {
namespace {

using kernels::cpu::Int8Epilogue;
using kernels::cpu::Int8Kernel;
using kernels::cpu::Int8PackedWeights;
using testing::random_floats;

// One type per kernel, for TEMPLATE_TEST_CASE (the type's name ends each test case's name).
struct Scalar {
  static constexpr Int8Kernel kKernel = Int8Kernel::kScalar;
  static constexpr CpuIsa kIsa = CpuIsa::kScalar;
};
struct Avx2 {
  static constexpr Int8Kernel kKernel = Int8Kernel::kAvx2;
  static constexpr CpuIsa kIsa = CpuIsa::kAvx2;
};
struct AvxVnni {
  static constexpr Int8Kernel kKernel = Int8Kernel::kAvxVnni;
  static constexpr CpuIsa kIsa = CpuIsa::kAvxVnni;
};
struct Avx512 {
  static constexpr Int8Kernel kKernel = Int8Kernel::kAvx512;
  static constexpr CpuIsa kIsa = CpuIsa::kAvx512;
};
struct Avx512Vnni {
  static constexpr Int8Kernel kKernel = Int8Kernel::kAvx512Vnni;
  static constexpr CpuIsa kIsa = CpuIsa::kAvx512Vnni;
};
#define BRISK_INT8_KERNELS Scalar, Avx2, AvxVnni, Avx512, Avx512Vnni

// Skips the test case when the CPU lacks the kernel's level, or BRISK_ISA caps the process below it (BRISK_ISA=avx2
// rehearses an AVX2-only machine); otherwise declares `kernel`.
#define BRISK_INT8_KERNEL()                                                                                 \
  if (!cpu_supports(TestType::kIsa)) {                                                                      \
    BRISK_SKIP("this CPU (" << cpu_model_description() << ") lacks " << cpu_isa_name(TestType::kIsa));      \
  }                                                                                                         \
  if (TestType::kIsa > cpu_isa()) BRISK_SKIP("BRISK_ISA caps this process at " << cpu_isa_name(cpu_isa())); \
  const Int8Kernel kernel = TestType::kKernel;                                                              \
  REQUIRE(kernels::cpu::int8_kernel_for(TestType::kIsa) == kernel);                                         \
  INFO("kernel " << kernels::cpu::int8_kernel_name(kernel))

constexpr Int8Epilogue kEpilogues[] = {Int8Epilogue::kBias,           Int8Epilogue::kBiasGeluErf,
                                       Int8Epilogue::kBiasGeluTanh,   Int8Epilogue::kBiasRelu,
                                       Int8Epilogue::kBiasAccumulate, Int8Epilogue::kDots};

const char* epilogue_name(Int8Epilogue e) {
  switch (e) {
    case Int8Epilogue::kBias: return "bias";
    case Int8Epilogue::kBiasGeluErf: return "bias+gelu_erf";
    case Int8Epilogue::kBiasGeluTanh: return "bias+gelu_tanh";
    case Int8Epilogue::kBiasRelu: return "bias+relu";
    case Int8Epilogue::kBiasAccumulate: return "bias+accumulate";
    case Int8Epilogue::kDots: return "int32 dot products";
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

// A buffer of quantized activations in `kernel`'s encoding (u8 q + 128, or s16 q), read back as q.
struct Activations {
  Int8Kernel kernel = Int8Kernel::kScalar;
  int64_t ldq = 0;
  std::vector<uint8_t> bytes;
  Activations() = default;
  Activations(Int8Kernel kernel_, int64_t rows, int64_t ldq_)
      : kernel(kernel_),
        ldq(ldq_),
        bytes(static_cast<size_t>(rows * ldq_ * kernels::cpu::int8_activation_bytes(kernel_)), 0xEE) {}
  int q(int64_t r, int64_t c) const {
    if (kernels::cpu::int8_activation_bytes(kernel) == 1) return int{bytes[r * ldq + c]} - 128;
    int16_t v;
    std::memcpy(&v, bytes.data() + 2 * (r * ldq + c), sizeof(v));
    return v;
  }
  void set(int64_t r, int64_t c, int q) {
    if (kernels::cpu::int8_activation_bytes(kernel) == 1) {
      bytes[r * ldq + c] = static_cast<uint8_t>(q + 128);
    } else {
      const int16_t v = static_cast<int16_t>(q);
      std::memcpy(bytes.data() + 2 * (r * ldq + c), &v, sizeof(v));
    }
  }
};

// Exact sum_k q[r, k] * w[j, k] from the raw row-major weights, in int64.
std::vector<int64_t> reference_dots(const Activations& xq, const std::vector<int8_t>& w, int64_t m, int64_t n,
                                    int64_t k) {
  std::vector<int64_t> dots(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t acc = 0;
      for (int64_t c = 0; c < k; ++c) acc += int64_t{xq.q(r, c)} * w[j * k + c];
      dots[r * n + j] = acc;
    }
  }
  return dots;
}

// Checks quantize_activations' outputs for x [rows, k] against the definition: scale = absmax / 127 (1 for an
// all-zero row), q in [-127, 127], |q * scale - x| <= scale / 2, padding 0.
void check_quantized(const std::vector<float>& x, int64_t rows, int64_t k, const Activations& xq,
                     const std::vector<float>& scales) {
  const int64_t ldq = xq.ldq;
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
      const int q = xq.q(r, c);
      const double x_rc = x[r * k + c];
      const double error = std::fabs(q * scale - x_rc);
      // scale / 2, plus the float roundings of 127 / absmax, of x * that and of absmax / 127: each moves x's
      // position on the code grid by at most 127 ulp(1) = 7.6e-6 codes, 3e-5 codes together.
      if (q < -127 || q > 127 || !(error <= scale * (0.5 + 3e-5))) {
        FAIL_CHECK("row " << r << " col " << c << ": x " << x_rc << " q " << q << " scale " << scale
                          << " dequantisation error " << error);
        return;
      }
    }
    for (int64_t c = k; c < ldq; ++c) {
      if (xq.q(r, c) != 0) {
        FAIL_CHECK("row " << r << " padding element " << c << " is " << xq.q(r, c));
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
  Activations xq;
  std::vector<float> row_scales;
};

// Random inputs in [-3, 3] (row 0 all zero and row 2 a single outlier when there are enough rows), weights in
// [-127, 127], per-channel scales ~ 1/127 as a symmetric weight quantiser gives, quantised with row stride ldq.
Problem make_problem(Int8Kernel kernel, const Shape& s, uint32_t seed, int64_t ldq_extra = 0, int64_t ldy_extra = 0) {
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
  p.xq = Activations(kernel, s.m, p.ldq);
  p.row_scales.assign(static_cast<size_t>(s.m), -1.0f);
  kernels::cpu::quantize_activations(kernel, p.x.data(), s.m, s.k, p.ldq, p.xq.bytes.data(), p.row_scales.data());
  return p;
}

// Runs int8_gemm on p and checks every output (and that y's padding columns are untouched).
void check_gemm(const Problem& p, Int8Epilogue e, bool with_bias) {
  INFO("m " << p.m << " n " << p.n << " k " << p.k << " ldq " << p.ldq << " ldy " << p.ldy << " epilogue "
            << epilogue_name(e) << " bias " << with_bias);
  check_quantized(p.x, p.m, p.k, p.xq, p.row_scales);
  std::vector<float> y = p.y0;
  kernels::cpu::int8_gemm(p.xq.kernel, p.xq.bytes.data(), p.ldq, p.row_scales.data(), p.m, p.packed,
                          p.col_scales.data(), with_bias ? p.bias.data() : nullptr, e, y.data(), p.ldy);
  const std::vector<int64_t> dots = reference_dots(p.xq, p.w, p.m, p.n, p.k);
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
      if (e == Int8Epilogue::kDots) {  // the exact dot product's bits, whatever the scales and bias
        int32_t got = 0;
        std::memcpy(&got, &y[at], sizeof(got));
        if (got != dots[r * p.n + j]) {
          FAIL_CHECK("row " << r << " col " << j << ": dot product " << got << ", expected " << dots[r * p.n + j]);
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
        case Int8Epilogue::kDots: break;  // checked above
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

TEMPLATE_TEST_CASE("int8_gemm matches the exact integer reference for every epilogue on ragged shapes",
                   "[kernels][int8]", BRISK_INT8_KERNELS) {
  BRISK_INT8_KERNEL();
  uint32_t seed = 1;
  for (const Shape& s : kRaggedShapes) {
    const Problem p = make_problem(kernel, s, seed += 10);
    for (const Int8Epilogue e : kEpilogues) {
      for (const bool with_bias : {true, false}) check_gemm(p, e, with_bias);
    }
  }
}

TEMPLATE_TEST_CASE("int8_gemm honours row strides beyond the packed width", "[kernels][int8]", BRISK_INT8_KERNELS) {
  BRISK_INT8_KERNEL();
  for (const Shape& s : {Shape{3, 17, 5}, Shape{17, 70, 130}}) {
    const Problem p = make_problem(kernel, s, 77, /*ldq_extra=*/8, /*ldy_extra=*/5);
    for (const Int8Epilogue e : {Int8Epilogue::kBias, Int8Epilogue::kBiasAccumulate}) check_gemm(p, e, true);
  }
}

// With unit scales and no bias y is float(acc): exact while |acc| < 2^24. The worst case for a kernel built on
// 16-bit intermediates (vpmaddubsw's pair sums saturate at 32767): every activation at +-127 (u8 codes 255 and 1)
// against weights at -128 and +127 in every lane, k = 1024 (1024 * 127 * 128 = 16.6e6 < 2^24), against an int64
// reference; then k = 4096, past 2^24, where only the conversion to float may round.
TEMPLATE_TEST_CASE("int8_gemm's integer accumulation is exact, worst case included", "[kernels][int8]",
                   BRISK_INT8_KERNELS) {
  BRISK_INT8_KERNEL();
  for (const Shape& s :
       {Shape{6, 64, 384}, Shape{17, 100, 1536}, Shape{1, 33, 1000}, Shape{7, 48, 1024}, Shape{5, 80, 4096}}) {
    INFO("m " << s.m << " n " << s.n << " k " << s.k);
    Problem p = make_problem(kernel, s, 5);
    if (s.k == 1024 || s.k == 4096) {
      // Row r: all +127 (r even) or all -127 (r odd); column j: all -128 (j % 3 == 0), all +127 (j % 3 == 1), or
      // alternating -128, +127 (j % 3 == 2), so that pairs of products of one sign fill every lane.
      for (int64_t r = 0; r < s.m; ++r) {
        for (int64_t c = 0; c < s.k; ++c) p.x[r * s.k + c] = r % 2 == 0 ? 1.0f : -1.0f;
      }
      for (int64_t j = 0; j < s.n; ++j) {
        for (int64_t c = 0; c < s.k; ++c) {
          p.w[j * s.k + c] = static_cast<int8_t>(j % 3 == 0 ? -128 : j % 3 == 1 ? 127 : c % 2 ? 127 : -128);
        }
      }
      p.packed = kernels::cpu::pack_int8_weights(p.w.data(), s.n, s.k);
      kernels::cpu::quantize_activations(kernel, p.x.data(), s.m, s.k, p.ldq, p.xq.bytes.data(), p.row_scales.data());
      REQUIRE(p.xq.q(0, 0) == 127);
      REQUIRE(p.xq.q(1, s.k - 1) == -127);
    }
    const std::vector<float> ones_m(static_cast<size_t>(s.m), 1.0f);
    const std::vector<float> ones_n(static_cast<size_t>(s.n), 1.0f);
    std::vector<float> y(static_cast<size_t>(s.m * s.n), -1.0f);
    kernels::cpu::int8_gemm(kernel, p.xq.bytes.data(), p.ldq, ones_m.data(), s.m, p.packed, ones_n.data(), nullptr,
                            Int8Epilogue::kBias, y.data(), s.n);
    const std::vector<int64_t> dots = reference_dots(p.xq, p.w, s.m, s.n, s.k);
    int64_t mismatches = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      // float(acc) is the one rounding: exact below 2^24, within half an ulp above.
      const double want = static_cast<double>(static_cast<float>(dots[i]));
      if (static_cast<double>(y[i]) != want && mismatches++ == 0) {
        FAIL_CHECK("element " << i << ": got " << y[i] << ", want " << dots[i]);
      }
    }
    CHECK(mismatches == 0);
    if (s.k == 1024) {
      CHECK(y[0] == -1024.0f * 127 * 128);  // +127 x -128
      CHECK(y[1] == 1024.0f * 127 * 127);   // +127 x +127
      CHECK(y[2] == 512.0f * 127 * 127 - 512.0f * 127 * 128);
      CHECK(y[s.n] == 1024.0f * 127 * 128);       // -127 x -128
      CHECK(y[s.n + 1] == -1024.0f * 127 * 127);  // -127 x +127
    }
  }
}

// End to end from the float inputs: the quantised product differs from x . w^T (weights dequantised with
// col_scales) by at most sum_k |w[j,k]| * col_scale * row_scale / 2, the rounding of each activation.
TEMPLATE_TEST_CASE("int8_gemm stays within the quantisation error of the float product", "[kernels][int8]",
                   BRISK_INT8_KERNELS) {
  BRISK_INT8_KERNEL();
  for (const Shape& s : {Shape{16, 384, 384}, Shape{3, 50, 1536}, Shape{17, 33, 7}}) {
    INFO("m " << s.m << " n " << s.n << " k " << s.k);
    const Problem p = make_problem(kernel, s, 9);
    std::vector<float> y(static_cast<size_t>(s.m * s.n));
    kernels::cpu::int8_gemm(kernel, p.xq.bytes.data(), p.ldq, p.row_scales.data(), s.m, p.packed, p.col_scales.data(),
                            p.bias.data(), Int8Epilogue::kBias, y.data(), s.n);
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

TEMPLATE_TEST_CASE("quantize_activations round trip, zero rows, outliers and padding", "[kernels][int8]",
                   BRISK_INT8_KERNELS) {
  BRISK_INT8_KERNEL();
  for (const int64_t k : {1, 3, 15, 16, 17, 383, 384, 1536}) {
    const int64_t rows = 5;
    const int64_t ldq = round_up4(k) + 4;
    std::vector<float> x = random_floats(static_cast<size_t>(rows * k), -5.0f, 5.0f, static_cast<uint32_t>(k));
    std::fill(x.begin() + k, x.begin() + 2 * k, 0.0f);                                         // row 1: zero
    x[2 * k + k / 3] = -1e4f;                                                                  // row 2: one outlier
    for (int64_t c = 0; c < k; ++c) x[3 * k + c] = (c % 2 ? 1.0f : -1.0f) * 1e-30f * (1 + c);  // row 3: tiny
    Activations xq(kernel, rows, ldq);
    std::vector<float> scales(static_cast<size_t>(rows), -1.0f);
    INFO("k " << k);
    kernels::cpu::quantize_activations(kernel, x.data(), rows, k, ldq, xq.bytes.data(), scales.data());
    check_quantized(x, rows, k, xq, scales);
    CHECK(scales[1] == 1.0f);
    for (int64_t c = 0; c < ldq; ++c) CHECK(xq.q(1, c) == 0);
    CHECK(xq.q(2, k / 3) == -127);  // the outlier is -absmax
  }
}

// Inputs must be finite (linear.h), but a NaN must not be undefined behaviour (a float-to-int conversion of NaN in
// the scalar code): its code is -127 on every level, as the vector kernels' max/min give it, and a static scale too.
TEMPLATE_TEST_CASE("quantize_activations gives a NaN the code -127 on every level", "[kernels][int8]",
                   BRISK_INT8_KERNELS) {
  BRISK_INT8_KERNEL();
  for (const float static_scale : {0.0f, 0.05f}) {
    for (const int64_t k : {5, 17, 384}) {
      const int64_t rows = 2, ldq = round_up4(k);
      std::vector<float> x = random_floats(static_cast<size_t>(rows * k), -2.0f, 2.0f, static_cast<uint32_t>(k));
      x[k + k / 2] = std::numeric_limits<float>::quiet_NaN();
      x[k + k - 1] = std::numeric_limits<float>::quiet_NaN();  // in the scalar tail of the vector kernels
      Activations xq(kernel, rows, ldq);
      std::vector<float> scales(static_cast<size_t>(rows), -1.0f);
      INFO("k " << k << ", static scale " << static_scale);
      kernels::cpu::quantize_activations(kernel, x.data(), rows, k, ldq, xq.bytes.data(), scales.data(), nullptr,
                                         static_scale);
      CHECK(xq.q(1, k / 2) == -127);
      CHECK(xq.q(1, k - 1) == -127);
      for (int64_t c = 0; c < k; ++c) CHECK(std::abs(xq.q(1, c)) <= 127);
      if (static_scale == 0.0f) check_quantized(std::vector<float>(x.begin(), x.begin() + k), 1, k, xq, scales);
    }
  }
}

// Static scales: q = clamp(round(x / scale), -127, 127), one scale for every row, SmoothQuant's channel scale
// applied first; values past 127 scales saturate.
TEMPLATE_TEST_CASE("quantize_activations with a static scale and a channel scale", "[kernels][int8]",
                   BRISK_INT8_KERNELS) {
  BRISK_INT8_KERNEL();
  const int64_t rows = 3, k = 37, ldq = 40;
  const float scale = 0.05f;
  std::vector<float> x = random_floats(static_cast<size_t>(rows * k), -4.0f, 4.0f, 11);
  x[5] = 100.0f;  // saturates at +127
  x[6] = -100.0f;
  const std::vector<float> channel = random_floats(static_cast<size_t>(k), 0.5f, 2.0f, 12);
  Activations xq(kernel, rows, ldq);
  std::vector<float> scales(static_cast<size_t>(rows), -1.0f);
  kernels::cpu::quantize_activations(kernel, x.data(), rows, k, ldq, xq.bytes.data(), scales.data(), channel.data(),
                                     scale);
  for (int64_t r = 0; r < rows; ++r) {
    CHECK(scales[r] == scale);
    for (int64_t c = 0; c < k; ++c) {
      const double v = double{x[r * k + c]} * channel[c] / scale;
      const double want = std::clamp(std::nearbyint(v), -127.0, 127.0);
      // Float evaluation (x * channel, times 1 / scale) may round a value within 1e-4 of a half the other way.
      const bool near_half = std::fabs(std::fabs(v - std::trunc(v)) - 0.5) < 1e-4;
      if (std::fabs(xq.q(r, c) - want) > (near_half ? 1 : 0)) {
        FAIL_CHECK("row " << r << " col " << c << ": q " << xq.q(r, c) << ", want " << want);
      }
    }
    for (int64_t c = k; c < ldq; ++c) CHECK(xq.q(r, c) == 0);
  }
  CHECK(xq.q(0, 5) == 127);
  CHECK(xq.q(0, 6) == -127);
}

// Every kernel computes the same float operations as the scalar reference for the non-GeLU epilogues, from the
// same quantisation, so they agree bit for bit.
TEMPLATE_TEST_CASE("int8 kernels agree bit for bit with the scalar reference", "[kernels][int8]", BRISK_INT8_KERNELS) {
  BRISK_INT8_KERNEL();
  const Shape s{19, 200, 131};
  const std::vector<float> x = random_floats(static_cast<size_t>(s.m * s.k), -4.0f, 4.0f, 3);
  const std::vector<int8_t> w = random_weights(s.n, s.k, 4);
  const std::vector<float> cs = random_floats(static_cast<size_t>(s.n), 0.001f, 0.02f, 5);
  const std::vector<float> bias = random_floats(static_cast<size_t>(s.n), -1.0f, 1.0f, 6);
  const Int8PackedWeights packed = kernels::cpu::pack_int8_weights(w.data(), s.n, s.k);
  const int64_t ldq = packed.k_padded;
  for (const Int8Epilogue e : {Int8Epilogue::kBias, Int8Epilogue::kBiasRelu, Int8Epilogue::kBiasAccumulate}) {
    Activations xq[2];
    std::vector<float> scales[2], y[2];
    for (int i = 0; i < 2; ++i) {
      const Int8Kernel k = i == 0 ? Int8Kernel::kScalar : kernel;
      xq[i] = Activations(k, s.m, ldq);
      scales[i].assign(static_cast<size_t>(s.m), 0.0f);
      y[i] = random_floats(static_cast<size_t>(s.m * s.n), -1.0f, 1.0f, 7);
      kernels::cpu::quantize_activations(k, x.data(), s.m, s.k, ldq, xq[i].bytes.data(), scales[i].data());
      kernels::cpu::int8_gemm(k, xq[i].bytes.data(), ldq, scales[i].data(), s.m, packed, cs.data(), bias.data(), e,
                              y[i].data(), s.n);
    }
    INFO("epilogue " << epilogue_name(e));
    int64_t code_mismatches = 0;
    for (int64_t r = 0; r < s.m; ++r) {
      for (int64_t c = 0; c < ldq; ++c) code_mismatches += xq[0].q(r, c) != xq[1].q(r, c);
    }
    CHECK(code_mismatches == 0);
    CHECK(scales[0] == scales[1]);
    CHECK(y[0] == y[1]);
  }
}

}  // namespace
}  // namespace brisk::kernels
