// quantize_rows_int8 and dequantize_rows_int8 on the cpu against scalar references, per ISA level: per-row
// absmax scales, round to nearest even, and every epilogue with a row stride wider than the row.
#include <cmath>

#include "brisk/kernels/quantize.h"
#include "kernel_test_util.h"

namespace {

using brisk::Device;
using brisk::kernels::GemmEpilogue;

double gelu_erf(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }
double gelu_tanh(double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))); }

}  // namespace

TEST_CASE("quantize_rows_int8 gives absmax / 127 scales and rounds half to even", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t rows = 5, cols = 67;
  auto x = brisk::testing::random_floats(static_cast<size_t>(rows * cols), -4.f, 4.f, 12);
  std::fill_n(x.begin() + 2 * cols, cols, 0.0f);  // an all-zero row: scale 1, zeros
  std::vector<int8_t> q(x.size());
  std::vector<float> scales(rows);
  REQUIRE(brisk::kernels::quantize_rows_int8(Device::kCPU, x.data(), rows, cols, q.data(), scales.data()).ok());
  for (int64_t r = 0; r < rows; ++r) {
    float absmax = 0.0f;
    for (int64_t c = 0; c < cols; ++c) absmax = std::max(absmax, std::fabs(x[r * cols + c]));
    const float want_scale = absmax > 0.0f ? absmax / 127.0f : 1.0f;
    CHECK(scales[r] == Approx(want_scale).epsilon(1e-6));
    for (int64_t c = 0; c < cols; ++c) {
      CHECK(std::fabs(q[r * cols + c] - std::nearbyint(x[r * cols + c] / want_scale)) <= 1.0f);
    }
  }
}

TEST_CASE("dequantize_rows_int8 scales, adds the bias and applies every epilogue with a wide row stride",
          "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t rows = 3, cols = 37, ldy = 41;
  std::vector<int32_t> acc(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < acc.size(); ++i) acc[i] = static_cast<int32_t>(i * 7919 % 2001) - 1000;
  const std::vector<float> row_scales{0.01f, 0.002f, 0.03f};
  const auto col_scales = brisk::testing::random_floats(cols, 0.001f, 0.01f, 3);
  const auto bias = brisk::testing::random_floats(cols, -1.f, 1.f, 4);
  for (const brisk::kernels::GemmEpilogue e :
       {GemmEpilogue::kBias, GemmEpilogue::kBiasGeluErf, GemmEpilogue::kBiasGeluTanh, GemmEpilogue::kBiasRelu,
        GemmEpilogue::kBiasAccumulate}) {
    for (const int64_t n_scales : {int64_t{1}, cols}) {
      std::vector<float> y(static_cast<size_t>(rows * ldy), 0.5f);
      REQUIRE(brisk::kernels::dequantize_rows_int8(Device::kCPU, acc.data(), row_scales.data(), col_scales.data(),
                                                   n_scales, bias.data(), e, y.data(), ldy, rows, cols)
                  .ok());
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < ldy; ++c) {
          const double got = y[r * ldy + c];
          INFO("epilogue " << static_cast<int>(e) << " scales " << n_scales << " at " << r << ", " << c);
          if (c >= cols) {
            REQUIRE(got == 0.5);  // the stride's padding is not touched
            continue;
          }
          const double v = double(acc[r * cols + c]) * row_scales[r] * col_scales[n_scales == 1 ? 0 : c] + bias[c];
          double want = v;
          if (e == brisk::kernels::GemmEpilogue::kBiasGeluErf) want = gelu_erf(v);
          if (e == brisk::kernels::GemmEpilogue::kBiasGeluTanh) want = gelu_tanh(v);
          if (e == brisk::kernels::GemmEpilogue::kBiasRelu) want = std::max(v, 0.0);
          if (e == brisk::kernels::GemmEpilogue::kBiasAccumulate) want = 0.5 + v;
          REQUIRE(std::fabs(got - want) <= 2e-6 + 2e-6 * std::fabs(want));
        }
      }
    }
  }
  std::vector<float> y(static_cast<size_t>(rows * ldy));
  const auto narrow = brisk::kernels::dequantize_rows_int8(
      Device::kCPU, acc.data(), row_scales.data(), col_scales.data(), cols, bias.data(),
      brisk::kernels::GemmEpilogue::kBias, y.data(), cols - 1, rows, cols);
  CHECK(std::string(narrow.message()).find("ldy is 36; expected >= cols = 37") != std::string::npos);
  const auto two_scales =
      brisk::kernels::dequantize_rows_int8(Device::kCPU, acc.data(), row_scales.data(), col_scales.data(), 2,
                                           bias.data(), brisk::kernels::GemmEpilogue::kBias, y.data(), ldy, rows, cols);
  CHECK(std::string(two_scales.message()).find("n_col_scales is 2") != std::string::npos);
}
