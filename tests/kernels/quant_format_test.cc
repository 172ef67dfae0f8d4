// Quantize/dequantize round trips of every scheme against bounds derived from the scheme (half a step per value),
// on random and adversarial tensors: all-zero rows, a single outlier, constant groups, NaN and Inf.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "brisk/core/half.h"
#include "brisk/kernels/quant_format.h"
#include "test_util.h"

using namespace brisk;

namespace {

Tensor matrix(std::vector<float>& v, int64_t rows, int64_t cols) {
  return Tensor::borrow(v.data(), {rows, cols}, DType::kF32);
}

}  // namespace

TEST_CASE("int8 per-channel round trip is within half a step, per row", "[kernels][quant_format]") {
  const int64_t rows = 7, cols = 50;
  auto w = brisk::testing::random_floats(rows * cols, -1.0f, 1.0f, 3);
  for (int64_t c = 0; c < cols; ++c) w[2 * cols + c] = 0.0f;  // an all-zero row
  w[4 * cols + 9] = 300.0f;                                   // a single outlier in row 4
  auto q = quantize_int8(matrix(w, rows, cols), "layer.w");
  REQUIRE(q.ok());
  REQUIRE(q->scales.numel() == rows);
  auto back = dequantize_int8(*q);
  REQUIRE(back.ok());
  for (int64_t r = 0; r < rows; ++r) {
    float absmax = 0;
    for (int64_t c = 0; c < cols; ++c) absmax = std::max(absmax, std::fabs(w[r * cols + c]));
    const float scale = q->scales.data<float>()[r];
    CHECK(scale == (absmax > 0 ? absmax / 127.0f : 1.0f));
    for (int64_t c = 0; c < cols; ++c) {
      CHECK(std::fabs(back->data<float>()[r * cols + c] - w[r * cols + c]) <= scale / 2 * (1 + 1e-6f));
    }
  }
  // The outlier widens only its own row's step; the zero row stays exactly zero.
  CHECK(q->scales.data<float>()[4] > 100 * q->scales.data<float>()[3]);
  for (int64_t c = 0; c < cols; ++c) CHECK(back->data<float>()[2 * cols + c] == 0.0f);
  CHECK(q->values.data<int8_t>()[4 * cols + 9] == 127);
}

TEST_CASE("int8 per-tensor uses one scale", "[kernels][quant_format]") {
  std::vector<float> w = {1.0f, -2.0f, 0.5f, 127.0f};
  auto q = quantize_int8(matrix(w, 2, 2), "w", /*per_channel=*/false);
  REQUIRE(q.ok());
  REQUIRE(q->scales.numel() == 1);
  CHECK(q->scales.data<float>()[0] == 1.0f);
  CHECK(std::vector<int8_t>(q->values.data<int8_t>(), q->values.data<int8_t>() + 4) ==
        std::vector<int8_t>{1, -2, 0, 127});  // 0.5 rounds to even
}

TEST_CASE("int4 groups round trip within half a step of their own scale", "[kernels][quant_format]") {
  const int64_t group = GENERATE(32, 64, 128);
  const bool with_min = GENERATE(false, true);
  const int64_t rows = 5, cols = 256;
  auto w = brisk::testing::random_floats(rows * cols, -0.5f, 2.0f, 9);
  for (int64_t c = 0; c < group; ++c) w[1 * cols + c] = 0.75f;  // a constant group
  w[3 * cols + 200] = -50.0f;                                   // an outlier: only its group coarsens
  auto q = quantize_int4(matrix(w, rows, cols), group, with_min, "emb");
  REQUIRE(q.ok());
  REQUIRE(check_int4_matrix(*q, "emb").ok());
  CHECK(q->packed.nbytes() == static_cast<size_t>(rows * cols / 2));
  auto back = dequantize_int4(*q);
  REQUIRE(back.ok());
  const int64_t groups = cols / group;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float scale = brisk::f16_to_float(q->scales.data<uint16_t>()[r * groups + g]);
      float lo = w[r * cols + g * group], hi = lo;
      for (int64_t i = 0; i < group; ++i)
        lo = std::min(lo, w[r * cols + g * group + i]), hi = std::max(hi, w[r * cols + g * group + i]);
      // Symmetric groups step absmax/7 (the f16 rounding of the scale adds at most 2^-11 relative); with a
      // minimum, (max - min)/15 plus the f16 rounding of the minimum.
      const float step_bound = with_min ? (hi - lo) / 15.0f : std::max(std::fabs(lo), std::fabs(hi)) / 7.0f;
      const float min_err = with_min ? std::fabs(lo) * std::ldexp(1.0f, -11) : 0.0f;
      const bool constant_with_min = with_min && hi == lo;  // stored as scale 1, every value decoding to the minimum
      if (!constant_with_min) CHECK(scale <= step_bound * (1 + std::ldexp(1.0f, -10)) + 1e-7f);
      for (int64_t i = 0; i < group; ++i) {
        const int64_t at = r * cols + g * group + i;
        const float err = std::fabs(back->data<float>()[at] - w[at]);
        INFO("row " << r << " group " << g << " value " << w[at] << " back " << back->data<float>()[at]);
        CHECK(err <= (constant_with_min ? 0.0f : scale / 2) + min_err + 1e-6f);
      }
    }
  }
  // The constant group decodes exactly when it has a minimum, within half a step otherwise.
  if (with_min) CHECK(back->data<float>()[1 * cols] == brisk::f16_to_float(brisk::float_to_f16(0.75f)));
}

TEST_CASE("int4 one row dequantizes like the whole matrix", "[kernels][quant_format]") {
  auto w = brisk::testing::random_floats(4 * 64, -1.0f, 1.0f, 5);
  auto q = quantize_int4(matrix(w, 4, 64), 32, false, "w");
  REQUIRE(q.ok());
  auto all = dequantize_int4(*q);
  std::vector<float> row(64);
  dequantize_int4_row(*q, 2, row.data());
  CHECK(std::equal(row.begin(), row.end(), all->data<float>() + 2 * 64));
}

TEST_CASE("bf16 conversion rounds to nearest even", "[kernels][quant_format]") {
  std::vector<float> w = {1.0f, 1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8), -2.5f};
  auto b = to_bfloat16(Tensor::borrow(w.data(), {4}, DType::kF32), "w");
  REQUIRE(b.ok());
  const uint16_t* v = b->data<uint16_t>();
  CHECK(brisk::bf16_to_float(v[0]) == 1.0f);
  CHECK(brisk::bf16_to_float(v[1]) == 1.0f);                         // tie: to even
  CHECK(brisk::bf16_to_float(v[2]) == 1.0f + std::ldexp(1.0f, -6));  // tie: to even (up)
  CHECK(brisk::bf16_to_float(v[3]) == -2.5f);
}

TEST_CASE("NaN and Inf are rejected, naming the tensor and the element", "[kernels][quant_format]") {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> w(64, 0.5f);
    w[37] = bad;
    const Tensor t = matrix(w, 2, 32);
    for (const brisk::Status& s : {quantize_int8(t, "encoder.layer.1.output.dense.weight").status(),
                                   quantize_int4(t, 32, true, "encoder.layer.1.output.dense.weight").status(),
                                   to_bfloat16(t, "encoder.layer.1.output.dense.weight").status()}) {
      REQUIRE_FALSE(s.ok());
      CHECK_THAT(std::string(s.message()), Catch::Contains("encoder.layer.1.output.dense.weight") &&
                                               Catch::Contains("element 37") && Catch::Contains("expected finite"));
    }
  }
}

TEST_CASE("quantizers reject shapes and dtypes they cannot take", "[kernels][quant_format]") {
  std::vector<float> w(3 * 40, 1.0f);
  auto q4 = quantize_int4(matrix(w, 3, 40), 32, false, "w");
  REQUIRE_FALSE(q4.ok());
  CHECK_THAT(std::string(q4.status().message()), Catch::Contains("multiple of the int4 group size 32"));
  auto g = quantize_int4(matrix(w, 3, 40), 20, false, "w");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(std::string(g.status().message()), Catch::Contains("group size for 'w' is 20"));
  std::vector<int8_t> i8(4);
  auto wrong = quantize_int8(Tensor::borrow(i8.data(), {2, 2}, DType::kI8), "w");
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(std::string(wrong.status().message()), Catch::Contains("expected a contiguous f32 cpu matrix"));
}
