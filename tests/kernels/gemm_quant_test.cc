// Linear with i8 and bf16 weights against a double-precision reference on the original values. Bounds are
// derived here from the schemes' rounding, not measured from the code under test:
//   int8: per-token activation scale sx = absmax(x_i) / 127 and per-channel weight scale sw_j, so each operand
//         is off by at most half its scale, and |Σ x w − Σ x̂ ŵ| <= Σ_k |x_k| sw/2 + sx/2 |w_k| + sx sw / 4;
//   bf16: both operands rounded to 8 significant bits (unit roundoff u = 2^-8), products exact in f32
//         accumulation up to k f32 roundings: |err| <= Σ_k |x_k w_k| (2u + u² + k 2^-24).
// An exactness case feeds integers that int8 represents without loss, so any indexing or scaling slip shows.
#include <cmath>

#include "brisk/kernels/layernorm.h"
#include "brisk/kernels/linear.h"
#include "brisk/quant/scheme.h"
#include "kernel_test_util.h"

using brisk::DType;
using brisk::Tensor;
using brisk::kernels::GemmEpilogue;
using brisk::kernels::Linear;
using brisk::kernels::QuantScales;
using brisk::testing::random_floats;

namespace {

double apply(brisk::kernels::GemmEpilogue e, double acc, double y0) {
  switch (e) {
    case GemmEpilogue::kBias: return acc;
    case GemmEpilogue::kBiasGeluErf: return 0.5 * acc * (1.0 + std::erf(acc / std::sqrt(2.0)));
    case GemmEpilogue::kBiasGeluTanh:
      return 0.5 * acc * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (acc + 0.044715 * acc * acc * acc)));
    case GemmEpilogue::kBiasRelu: return std::max(acc, 0.0);
    case GemmEpilogue::kBiasAccumulate: return acc + y0;
  }
  return acc;
}

constexpr brisk::kernels::GemmEpilogue kEpilogues[] = {GemmEpilogue::kBias, GemmEpilogue::kBiasGeluErf,
                                                       GemmEpilogue::kBiasGeluTanh, GemmEpilogue::kBiasRelu,
                                                       GemmEpilogue::kBiasAccumulate};

}  // namespace

TEST_CASE("int8 Linear is exact on values int8 represents exactly", "[kernels][gemm][quant][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t n = GENERATE(1, 19, 384);
  const int64_t k = GENERATE(5, 64, 384);
  const int64_t m = GENERATE(1, 3, 16, 130);
  // Weights: small integers times a per-channel power-of-two scale; activations: integers with one 127 per row,
  // so the per-token scale is exactly 1.
  std::vector<int8_t> wq(static_cast<size_t>(n * k));
  std::vector<float> scales(static_cast<size_t>(n)), bias(static_cast<size_t>(n)), x(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < n * k; ++i) wq[i] = static_cast<int8_t>((i * 7 + 3) % 255 - 127);
  for (int64_t j = 0; j < n; ++j) scales[j] = std::ldexp(1.0f, -static_cast<int>(j % 5) - 6), bias[j] = 0.25f * (j % 3);
  for (int64_t i = 0; i < m * k; ++i) x[i] = static_cast<float>((i * 13 + 5) % 201 - 100);
  for (int64_t i = 0; i < m; ++i) x[i * k + (i % k)] = (i % 2) ? 127.0f : -127.0f;
  Tensor wt = Tensor::borrow(wq.data(), {n, k}, DType::kI8);
  brisk::kernels::QuantScales qs{Tensor::borrow(scales.data(), {n}, DType::kF32), 0.0f, Tensor()};
  auto fc = brisk::kernels::Linear::create(wt, Tensor::borrow(bias.data(), {n}, DType::kF32), brisk::Device::kCPU, qs);
  REQUIRE(fc.ok());
  CHECK(fc->weight_dtype() == DType::kI8);
  for (brisk::kernels::GemmEpilogue e : kEpilogues) {
    auto y = random_floats(static_cast<size_t>(m * n), -1.f, 1.f, 7);
    std::vector<double> want(y.size());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += double(x[i * k + p]) * wq[j * k + p];
        want[i * n + j] = apply(e, acc * scales[j] + bias[j], y[i * n + j]);
      }
    }
    REQUIRE(fc->forward(x.data(), m, y.data(), e).ok());
    INFO("m=" << m << " n=" << n << " k=" << k << " epilogue=" << static_cast<int>(e));
    CHECK_CLOSE(y, want, 1e-5, 1e-5);
  }
}

TEST_CASE("int8 Linear stays within the derived quantization bound", "[kernels][gemm][quant][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t n = GENERATE(17, 384), k = GENERATE(31, 384), m = GENERATE(1, 16, 64);
  auto w = random_floats(static_cast<size_t>(n * k), -0.3f, 0.3f, 11);
  auto x = random_floats(static_cast<size_t>(m * k), -2.f, 2.f, 12);
  x[3] = 40.0f;  // one outlier token: its row scale grows, the others must not suffer
  const Tensor wf = Tensor::borrow(w.data(), {n, k}, DType::kF32);
  auto q = brisk::quant::quantize_int8(wf, "w");
  REQUIRE(q.ok());
  auto fc = brisk::kernels::Linear::create(q->values, Tensor(), brisk::Device::kCPU,
                                           brisk::kernels::QuantScales{q->scales, 0.0f, Tensor()});
  REQUIRE(fc.ok());
  std::vector<float> y(static_cast<size_t>(m * n));
  REQUIRE(fc->forward(x.data(), m, y.data(), brisk::kernels::GemmEpilogue::kBias).ok());
  const float* sw = q->scales.data<float>();
  int64_t violations = 0;
  for (int64_t i = 0; i < m; ++i) {
    double amax = 0;
    for (int64_t p = 0; p < k; ++p) amax = std::max(amax, std::fabs(double(x[i * k + p])));
    const double sx = amax / 127.0;
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0, bound = 0;
      for (int64_t p = 0; p < k; ++p) {
        exact += double(x[i * k + p]) * w[j * k + p];
        bound += std::fabs(x[i * k + p]) * sw[j] / 2 + sx / 2 * std::fabs(w[j * k + p]) + sx * sw[j] / 4;
      }
      if (std::fabs(y[i * n + j] - exact) > bound * (1 + 1e-5) + 1e-5) ++violations;
    }
  }
  CHECK(violations == 0);
}

TEST_CASE("int8 Linear with a static activation scale saturates beyond it", "[kernels][gemm][quant][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t n = 3, k = 4, m = 2;
  std::vector<int8_t> wq = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1};
  std::vector<float> scales = {1.0f};
  // Static scale 0.5: x / 0.5 rounds to integers; 100 / 0.5 = 200 saturates to 127 (63.5 after scaling back).
  std::vector<float> x = {1.0f, -2.5f, 100.0f, 0.25f, 3.0f, 0.0f, -0.5f, -100.0f};
  auto fc = brisk::kernels::Linear::create(
      Tensor::borrow(wq.data(), {n, k}, DType::kI8), Tensor(), brisk::Device::kCPU,
      brisk::kernels::QuantScales{Tensor::borrow(scales.data(), {1}, DType::kF32), 0.5f, Tensor()});
  REQUIRE(fc.ok());
  std::vector<float> y(static_cast<size_t>(m * n));
  REQUIRE(fc->forward(x.data(), m, y.data(), brisk::kernels::GemmEpilogue::kBias).ok());
  // 0.25 / 0.5 = 0.5 rounds to even (0); -2.5 / 0.5 = -5.
  CHECK(y == std::vector<float>{1.0f, -2.5f, 63.5f, 3.0f, 0.0f, -0.5f - 63.5f});
}

TEST_CASE("bf16 Linear stays within the derived rounding bound", "[kernels][gemm][quant][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t n = GENERATE(5, 384), k = GENERATE(7, 384), m = GENERATE(1, 16, 100);
  auto w = random_floats(static_cast<size_t>(n * k), -0.3f, 0.3f, 21);
  auto x = random_floats(static_cast<size_t>(m * k), -2.f, 2.f, 22);
  auto b = random_floats(static_cast<size_t>(n), -1.f, 1.f, 23);
  auto wb = brisk::quant::to_bfloat16(Tensor::borrow(w.data(), {n, k}, DType::kF32), "w");
  REQUIRE(wb.ok());
  auto fc = brisk::kernels::Linear::create(*wb, Tensor::borrow(b.data(), {n}, DType::kF32), brisk::Device::kCPU);
  REQUIRE(fc.ok());
  CHECK(fc->weight_dtype() == DType::kBF16);
  std::vector<float> y(static_cast<size_t>(m * n));
  REQUIRE(fc->forward(x.data(), m, y.data(), brisk::kernels::GemmEpilogue::kBias).ok());
  const double u = std::ldexp(1.0, -8);
  int64_t violations = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double exact = b[j], abs_sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        exact += double(x[i * k + p]) * w[j * k + p];
        abs_sum += std::fabs(double(x[i * k + p]) * w[j * k + p]);
      }
      const double bound = abs_sum * (2 * u + u * u + double(k + 1) * std::ldexp(1.0, -24)) + 1e-6;
      if (std::fabs(y[i * n + j] - exact) > bound) ++violations;
    }
  }
  CHECK(violations == 0);
}

TEST_CASE("quantized Linear writes strided outputs and rejects bad scales", "[kernels][gemm][quant]") {
  const int64_t n = 4, k = 8, m = 3;
  std::vector<int8_t> wq(static_cast<size_t>(n * k), 1);
  std::vector<float> scales(static_cast<size_t>(n), 0.5f);
  const Tensor wt = Tensor::borrow(wq.data(), {n, k}, DType::kI8);
  const brisk::kernels::QuantScales qs{Tensor::borrow(scales.data(), {n}, DType::kF32), 0.0f, Tensor()};
  auto fc = brisk::kernels::Linear::create(wt, Tensor(), brisk::Device::kCPU, qs);
  REQUIRE(fc.ok());
  std::vector<float> x(static_cast<size_t>(m * k), 1.0f);
  std::vector<float> y(static_cast<size_t>(m * 2 * n), -7.0f);
  REQUIRE(fc->forward(x.data(), m, y.data(), brisk::kernels::GemmEpilogue::kBias, 2 * n).ok());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < 2 * n; ++j) CHECK(y[i * 2 * n + j] == (j < n ? 4.0f : -7.0f));  // 8 * 1 * 0.5
  }
  CHECK(fc->forward(x.data(), m, y.data(), brisk::kernels::GemmEpilogue::kBiasGeluErf, 2 * n).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(fc->forward(x.data(), m, y.data(), brisk::kernels::GemmEpilogue::kBias, n - 1).code() ==
        absl::StatusCode::kInvalidArgument);

  auto missing = brisk::kernels::Linear::create(wt, Tensor(), brisk::Device::kCPU, brisk::kernels::QuantScales{});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("weight_scale is missing"));
  std::vector<float> bad = {0.5f, 0.0f, 0.5f, 0.5f};
  auto zero = brisk::kernels::Linear::create(wt, Tensor(), brisk::Device::kCPU,
                                             QuantScales{Tensor::borrow(bad.data(), {n}, DType::kF32), 0.0f, Tensor()});
  REQUIRE_FALSE(zero.ok());
  CHECK_THAT(std::string(zero.status().message()), Catch::Contains("weight_scale[1] is 0"));
  auto negative =
      brisk::kernels::Linear::create(wt, Tensor(), brisk::Device::kCPU, QuantScales{qs.weight_scale, -1.0f, Tensor()});
  REQUIRE_FALSE(negative.ok());
  CHECK_THAT(std::string(negative.status().message()), Catch::Contains("activation_scale is -1"));
  std::vector<int32_t> ints(static_cast<size_t>(n * k));
  auto wrong =
      brisk::kernels::Linear::create(Tensor::borrow(ints.data(), {n, k}, DType::kI32), Tensor(), brisk::Device::kCPU);
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(std::string(wrong.status().message()), Catch::Contains("expected a contiguous f32, bf16 or i8"));
}

TEST_CASE("int8 Linear divides its input by input_scale before quantizing (SmoothQuant)",
          "[kernels][gemm][quant][isa]") {
  BRISK_FOR_EACH_CPU_ISA();  // scalar/avx2: the oneDNN path; avx512: the VNNI kernel's fused division
  const int64_t n = GENERATE(3, 40), k = GENERATE(5, 37), m = GENERATE(1, 18);
  // Powers of two keep x / s exact; each row holds one value whose quotient is 127, so the row scale is 1.
  std::vector<int8_t> wq(static_cast<size_t>(n * k));
  std::vector<float> scales(static_cast<size_t>(n)), input_scale(static_cast<size_t>(k)), x(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < n * k; ++i) wq[i] = static_cast<int8_t>((i * 11 + 5) % 255 - 127);
  for (int64_t j = 0; j < n; ++j) scales[j] = std::ldexp(1.0f, -static_cast<int>(j % 3) - 7);
  for (int64_t c = 0; c < k; ++c) input_scale[c] = std::ldexp(1.0f, static_cast<int>(c % 5) - 2);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < k; ++c) x[i * k + c] = static_cast<float>((i * 7 + c * 3) % 101 - 50) * input_scale[c];
    x[i * k + (i % k)] = 127.0f * input_scale[i % k];
  }
  auto fc =
      brisk::kernels::Linear::create(Tensor::borrow(wq.data(), {n, k}, DType::kI8), Tensor(), brisk::Device::kCPU,
                                     brisk::kernels::QuantScales{Tensor::borrow(scales.data(), {n}, DType::kF32), 0.0f,
                                                                 Tensor::borrow(input_scale.data(), {k}, DType::kF32)});
  REQUIRE(fc.ok());
  std::vector<float> y(static_cast<size_t>(m * n));
  REQUIRE(fc->forward(x.data(), m, y.data(), brisk::kernels::GemmEpilogue::kBias).ok());
  std::vector<double> want(y.size());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t c = 0; c < k; ++c) acc += double(x[i * k + c]) / input_scale[c] * wq[j * k + c];
      want[i * n + j] = acc * scales[j];
    }
  }
  CHECK_CLOSE(y, want, 1e-5, 1e-5);

  std::vector<float> zero(static_cast<size_t>(k), 1.0f);
  zero[2] = 0.0f;
  auto bad =
      brisk::kernels::Linear::create(Tensor::borrow(wq.data(), {n, k}, DType::kI8), Tensor(), brisk::Device::kCPU,
                                     QuantScales{Tensor::borrow(scales.data(), {n}, DType::kF32), 0.0f,
                                                 Tensor::borrow(zero.data(), {k}, DType::kF32)});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("input_scale[2] is 0"));
  // Issue 30: 1e-45 passed every load check, and its inverse (infinite) made every output NaN.
  zero[2] = 1e-45f;
  auto tiny =
      brisk::kernels::Linear::create(Tensor::borrow(wq.data(), {n, k}, DType::kI8), Tensor(), brisk::Device::kCPU,
                                     QuantScales{Tensor::borrow(scales.data(), {n}, DType::kF32), 0.0f,
                                                 Tensor::borrow(zero.data(), {k}, DType::kF32)});
  REQUIRE_FALSE(tiny.ok());
  CHECK_THAT(std::string(tiny.status().message()), Catch::Contains("input_scale[2] is 1.4013e-45"));
  CHECK_THAT(std::string(tiny.status().message()), Catch::Contains("whose inverse is finite"));
}

TEST_CASE("an int8 Linear quantizes its output for the next int8 Linear with the bits of that Linear's own pass",
          "[kernels][gemm][quant][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  using brisk::kernels::QuantizedInput;
  // 700 rows: the GEMM's row-block tasks (several per thread); 50 rows: below them, the quantize pass after it.
  // 72 outputs feed the second Linear: a tail in every vector width, k padded to 72.
  const int64_t rows = GENERATE(700, 50), k = 40, mid = 72, n = 24;
  const auto x = random_floats(static_cast<size_t>(rows * k), -3.f, 3.f, 31);
  const std::vector<float> gamma(k, 1.0f), beta(k, 0.0f);
  auto int8_linear = [](int64_t out, int64_t in, uint32_t seed, std::vector<int8_t>& w, std::vector<float>& scales,
                        std::vector<float>& bias, float static_scale, std::vector<float>* smooth) {
    const auto wf = random_floats(static_cast<size_t>(out * in), -127.f, 127.f, seed);
    w.resize(wf.size());
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(std::lrint(wf[i]));
    scales = random_floats(static_cast<size_t>(out), 0.001f, 0.01f, seed + 1);
    bias = random_floats(static_cast<size_t>(out), -0.5f, 0.5f, seed + 2);
    return Linear::create(
        Tensor::borrow(w.data(), {out, in}, DType::kI8), Tensor::borrow(bias.data(), {out}, DType::kF32),
        brisk::Device::kCPU,
        QuantScales{Tensor::borrow(scales.data(), {out}, DType::kF32), static_scale,
                    smooth != nullptr ? Tensor::borrow(smooth->data(), {in}, DType::kF32) : Tensor()});
  };
  std::vector<int8_t> w1, w2;
  std::vector<float> s1, s2, b1, b2;
  auto smooth = random_floats(static_cast<size_t>(mid), 0.25f, 4.0f, 41);
  auto up = int8_linear(mid, k, 51, w1, s1, b1, 0.0f, nullptr);
  REQUIRE(up.ok());
  struct Form {
    const char* name;
    float static_scale;
    bool smooth;
  };
  for (const Form form :
       {Form{"dynamic", 0.0f, false}, Form{"dynamic + SmoothQuant", 0.0f, true}, Form{"static", 0.02f, false}}) {
    CAPTURE(form.name, rows);
    auto down = int8_linear(n, mid, 61, w2, s2, b2, form.static_scale, form.smooth ? &smooth : nullptr);
    REQUIRE(down.ok());
    // The first Linear's input, quantized for it by a LayerNorm.
    std::vector<float> normed(x.size());
    QuantizedInput in;
    REQUIRE(brisk::kernels::layer_norm_bias_residual_quantize(brisk::Device::kCPU, x.data(), nullptr, nullptr,
                                                              gamma.data(), beta.data(), 1e-12f, normed.data(), rows, k,
                                                              *up, in)
                .ok());
    std::vector<float> y_want(static_cast<size_t>(rows * mid)), z_want(static_cast<size_t>(rows * n));
    REQUIRE(up->forward(in, 0, rows, y_want.data(), GemmEpilogue::kBiasGeluErf).ok());
    REQUIRE(down->forward(y_want.data(), rows, z_want.data(), GemmEpilogue::kBias).ok());
    std::vector<float> y(y_want.size(), -1.0f), z(z_want.size(), -1.0f);
    QuantizedInput q;
    REQUIRE(up->forward(in, 0, rows, y.data(), GemmEpilogue::kBiasGeluErf, *down, q).ok());
    CHECK(y == y_want);
    CHECK(q.rows() == rows);
    REQUIRE(down->forward(q, 0, rows, z.data(), GemmEpilogue::kBias).ok());
    CHECK(z == z_want);
    // Without the float output: the blocks reach q only.
    QuantizedInput codes_only;
    std::fill(z.begin(), z.end(), -1.0f);
    REQUIRE(up->forward(in, 0, rows, nullptr, GemmEpilogue::kBiasGeluErf, *down, codes_only).ok());
    CHECK(codes_only.rows() == rows);
    REQUIRE(down->forward(codes_only, 0, rows, z.data(), GemmEpilogue::kBias).ok());
    CHECK(z == z_want);
  }
}

TEST_CASE("an int8 Linear's quantizing forward names a wrong consumer or QuantizedInput", "[kernels][gemm][quant]") {
  using brisk::kernels::QuantizedInput;
  const int64_t rows = 4, k = 8, n = 6;
  const auto x = random_floats(static_cast<size_t>(rows * k), -1.f, 1.f, 71);
  const std::vector<float> gamma(k, 1.0f), beta(k, 0.0f);
  std::vector<float> scales(16, 0.01f), wf(static_cast<size_t>(n * n), 0.5f), normed(x.size());
  std::vector<float> y(static_cast<size_t>(rows * n));
  std::vector<int8_t> w(64, 3);  // room for every shape below
  auto make = [&](int64_t out, int64_t in) {
    return Linear::create(Tensor::borrow(w.data(), {out, in}, DType::kI8), Tensor(), brisk::Device::kCPU,
                          QuantScales{Tensor::borrow(scales.data(), {out}, DType::kF32), 0.0f, Tensor()});
  };
  auto up = make(n, k), down = make(4, n), narrow = make(4, 4);
  auto f32 = Linear::create(Tensor::borrow(wf.data(), {n, n}, DType::kF32), Tensor(), brisk::Device::kCPU);
  REQUIRE((up.ok() && down.ok() && narrow.ok() && f32.ok()));
  QuantizedInput in, q;
  REQUIRE(brisk::kernels::layer_norm_bias_residual_quantize(brisk::Device::kCPU, x.data(), nullptr, nullptr,
                                                            gamma.data(), beta.data(), 1e-12f, normed.data(), rows, k,
                                                            *up, in)
              .ok());
  auto run = [&](const Linear& consumer, QuantizedInput& out) {
    return std::string(up->forward(in, 0, rows, y.data(), GemmEpilogue::kBias, consumer, out).message());
  };
  CHECK_THAT(run(*f32, q),
             Catch::Contains("the consuming Linear has f32 weights on cpu; expected an int8 Linear on the cpu"));
  CHECK_THAT(run(*narrow, q),
             Catch::Contains("the consuming Linear's in_features is 4; expected this Linear's out_features = 6"));
  CHECK_THAT(run(*down, in), Catch::Contains("got its input QuantizedInput as the consumer's; expected another one"));
  CHECK_THAT(std::string(down->forward(in, 0, rows, y.data(), GemmEpilogue::kBias, *down, q).message()),
             Catch::Contains("quantized for another Linear; expected this one's"));
  CHECK_THAT(std::string(up->forward(in, 0, rows, nullptr, GemmEpilogue::kBiasAccumulate, *down, q).message()),
             Catch::Contains("kBiasAccumulate got a null y; expected the output to add to"));
  CHECK(q.rows() == 0);  // nothing was written by the failed calls
  CHECK(run(*down, q).empty());
  CHECK(q.rows() == rows);
}
