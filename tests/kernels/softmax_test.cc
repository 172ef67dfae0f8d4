// masked_softmax / masked_softmax_strided / masked_softmax_batched  on the cpu against a double-precision reference,
// per ISA level.
#include "brisk/kernels/softmax.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernel_test_util.h"

namespace brisk::kernels {
namespace {

using testing::random_floats;

// One row of ld floats: softmax(scale * x[0:v]) in double, zeros in [v, cols), x itself in [cols, ld).
void reference_softmax_row(const float* x, double* out, int64_t cols, int64_t ld, int64_t valid, double scale) {
  const int64_t v = std::clamp<int64_t>(valid, 0, cols);
  double m = -INFINITY;
  for (int64_t i = 0; i < v; ++i) m = std::max(m, scale * x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < v; ++i) sum += std::exp(scale * x[i] - m);
  for (int64_t i = 0; i < cols; ++i) out[i] = i < v ? std::exp(scale * x[i] - m) / sum : 0.0;
  for (int64_t i = cols; i < ld; ++i) out[i] = x[i];
}

// Relative 1e-6 (exp's 2e-7 plus the sum and the division) and an absolute floor far below any weight that
// matters, for entries that are ~0.
constexpr double kAbsTol = 1e-9;
constexpr double kRelTol = 1e-6;

TEST_CASE("masked_softmax matches the double reference on odd sizes and every valid_cols edge", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const int64_t cols : {1, 7, 15, 16, 17, 128, 384, 1000, 1536}) {
    const int64_t rows = cols >= 128 ? 97 : 4;
    std::vector<int64_t> valids = {0, 1, cols / 2, cols - 1, cols, cols + 5, -3};
    for (const int64_t valid : valids) {
      for (const float scale : {1.0f, 0.125f}) {
        INFO("rows " << rows << " cols " << cols << " valid " << valid << " scale " << scale);
        std::vector<float> x = random_floats(static_cast<size_t>(rows * cols), -10.0f, 10.0f,
                                             static_cast<uint32_t>(cols * 31 + valid + 7));
        std::vector<double> want(x.size());
        for (int64_t r = 0; r < rows; ++r) {
          reference_softmax_row(x.data() + r * cols, want.data() + r * cols, cols, cols, valid, scale);
        }
        REQUIRE(masked_softmax(Device::kCPU, x.data(), rows, cols, valid, scale).ok());
        CHECK_CLOSE(x, want, kAbsTol, kRelTol);
      }
    }
  }
}

TEST_CASE("masked_softmax rows sum to 1 and handle large magnitudes", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const float spread : {100.0f, 1e4f, 1e30f}) {
    const int64_t rows = 8, cols = 1000, valid = 777;
    INFO("spread " << spread);
    std::vector<float> x = random_floats(static_cast<size_t>(rows * cols), -spread, spread, 3);
    std::vector<double> want(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      reference_softmax_row(x.data() + r * cols, want.data() + r * cols, cols, cols, valid, 1.0);
    }
    REQUIRE(masked_softmax(Device::kCPU, x.data(), rows, cols, valid, 1.0f).ok());
    CHECK_CLOSE(x, want, kAbsTol, kRelTol);
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = x[static_cast<size_t>(r * cols + c)];
        REQUIRE(std::isfinite(v));
        REQUIRE(v >= 0.0f);
        sum += v;
      }
      CHECK(sum == Approx(1.0).margin(1e-5));
    }
  }
}

TEST_CASE("masked_softmax of rows whose valid scores are all -inf is 0, and -inf entries get 0", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  std::vector<float> x(2 * 33, -INFINITY);
  x[33 + 5] = 2.0f;  // row 1 has one finite score among -inf
  x[33 + 20] = 2.0f;
  REQUIRE(masked_softmax(Device::kCPU, x.data(), 2, 33, 33, 1.0f).ok());
  for (int c = 0; c < 33; ++c) {
    INFO("column " << c);
    CHECK(x[static_cast<size_t>(c)] == 0.0f);
    CHECK(x[static_cast<size_t>(33 + c)] == ((c == 5 || c == 20) ? 0.5f : 0.0f));
  }
}

TEST_CASE("masked_softmax_strided leaves the padding between rows alone", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  for (const int64_t cols : {7, 17, 128}) {
    for (const int64_t pad : {1, 9}) {
      const int64_t ld = cols + pad, rows = 301;
      for (const int64_t valid : {int64_t{0}, int64_t{1}, cols - 2, cols}) {
        INFO("cols " << cols << " ld " << ld << " valid " << valid);
        std::vector<float> x = random_floats(static_cast<size_t>(rows * ld), -5.0f, 5.0f, 9);
        std::vector<double> want(x.size());
        for (int64_t r = 0; r < rows; ++r) {
          reference_softmax_row(x.data() + r * ld, want.data() + r * ld, cols, ld, valid, 0.25);
        }
        REQUIRE(masked_softmax_strided(Device::kCPU, x.data(), rows, cols, ld, valid, 0.25f).ok());
        CHECK_CLOSE(x, want, kAbsTol, kRelTol);
      }
    }
  }
}

TEST_CASE("masked_softmax_batched masks each group with its own length", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t batch = 5, heads = 12, seq = 37, ld = 40;
  const int64_t rows_per_group = heads * seq;
  const std::vector<int32_t> lengths = {37, 1, 0, 20, 36};
  std::vector<float> x = random_floats(static_cast<size_t>(batch * rows_per_group * ld), -8.0f, 8.0f, 17);
  std::vector<double> want(x.size());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t r = 0; r < rows_per_group; ++r) {
      const int64_t offset = (b * rows_per_group + r) * ld;
      reference_softmax_row(x.data() + offset, want.data() + offset, seq, ld, lengths[static_cast<size_t>(b)], 0.125);
    }
  }
  REQUIRE(masked_softmax_batched(Device::kCPU, x.data(), batch, rows_per_group, seq, ld, lengths.data(), 0.125f).ok());
  CHECK_CLOSE(x, want, kAbsTol, kRelTol);
}

}  // namespace
}  // namespace brisk::kernels
