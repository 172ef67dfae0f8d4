// Packed multi-head self-attention against a double-precision reference, with sequences of different lengths
// (including empty ones) packed back to back.
#include <cmath>

#include "brisk/kernels/attention.h"
#include "kernel_test_util.h"

using brisk::testing::random_floats;

namespace {

std::vector<double> reference_attention(const std::vector<float>& qkv, const std::vector<int64_t>& offsets,
                                        int64_t heads, int64_t d) {
  const int64_t hidden = heads * d;
  std::vector<double> out(static_cast<size_t>(offsets.back() * hidden), 0.0);
  for (size_t b = 0; b + 1 < offsets.size(); ++b) {
    const int64_t begin = offsets[b], len = offsets[b + 1] - offsets[b];
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < len; ++i) {
        std::vector<double> s(static_cast<size_t>(len));
        double mx = -INFINITY;
        for (int64_t j = 0; j < len; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) {
            dot +=
                double(qkv[(begin + i) * 3 * hidden + h * d + c]) * qkv[(begin + j) * 3 * hidden + hidden + h * d + c];
          }
          s[j] = dot / std::sqrt(double(d));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (double& v : s) sum += (v = std::exp(v - mx));
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < len; ++j) acc += s[j] / sum * qkv[(begin + j) * 3 * hidden + 2 * hidden + h * d + c];
          out[(begin + i) * hidden + h * d + c] = acc;
        }
      }
    }
  }
  return out;
}

}  // namespace

// The sequence table of a packed batch: sequence b at rows [offsets[b], offsets[b + 1]).
struct Sequences {
  std::vector<int32_t> starts, lengths;
  brisk::AttentionRows rows() const {
    int64_t max_len = 0;
    for (int32_t len : lengths) max_len = std::max<int64_t>(max_len, len);
    return {starts.data(), lengths.data(), static_cast<int64_t>(starts.size()), max_len};
  }
};

Sequences packed(const std::vector<int64_t>& offsets) {
  Sequences s;
  for (size_t b = 0; b + 1 < offsets.size(); ++b) {
    s.starts.push_back(static_cast<int32_t>(offsets[b]));
    s.lengths.push_back(static_cast<int32_t>(offsets[b + 1] - offsets[b]));
  }
  return s;
}

TEST_CASE("self_attention matches the reference on packed sequences", "[kernels][attention][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t heads = GENERATE(1, 3, 12);
  const int64_t d = GENERATE(8, 32);
  // Few sequences (heads split between workers) and many (one sequence per work item).
  const std::vector<int64_t> lengths = GENERATE(std::vector<int64_t>{5, 1, 0, 17, 64, 2},
                                                std::vector<int64_t>{3, 40, 1, 9, 0, 33, 7, 7, 2, 64, 12, 5, 30, 1});
  std::vector<int64_t> offsets{0};
  for (int64_t len : lengths) offsets.push_back(offsets.back() + len);
  const int64_t hidden = heads * d;
  auto qkv = random_floats(static_cast<size_t>(offsets.back() * 3 * hidden), -2.f, 2.f, 11);
  std::vector<float> ctx(static_cast<size_t>(offsets.back() * hidden), -7.f);
  const Sequences seqs = packed(offsets);
  REQUIRE(
      brisk::self_attention(brisk::Device::kCPU, qkv.data(), nullptr, seqs.rows(), offsets.back(), heads, d, ctx.data())
          .ok());
  CHECK_CLOSE(ctx, reference_attention(qkv, offsets, heads, d), 2e-5, 2e-5);
}

TEST_CASE("self_attention on a padded layout matches the packed one and zeroes the pad rows", "[kernels][attention]") {
  const int64_t heads = 2, d = 8, hidden = heads * d;
  const std::vector<int64_t> lengths{3, 0, 5};
  const int64_t max_len = 5;
  std::vector<int64_t> offsets{0};
  for (int64_t len : lengths) offsets.push_back(offsets.back() + len);
  const auto packed_qkv = random_floats(static_cast<size_t>(offsets.back() * 3 * hidden), -2.f, 2.f, 5);
  // The same tokens at rows b * max_len + i; pad rows hold junk, which must not leak into real rows.
  const int64_t rows = static_cast<int64_t>(lengths.size()) * max_len;
  auto padded_qkv = random_floats(static_cast<size_t>(rows * 3 * hidden), -50.f, 50.f, 6);
  Sequences seqs;
  for (size_t b = 0; b < lengths.size(); ++b) {
    seqs.starts.push_back(static_cast<int32_t>(b * max_len));
    seqs.lengths.push_back(static_cast<int32_t>(lengths[b]));
    std::copy_n(packed_qkv.begin() + offsets[b] * 3 * hidden, lengths[b] * 3 * hidden,
                padded_qkv.begin() + static_cast<int64_t>(b) * max_len * 3 * hidden);
  }
  std::vector<float> ctx(static_cast<size_t>(rows * hidden), -7.f);
  REQUIRE(
      brisk::self_attention(brisk::Device::kCPU, padded_qkv.data(), nullptr, seqs.rows(), rows, heads, d, ctx.data())
          .ok());
  const std::vector<double> want = reference_attention(packed_qkv, offsets, heads, d);
  for (size_t b = 0; b < lengths.size(); ++b) {
    for (int64_t i = 0; i < max_len; ++i) {
      for (int64_t c = 0; c < hidden; ++c) {
        const float got = ctx[static_cast<size_t>((static_cast<int64_t>(b) * max_len + i) * hidden + c)];
        const double expect = i < lengths[b] ? want[static_cast<size_t>((offsets[b] + i) * hidden + c)] : 0.0;
        REQUIRE(std::fabs(got - expect) <= 2e-5 + 2e-5 * std::fabs(expect));
      }
    }
  }
}

TEST_CASE("self_attention adds a separate QKV bias as if the projection had it", "[kernels][attention]") {
  const int64_t heads = 3, d = 8, hidden = heads * d;
  const std::vector<int64_t> offsets{0, 4, 11};
  const auto qkv = random_floats(static_cast<size_t>(11 * 3 * hidden), -2.f, 2.f, 8);
  const auto bias = random_floats(static_cast<size_t>(3 * hidden), -1.f, 1.f, 9);
  std::vector<float> biased = qkv;
  for (size_t i = 0; i < biased.size(); ++i) biased[i] += bias[i % bias.size()];
  std::vector<float> ctx(static_cast<size_t>(11 * hidden));
  const Sequences seqs = packed(offsets);
  REQUIRE(
      brisk::self_attention(brisk::Device::kCPU, qkv.data(), bias.data(), seqs.rows(), 11, heads, d, ctx.data()).ok());
  CHECK_CLOSE(ctx, reference_attention(biased, offsets, heads, d), 2e-5, 2e-5);
}

TEST_CASE("self_attention rejects bad arguments", "[kernels][attention]") {
  std::vector<float> buf(96);
  const Sequences one = packed({0, 1});
  const auto call = [&](const float* qkv, const brisk::AttentionRows& s, int64_t rows, int64_t heads) {
    return brisk::self_attention(brisk::Device::kCPU, qkv, nullptr, s, rows, heads, 32, buf.data());
  };
  CHECK_FALSE(call(nullptr, one.rows(), 1, 1).ok());
  CHECK_FALSE(call(buf.data(), one.rows(), 1, 0).ok());
  CHECK(call(buf.data(), {nullptr, nullptr, 0, 0}, 1, 1).ok());
  // A sequence past the rows, or longer than max_len, names itself.
  Sequences past = packed({0, 1});
  past.starts[0] = 1;
  const auto status = call(buf.data(), past.rows(), 1, 1);
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(status.message()), Catch::Contains("sequence 0 is rows [1, 2)"));
  brisk::AttentionRows short_max = one.rows();
  short_max.max_len = 0;
  CHECK_FALSE(call(buf.data(), short_max, 1, 1).ok());
  // f16 data is a CUDA form; cpu names what it expects.
  std::vector<brisk::float16_t> half(96);
  const auto f16 = brisk::self_attention(brisk::Device::kCPU, half.data(), nullptr, one.rows(), 1, 1, 32, half.data());
  CHECK_THAT(std::string(f16.message()), Catch::Contains("expected f32"));
}
