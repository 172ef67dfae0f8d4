// The decoder ops (brisk/kernels/decoder_ops.h) against double-precision references of their formulas, at each ISA
// level (rms_norm's sum of squares and silu_mul's exp are vectorised per level; causal_attention's GEMMs are oneDNN's
// and its softmax brisk's), and their argument errors. The whole decoder against transformers:
// tests/model/qwen_test.cc.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "brisk/kernels/decoder_ops.h"
#include "kernel_test_util.h"

namespace brisk::kernels {
namespace {

using testing::random_floats;

TEST_CASE("rms_norm and silu_mul match double references on ragged widths", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (int64_t cols : {1, 7, 16, 33, 384}) {
    INFO("cols " << cols);
    const int64_t rows = 5;
    const std::vector<float> x = random_floats(static_cast<size_t>(rows * cols), -3.0f, 3.0f, 11);
    const std::vector<float> gamma = random_floats(static_cast<size_t>(cols), 0.5f, 1.5f, 12);
    std::vector<float> out(x.size());
    REQUIRE(rms_norm(Device::kCPU, x.data(), gamma.data(), 1e-6f, out.data(), rows, cols).ok());
    std::vector<double> want(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      double sq = 0;
      for (int64_t c = 0; c < cols; ++c) sq += double(x[r * cols + c]) * x[r * cols + c];
      const double inv = 1.0 / std::sqrt(sq / double(cols) + 1e-6);
      for (int64_t c = 0; c < cols; ++c) want[r * cols + c] = gamma[c] * x[r * cols + c] * inv;
    }
    CHECK_CLOSE(out, want, 1e-6, 1e-5);
    // In place, as the final norm runs.
    std::vector<float> in_place = x;
    REQUIRE(rms_norm(Device::kCPU, in_place.data(), gamma.data(), 1e-6f, in_place.data(), rows, cols).ok());
    CHECK(in_place == out);

    // gate_up [rows, 2 * cols]: silu(gate) * up, including gates far out where exp saturates.
    std::vector<float> gate_up = random_floats(static_cast<size_t>(rows * 2 * cols), -12.0f, 12.0f, 13);
    gate_up[0] = -100.0f;
    gate_up[1 % cols] = 95.0f;
    std::vector<float> act(static_cast<size_t>(rows * cols));
    REQUIRE(silu_mul(Device::kCPU, gate_up.data(), rows, cols, act.data()).ok());
    std::vector<double> want_act(act.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const double g = gate_up[r * 2 * cols + c], u = gate_up[r * 2 * cols + cols + c];
        want_act[r * cols + c] = g / (1.0 + std::exp(-g)) * u;
      }
    }
    CHECK_CLOSE(act, want_act, 1e-6, 2e-6);
  }
}

TEST_CASE("rotary_qk and causal_attention match double references with grouped-query heads", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t heads = 4, kv_heads = 2, d = 8, half = d / 2, ld = (heads + 2 * kv_heads) * d + 3;  // ld padded
  const std::vector<int32_t> starts = {0, 5, 6}, lengths = {5, 1, 9};
  const int64_t rows = 15;
  std::vector<int32_t> positions;
  for (size_t b = 0; b < starts.size(); ++b) {
    for (int32_t t = 0; t < lengths[b]; ++t) positions.push_back(t + (b == 2 ? 1000 : 0));  // large angles too
  }
  std::vector<float> qkv = random_floats(static_cast<size_t>(rows * ld), -1.0f, 1.0f, 21);
  const std::vector<float> q_gamma = random_floats(static_cast<size_t>(d), 0.5f, 1.5f, 22);
  const std::vector<float> k_gamma = random_floats(static_cast<size_t>(d), 0.5f, 1.5f, 23);
  const double theta = 1e6;

  // Reference rotation: per-head RMSNorm, then rotate_half by position * theta^(-2i/d) (the angle's f32 rounding as
  // the op documents it).
  std::vector<double> ref(qkv.begin(), qkv.end());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads + kv_heads; ++h) {
      double* x = ref.data() + r * ld + h * d;
      const float* gamma = h < heads ? q_gamma.data() : k_gamma.data();
      double sq = 0;
      for (int64_t e = 0; e < d; ++e) sq += x[e] * x[e];
      const double inv = 1.0 / std::sqrt(sq / double(d) + 1e-6);
      for (int64_t e = 0; e < d; ++e) x[e] = gamma[e] * x[e] * inv;
      for (int64_t i = 0; i < half; ++i) {
        const float inv_freq = 1.0f / std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / float(d));
        const double angle = static_cast<float>(positions[r]) * inv_freq;
        const double a = x[i], b = x[i + half];
        x[i] = a * std::cos(angle) - b * std::sin(angle);
        x[i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  }
  REQUIRE(rotary_qk(Device::kCPU, qkv.data(), ld, rows, positions.data(),
                    RotaryShape{heads, kv_heads, d, theta, q_gamma.data(), k_gamma.data(), 1e-6f})
              .ok());
  CHECK_CLOSE(qkv, ref, 2e-6, 2e-5);

  // Reference causal attention over the rotated rows, query head h reading key/value head h / 2.
  const int64_t width = heads * d;
  std::vector<double> want(static_cast<size_t>(rows * width), 0.0);
  for (size_t b = 0; b < starts.size(); ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kvh = h / (heads / kv_heads);
      for (int64_t i = 0; i < lengths[b]; ++i) {
        const int64_t qi = starts[b] + i;
        std::vector<double> s(static_cast<size_t>(i + 1));
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) {
            dot += double(qkv[qi * ld + h * d + e]) * qkv[(starts[b] + j) * ld + (heads + kvh) * d + e];
          }
          s[j] = dot / std::sqrt(double(d));
          m = std::max(m, s[j]);
        }
        for (double& v : s) sum += (v = std::exp(v - m));
        for (int64_t j = 0; j <= i; ++j) {
          for (int64_t e = 0; e < d; ++e) {
            want[qi * width + h * d + e] += s[j] / sum * qkv[(starts[b] + j) * ld + (heads + kv_heads + kvh) * d + e];
          }
        }
      }
    }
  }
  std::vector<float> out(static_cast<size_t>(rows * width), -7.0f);
  const AttentionRows seqs{starts.data(), lengths.data(), 3, 9};
  REQUIRE(
      causal_attention(Device::kCPU, qkv.data(), ld, seqs, rows, AttentionHeads{heads, kv_heads, d}, out.data()).ok());
  CHECK_CLOSE(out, want, 1e-5, 1e-4);
}

TEST_CASE("decoder ops: bad arguments are clear errors that name the argument", "[kernels]") {
  std::vector<float> qkv(64 * 4, 0.5f), out(64 * 4);
  const std::vector<int32_t> positions = {0, 1, -3, 2};
  auto message = [](const Status& s) { return std::string(s.message()); };
  Status s = rotary_qk(Device::kCPU, qkv.data(), 32, 4, positions.data(), RotaryShape{2, 1, 8, 1e4});
  CHECK_THAT(message(s), Catch::Contains("position -3 at row 2; expected >= 0"));
  s = rotary_qk(Device::kCPU, qkv.data(), 40, 2, positions.data(), RotaryShape{3, 2, 8, 1e4});
  CHECK_THAT(message(s), Catch::Contains("kv_heads dividing heads"));
  s = rotary_qk(Device::kCPU, qkv.data(), 16, 2, positions.data(), RotaryShape{2, 1, 8, 1e4});
  CHECK_THAT(message(s), Catch::Contains("ld is 16; expected >= (heads + 2 * kv_heads) * head_dim = 32"));
  s = rotary_qk(Device::kCPU, qkv.data(), 32, 2, positions.data(), RotaryShape{2, 1, 8, 0.5});
  CHECK_THAT(message(s), Catch::Contains("theta is 0.5"));
  const std::vector<int32_t> starts = {0, 3}, lengths = {3, 4};
  s = causal_attention(Device::kCPU, qkv.data(), 32, AttentionRows{starts.data(), lengths.data(), 2, 4}, 6,
                       AttentionHeads{2, 1, 8}, out.data());
  CHECK_FALSE(s.ok());  // sequence 1 ends at row 7 of 6
  CHECK_FALSE(rms_norm(Device::kCPU, nullptr, qkv.data(), 1e-6f, out.data(), 2, 8).ok());
  CHECK_THAT(message(silu_mul(Device::kCPU, qkv.data(), -1, 8, out.data())), Catch::Contains("rows is -1"));
  s = rms_norm(Device::kCUDA, qkv.data(), qkv.data(), 1e-6f, out.data(), 2, 8);
  CHECK(absl::IsUnimplemented(s));
  CHECK_THAT(message(s), Catch::Contains("rms_norm on cuda is not implemented"));
}

}  // namespace
}  // namespace brisk::kernels
