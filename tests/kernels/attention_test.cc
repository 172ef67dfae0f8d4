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

TEST_CASE("self_attention matches the reference on packed sequences", "[kernels][attention]") {
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
  REQUIRE(brisk::self_attention<brisk::Device::kCPU>(qkv.data(), offsets.data(), static_cast<int64_t>(lengths.size()),
                                                     heads, d, ctx.data())
              .ok());
  CHECK_CLOSE(ctx, reference_attention(qkv, offsets, heads, d), 2e-5, 2e-5);
}

TEST_CASE("self_attention rejects bad arguments", "[kernels][attention]") {
  std::vector<float> buf(96);
  std::vector<int64_t> offsets{0, 1};
  CHECK_FALSE(brisk::self_attention<brisk::Device::kCPU>(nullptr, offsets.data(), 1, 1, 32, buf.data()).ok());
  CHECK_FALSE(brisk::self_attention<brisk::Device::kCPU>(buf.data(), offsets.data(), 1, 0, 32, buf.data()).ok());
  CHECK(brisk::self_attention<brisk::Device::kCPU>(buf.data(), offsets.data(), 0, 1, 32, buf.data()).ok());
}
