// layer_norm_bias_residual on the cpu against a double-precision reference, per ISA level.
#include "brisk/core/half.h"
#include "brisk/kernels/layernorm.h"
#include "brisk/kernels/linear.h"

#include <cmath>
#include <vector>

#include "kernels/kernel_test_util.h"

namespace brisk::kernels {
namespace {

using testing::random_floats;

// out = LN(x + bias + residual) * gamma + beta in double. The sum x + bias + residual is rounded to fp32 first,
// in that order, as every framework materialises it (PyTorch: dense output incl. bias, then + input tensor):
// at |y| ~ 150 the rounding of y alone is ~1e-5 of a unit spread, and no fp32 kernel can do better than that.
std::vector<double> reference_layer_norm(const std::vector<float>& x, const float* bias, const float* residual,
                                         const std::vector<float>& gamma, const std::vector<float>& beta, double eps,
                                         int64_t rows, int64_t cols) {
  std::vector<double> out(static_cast<size_t>(rows * cols));
  std::vector<double> y(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      float v = x[r * cols + c];
      if (bias != nullptr) v += bias[c];
      if (residual != nullptr) v += residual[r * cols + c];
      y[c] = v;
      mean += v;
    }
    mean /= static_cast<double>(cols);
    double var = 0.0;
    for (int64_t c = 0; c < cols; ++c) var += (y[c] - mean) * (y[c] - mean);
    var /= static_cast<double>(cols);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = (y[c] - mean) * rstd * gamma[c] + beta[c];
  }
  return out;
}

enum class Alias { kNone, kOutIsX, kOutIsResidual };

// The float inputs themselves are exact; the kernel's result must be within ~1e-5 of the exact answer
// relative to the output scale.
constexpr double kAbsTol = 1e-5;
constexpr double kRelTol = 1e-5;

void check_layer_norm(int64_t rows, int64_t cols, bool with_bias, bool with_residual, Alias alias, float x_offset,
                      float x_spread, float residual_offset, uint32_t seed) {
  const size_t n = static_cast<size_t>(rows * cols);
  std::vector<float> x = random_floats(n, x_offset - x_spread, x_offset + x_spread, seed);
  std::vector<float> residual = random_floats(n, residual_offset - 1.0f, residual_offset + 1.0f, seed + 1);
  const std::vector<float> bias = random_floats(static_cast<size_t>(cols), -0.5f, 0.5f, seed + 2);
  const std::vector<float> gamma = random_floats(static_cast<size_t>(cols), 0.5f, 1.5f, seed + 3);
  const std::vector<float> beta = random_floats(static_cast<size_t>(cols), -0.5f, 0.5f, seed + 4);
  const float* bias_p = with_bias ? bias.data() : nullptr;
  const float* res_p = with_residual ? residual.data() : nullptr;
  const float eps = 1e-12f;
  const std::vector<double> want = reference_layer_norm(x, bias_p, res_p, gamma, beta, eps, rows, cols);

  std::vector<float> out(n, -777.0f);
  float* out_p = out.data();
  if (alias == Alias::kOutIsX) out_p = x.data();
  if (alias == Alias::kOutIsResidual) out_p = residual.data();
  REQUIRE(layer_norm_bias_residual(Device::kCPU, x.data(), bias_p, with_residual ? residual.data() : nullptr,
                                   gamma.data(), beta.data(), eps, out_p, rows, cols)
              .ok());
  const std::vector<float> got(out_p, out_p + n);
  CHECK_CLOSE(got, want, kAbsTol, kRelTol);
}

TEST_CASE("layer_norm_bias_residual matches the double reference on odd sizes", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const int64_t cols : {1, 7, 15, 16, 17, 384, 1000, 1536}) {
    // Enough rows at the wide sizes that parallel_for splits them over threads.
    const int64_t rows = cols >= 384 ? 173 : 5;
    for (const bool with_bias : {false, true}) {
      for (const bool with_residual : {false, true}) {
        INFO("rows " << rows << " cols " << cols << " bias " << with_bias << " residual " << with_residual);
        check_layer_norm(rows, cols, with_bias, with_residual, Alias::kNone, 0.0f, 2.0f, 0.0f,
                         static_cast<uint32_t>(cols * 4 + with_bias * 2 + with_residual));
      }
    }
  }
}

TEST_CASE("layer_norm_bias_residual works in place on x and on the residual", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const int64_t cols : {7, 17, 384, 1000}) {
    const int64_t rows = cols >= 384 ? 173 : 9;
    INFO("cols " << cols);
    SECTION("out == x") { check_layer_norm(rows, cols, true, true, Alias::kOutIsX, 0.0f, 3.0f, 1.0f, 11); }
    SECTION("out == residual") {
      check_layer_norm(rows, cols, true, true, Alias::kOutIsResidual, 0.0f, 3.0f, 1.0f, 12);
    }
    SECTION("out == x, no bias, no residual") {
      check_layer_norm(rows, cols, false, false, Alias::kOutIsX, 0.0f, 3.0f, 0.0f, 13);
    }
  }
}

TEST_CASE("layer_norm_bias_residual keeps precision at large magnitudes with a small spread", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  // The residual stream of a trained BERT reaches |values| of 10 to 100 while a row's spread can be ~1: a
  // one-pass E[y^2] - E[y]^2 in fp32 loses most digits here.
  for (const int64_t cols : {17, 384, 1536}) {
    for (const float offset : {30.0f, 100.0f, -250.0f}) {
      INFO("cols " << cols << " offset " << offset);
      check_layer_norm(64, cols, true, true, Alias::kNone, offset, 0.5f, offset * 0.5f, 21);
      check_layer_norm(64, cols, false, false, Alias::kOutIsX, offset, 1.0f, 0.0f, 22);
    }
  }
  // Large spread as well.
  check_layer_norm(64, 384, true, true, Alias::kNone, 0.0f, 100.0f, 0.0f, 23);
}

TEST_CASE("layer_norm_bias_residual of a constant row is beta", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const int64_t cols : {1, 16, 384, 1000}) {
    for (const float value : {0.0f, 1.1f, 37.5f, -1234.567f}) {
      INFO("cols " << cols << " value " << value);
      const std::vector<float> x(static_cast<size_t>(cols), value);
      const std::vector<float> gamma = random_floats(static_cast<size_t>(cols), 0.5f, 1.5f, 5);
      const std::vector<float> beta = random_floats(static_cast<size_t>(cols), -0.5f, 0.5f, 6);
      std::vector<float> out(static_cast<size_t>(cols));
      REQUIRE(layer_norm_bias_residual(Device::kCPU, x.data(), nullptr, nullptr, gamma.data(), beta.data(), 1e-12f,
                                       out.data(), 1, cols)
                  .ok());
      const std::vector<double> want(beta.begin(), beta.end());
      CHECK_CLOSE(out, want, 1e-6, 0.0);
    }
  }
}

TEST_CASE("layer_norm_bias_residual with zero rows or columns does nothing", "[kernels]") {
  float sentinel = 5.0f;
  const float* none = nullptr;
  REQUIRE(layer_norm_bias_residual(Device::kCPU, none, none, none, none, none, 1e-12f, &sentinel, 0, 384).ok());
  REQUIRE(layer_norm_bias_residual(Device::kCPU, none, none, none, none, none, 1e-12f, &sentinel, 4, 0).ok());
  CHECK(sentinel == 5.0f);
}

TEST_CASE("layer_norm_bias_residual names a missing buffer, a negative size and f16 data on the cpu", "[kernels]") {
  std::vector<float> x(8, 1.0f), gamma(4, 1.0f), beta(4, 0.0f), out(8);
  const auto missing = layer_norm_bias_residual(Device::kCPU, x.data(), nullptr, nullptr, static_cast<float*>(nullptr),
                                                beta.data(), 1e-12f, out.data(), 2, 4);
  CHECK(missing.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(missing.message()), Catch::Contains("gamma is null"));
  const auto negative = layer_norm_bias_residual(Device::kCPU, x.data(), nullptr, nullptr, gamma.data(), beta.data(),
                                                 1e-12f, out.data(), -1, 4);
  CHECK_THAT(std::string(negative.message()), Catch::Contains("rows is -1; expected >= 0"));
  std::vector<brisk::float16_t> h(8);
  const auto f16 =
      layer_norm_bias_residual(Device::kCPU, h.data(), nullptr, nullptr, h.data(), h.data(), 1e-12f, h.data(), 2, 4);
  CHECK_THAT(std::string(f16.message()), Catch::Contains("on cpu got f16 data; expected f32"));
}

TEST_CASE("layer_norm_bias_residual_quantize writes the normalised rows and their int8 form", "[kernels]") {
  const int64_t rows = 3, cols = 40;
  auto x = brisk::testing::random_floats(static_cast<size_t>(rows * cols), -3.f, 3.f, 4);
  auto gamma = brisk::testing::random_floats(cols, 0.5f, 1.5f, 5);
  auto beta = brisk::testing::random_floats(cols, -0.1f, 0.1f, 6);
  std::vector<float> plain(x.size()), out(x.size()), scales(rows);
  std::vector<int8_t> q(x.size());
  REQUIRE(layer_norm_bias_residual(Device::kCPU, x.data(), nullptr, nullptr, gamma.data(), beta.data(), 1e-12f,
                                   plain.data(), rows, cols)
              .ok());
  REQUIRE(layer_norm_bias_residual_quantize(Device::kCPU, x.data(), nullptr, nullptr, gamma.data(), beta.data(), 1e-12f,
                                            out.data(), q.data(), scales.data(), rows, cols)
              .ok());
  CHECK(out == plain);
  for (int64_t r = 0; r < rows; ++r) {
    float absmax = 0.0f;
    for (int64_t c = 0; c < cols; ++c) absmax = std::max(absmax, std::fabs(plain[r * cols + c]));
    CHECK(scales[r] == Approx(absmax / 127.0f));
    for (int64_t c = 0; c < cols; ++c) {
      const float want = std::nearbyint(plain[r * cols + c] / scales[r]);
      CHECK(std::fabs(q[r * cols + c] - want) <= 1.0f);  // a different rounding of the reciprocal may flip a tie
    }
  }
}

// The Linear form: LayerNorm quantizes its output for an int8 Linear in its own pass, and the Linear computes from
// those codes what it computes from the floats (the same bits), chunk by chunk as the encoder's feed-forward does.
TEST_CASE("layer_norm_bias_residual_quantize for an int8 Linear gives the bits of the Linear's own quantize pass",
          "[kernels][isa]") {
  // 700 rows of 72: several of the kernel's 56-row blocks per task, and more than one task on two threads; 72
  // columns leave a tail in every vector width and pad k to 72 (k_padded, a multiple of 4).
  const int64_t rows = 700, cols = 72, n = 40;
  const auto x = random_floats(static_cast<size_t>(rows * cols), -3.f, 3.f, 11);
  const auto residual = random_floats(static_cast<size_t>(rows * cols), -1.f, 1.f, 12);
  const auto gamma = random_floats(cols, 0.5f, 1.5f, 13);
  const auto beta = random_floats(cols, -0.5f, 0.5f, 14);
  std::vector<int8_t> w(static_cast<size_t>(n * cols));
  const auto wf = random_floats(w.size(), -127.f, 127.f, 15);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(std::lrint(wf[i]));
  auto w_scales = random_floats(n, 0.001f, 0.01f, 16);  // not const: Tensor::borrow takes a mutable pointer
  auto bias = random_floats(n, -0.5f, 0.5f, 17);
  auto smooth = random_floats(cols, 0.25f, 4.0f, 18);
  struct Form {
    const char* name;
    float static_scale;
    bool smooth;
  };
  for (const Form form :
       {Form{"dynamic", 0.0f, false}, Form{"dynamic + SmoothQuant", 0.0f, true}, Form{"static", 0.05f, false}}) {
    CAPTURE(form.name);
    auto fc = Linear::create(Tensor::borrow(w.data(), {n, cols}, DType::kI8),
                             Tensor::borrow(bias.data(), {n}, DType::kF32), Device::kCPU,
                             QuantScales{Tensor::borrow(w_scales.data(), {n}, DType::kF32), form.static_scale,
                                         form.smooth ? Tensor::borrow(smooth.data(), {cols}, DType::kF32) : Tensor()});
    REQUIRE(fc.ok());
    REQUIRE(fc->takes_quantized_input());
    std::vector<float> plain(x.size()), fused(x.size());
    REQUIRE(layer_norm_bias_residual(Device::kCPU, x.data(), nullptr, residual.data(), gamma.data(), beta.data(),
                                     1e-12f, plain.data(), rows, cols)
                .ok());
    QuantizedInput q;
    REQUIRE(layer_norm_bias_residual_quantize(Device::kCPU, x.data(), nullptr, residual.data(), gamma.data(),
                                              beta.data(), 1e-12f, fused.data(), rows, cols, *fc, q)
                .ok());
    CHECK(q.rows() == rows);
    CHECK(fused == plain);
    std::vector<float> want(static_cast<size_t>(rows * n)), got(want.size(), -1.0f);
    REQUIRE(fc->forward(plain.data(), rows, want.data(), GemmEpilogue::kBiasGeluErf).ok());
    // In two chunks, as the encoder's feed-forward reads it.
    REQUIRE(fc->forward(q, 0, 300, got.data(), GemmEpilogue::kBiasGeluErf).ok());
    REQUIRE(fc->forward(q, 300, rows - 300, got.data() + 300 * n, GemmEpilogue::kBiasGeluErf).ok());
    CHECK(got == want);
    // And independently of the Linear's own pass: within int8's rounding of the double-precision result.
    double worst = 0.0, largest = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
          // SmoothQuant: the Linear divides its input by input_scale (its caller scaled the weights' columns up).
          const double in = form.smooth ? double{plain[r * cols + c]} / smooth[c] : plain[r * cols + c];
          dot += in * w[j * cols + c] * w_scales[j];
        }
        const double v = dot + bias[j];
        const double gelu = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
        worst = std::max(worst, std::fabs(got[r * n + j] - gelu));
        largest = std::max(largest, std::fabs(gelu));
      }
    }
    CHECK(worst <= 0.03 * largest);
  }
}

TEST_CASE("layer_norm_bias_residual_quantize and Linear::forward name a wrong consumer, shape or input", "[kernels]") {
  const int64_t rows = 4, cols = 8, n = 3;
  const auto x = random_floats(static_cast<size_t>(rows * cols), -1.f, 1.f, 21);
  const std::vector<float> gamma(cols, 1.0f), beta(cols, 0.0f);
  std::vector<float> scales(n, 0.01f), wf(static_cast<size_t>(n * cols), 0.5f);
  std::vector<int8_t> w(static_cast<size_t>(n * cols), 3);
  std::vector<float> out(x.size()), y(static_cast<size_t>(rows * n));
  auto int8 = Linear::create(Tensor::borrow(w.data(), {n, cols}, DType::kI8), Tensor(), Device::kCPU,
                             QuantScales{Tensor::borrow(scales.data(), {n}, DType::kF32), 0.0f, Tensor()});
  auto other = Linear::create(Tensor::borrow(w.data(), {n, cols}, DType::kI8), Tensor(), Device::kCPU,
                              QuantScales{Tensor::borrow(scales.data(), {n}, DType::kF32), 0.0f, Tensor()});
  auto f32 = Linear::create(Tensor::borrow(wf.data(), {n, cols}, DType::kF32), Tensor(), Device::kCPU);
  auto narrow = Linear::create(Tensor::borrow(w.data(), {n * 2, cols / 2}, DType::kI8), Tensor(), Device::kCPU,
                               QuantScales{Tensor::borrow(scales.data(), {1}, DType::kF32), 0.0f, Tensor()});
  REQUIRE((int8.ok() && other.ok() && f32.ok() && narrow.ok()));
  CHECK_FALSE(f32->takes_quantized_input());
  QuantizedInput q;
  auto run = [&](const Linear& consumer, Device device = Device::kCPU) {
    return layer_norm_bias_residual_quantize(device, x.data(), nullptr, nullptr, gamma.data(), beta.data(), 1e-12f,
                                             out.data(), rows, cols, consumer, q);
  };
  CHECK_THAT(std::string(run(*f32).message()),
             Catch::Contains("the consuming Linear has f32 weights on cpu; expected an int8 Linear on the cpu"));
  CHECK_THAT(std::string(run(*narrow).message()),
             Catch::Contains("the consuming Linear's in_features is 4; expected cols = 8"));
  CHECK_THAT(std::string(run(*int8, Device::kCUDA).message()), Catch::Contains("for a Linear on cuda; expected cpu"));
  CHECK_THAT(std::string(int8->forward(q, 0, rows, y.data(), GemmEpilogue::kBias).message()),
             Catch::Contains("an empty QuantizedInput; expected rows quantized for this Linear"));
  REQUIRE(run(*int8).ok());
  CHECK(int8->forward(q, 0, rows, y.data(), GemmEpilogue::kBias).ok());
  // A pass in row blocks continues q where it ends, for the same Linear.
  auto continue_at = [&](const Linear& consumer, int64_t first_row) {
    return layer_norm_bias_residual_quantize(Device::kCPU, x.data(), nullptr, nullptr, gamma.data(), beta.data(),
                                             1e-12f, out.data(), rows, cols, consumer, q, first_row);
  };
  CHECK_THAT(std::string(continue_at(*int8, 2).message()),
             Catch::Contains("first_row is 2; expected 0 or the 4 rows the QuantizedInput holds"));
  CHECK_THAT(std::string(continue_at(*other, 4).message()),
             Catch::Contains("first_row is 4; expected 0 or the 4 rows the QuantizedInput holds for this Linear (it "
                             "holds another Linear's)"));
  REQUIRE(continue_at(*int8, 4).ok());
  CHECK(q.rows() == 2 * rows);
  CHECK_THAT(std::string(other->forward(q, 0, rows, y.data(), GemmEpilogue::kBias).message()),
             Catch::Contains("quantized for another Linear; expected this one's"));
  CHECK_THAT(std::string(int8->forward(q, 6, 3, y.data(), GemmEpilogue::kBias).message()),
             Catch::Contains("rows [6, 9) of a QuantizedInput; expected a range within its 8 rows"));
  CHECK_THAT(std::string(int8->forward(q, 0, rows, nullptr, GemmEpilogue::kBias).message()),
             Catch::Contains("got a null y; expected the output rows"));
}

}  // namespace
}  // namespace brisk::kernels
