// mean_pool / cls_pool / l2_normalize  on the cpu against double-precision references, per ISA level.
#include "brisk/kernels/pooling.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernel_test_util.h"

namespace brisk::kernels {
namespace {

using testing::random_floats;

TEST_CASE("mean_pool averages the positions below each sequence's length, and a zero length gives zeros",
          "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const int64_t dim : {1, 7, 15, 16, 17, 384, 1000}) {
    for (const int64_t seq : {1, 5, 128}) {
      const std::vector<int32_t> lengths = {
          static_cast<int32_t>(seq), 1, 0, static_cast<int32_t>((seq + 1) / 2), static_cast<int32_t>(seq + 7), -2,
          static_cast<int32_t>(seq)};
      const int64_t batch = static_cast<int64_t>(lengths.size());
      INFO("dim " << dim << " seq " << seq);
      const std::vector<float> hidden =
          random_floats(static_cast<size_t>(batch * seq * dim), -20.0f, 30.0f, static_cast<uint32_t>(dim + seq));
      std::vector<double> want(static_cast<size_t>(batch * dim));
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = std::clamp<int64_t>(lengths[static_cast<size_t>(b)], 0, seq);
        for (int64_t d = 0; d < dim; ++d) {
          double sum = 0.0;
          for (int64_t t = 0; t < len; ++t) sum += hidden[static_cast<size_t>((b * seq + t) * dim + d)];
          want[static_cast<size_t>(b * dim + d)] = sum / std::max<double>(static_cast<double>(len), 1e-9);
        }
      }
      std::vector<float> out(static_cast<size_t>(batch * dim), 99.0f);
      REQUIRE(mean_pool(Device::kCPU, hidden.data(), lengths.data(), batch, seq, dim, out.data()).ok());
      // fp32 sums of up to 128 terms of magnitude <= 30.
      CHECK_CLOSE(out, want, 2e-5, 1e-5);
    }
  }
}

TEST_CASE("mean_pool splits a large batch over threads", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t batch = 32, seq = 128, dim = 384;
  std::vector<int32_t> lengths(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) lengths[static_cast<size_t>(b)] = static_cast<int32_t>((b * 37) % (seq + 1));
  const std::vector<float> hidden = random_floats(static_cast<size_t>(batch * seq * dim), -1.0f, 1.0f, 77);
  std::vector<double> want(static_cast<size_t>(batch * dim));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lengths[static_cast<size_t>(b)];
    for (int64_t d = 0; d < dim; ++d) {
      double sum = 0.0;
      for (int64_t t = 0; t < len; ++t) sum += hidden[static_cast<size_t>((b * seq + t) * dim + d)];
      want[static_cast<size_t>(b * dim + d)] = len > 0 ? sum / static_cast<double>(len) : 0.0;
    }
  }
  std::vector<float> out(static_cast<size_t>(batch * dim));
  REQUIRE(mean_pool(Device::kCPU, hidden.data(), lengths.data(), batch, seq, dim, out.data()).ok());
  CHECK_CLOSE(out, want, 1e-6, 1e-5);
}

TEST_CASE("mean_pool without lengths averages every position", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t batch = 3, seq = 9, dim = 21;
  const std::vector<float> hidden = random_floats(static_cast<size_t>(batch * seq * dim), -1.0f, 1.0f, 8);
  const std::vector<int32_t> lengths(static_cast<size_t>(batch), static_cast<int32_t>(seq));
  std::vector<float> with_lengths(static_cast<size_t>(batch * dim)), without(static_cast<size_t>(batch * dim));
  REQUIRE(mean_pool(Device::kCPU, hidden.data(), lengths.data(), batch, seq, dim, with_lengths.data()).ok());
  REQUIRE(mean_pool(Device::kCPU, hidden.data(), nullptr, batch, seq, dim, without.data()).ok());
  CHECK(with_lengths == without);
}

TEST_CASE("cls_pool copies position 0 of every sequence", "[kernels]") {
  const int64_t batch = 3, seq = 4, dim = 17;
  const std::vector<float> hidden = random_floats(static_cast<size_t>(batch * seq * dim), -1.0f, 1.0f, 5);
  std::vector<float> out(static_cast<size_t>(batch * dim));
  REQUIRE(cls_pool(Device::kCPU, hidden.data(), batch, seq, dim, out.data()).ok());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t d = 0; d < dim; ++d) {
      CHECK(out[static_cast<size_t>(b * dim + d)] == hidden[static_cast<size_t>(b * seq * dim + d)]);
    }
  }
}

TEST_CASE("l2_normalize matches torch.nn.functional.normalize", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const int64_t cols : {1, 7, 15, 16, 17, 384, 1000, 1536}) {
    const int64_t rows = cols >= 384 ? 131 : 6;
    INFO("rows " << rows << " cols " << cols);
    std::vector<float> x = random_floats(static_cast<size_t>(rows * cols), -3.0f, 3.0f, static_cast<uint32_t>(cols));
    // Row 0 all zeros (stays zero), row 1 tiny (norm below eps: divided by eps), row 2 large, row 3 near FLT_MAX
    // (issue 30: a float sum of squares overflowed there and the row came back un-normalised), row 4 at 1e20.
    std::fill(x.begin(), x.begin() + cols, 0.0f);
    for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(cols + c)] = 1e-15f * static_cast<float>(c % 3);
    for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(2 * cols + c)] *= 1e6f;
    for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(3 * cols + c)] = c % 2 ? 3e38f : -3e38f;
    for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(4 * cols + c)] *= 1e20f;
    std::vector<double> want(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x.data() + r * cols;
      double sq = 0.0;
      for (int64_t c = 0; c < cols; ++c) sq += static_cast<double>(row[c]) * row[c];
      const double denom = std::max(std::sqrt(sq), 1e-12);
      for (int64_t c = 0; c < cols; ++c) want[static_cast<size_t>(r * cols + c)] = row[c] / denom;
    }
    REQUIRE(l2_normalize(Device::kCPU, x.data(), rows, cols).ok());
    CHECK_CLOSE(x, want, 1e-7, 1e-6);
  }
}

}  // namespace
}  // namespace brisk::kernels
