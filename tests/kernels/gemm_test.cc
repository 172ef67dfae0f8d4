// Linear (oneDNN matmul with fused epilogues) against a double-precision reference, at row counts that take the
// packed-weight path and the plain-weight fallback, plus concurrent use of one Linear.
#include <atomic>
#include <cmath>
#include <thread>

#include "brisk/kernels/linear.h"
#include "kernel_test_util.h"

using brisk::kernels::GemmEpilogue;
using brisk::testing::random_floats;

namespace {

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

std::vector<double> reference(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                              const std::vector<float>& y0, int64_t m, int64_t n, int64_t k,
                              brisk::kernels::GemmEpilogue e) {
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = b.empty() ? 0.0 : b[j];
      for (int64_t p = 0; p < k; ++p) acc += double(x[i * k + p]) * w[j * k + p];
      switch (e) {
        case brisk::kernels::GemmEpilogue::kBias: break;
        case brisk::kernels::GemmEpilogue::kBiasGeluErf: acc = gelu_erf(acc); break;
        case brisk::kernels::GemmEpilogue::kBiasGeluTanh: acc = gelu_tanh(acc); break;
        case brisk::kernels::GemmEpilogue::kBiasRelu: acc = std::max(acc, 0.0); break;
        case brisk::kernels::GemmEpilogue::kBiasAccumulate: acc += y0[i * n + j]; break;
      }
      y[i * n + j] = acc;
    }
  }
  return y;
}

}  // namespace

TEST_CASE("Linear matches the reference for every epilogue and row count", "[kernels][gemm]") {
  const int64_t n = GENERATE(1, 17, 384);
  const int64_t k = GENERATE(3, 384);
  const bool with_bias = GENERATE(true, false);
  auto w = random_floats(static_cast<size_t>(n * k), -0.2f, 0.2f, 1);
  auto b = with_bias ? random_floats(static_cast<size_t>(n), -1.f, 1.f, 2) : std::vector<float>();
  brisk::Tensor wt = brisk::Tensor::borrow(w.data(), {n, k}, brisk::DType::kF32);
  brisk::Tensor bt = with_bias ? brisk::Tensor::borrow(b.data(), {n}, brisk::DType::kF32) : brisk::Tensor();
  auto fc = brisk::kernels::Linear::create(wt, bt, brisk::Device::kCPU);
  REQUIRE(fc.ok());
  CHECK(fc->in_features() == k);
  CHECK(fc->out_features() == n);
  for (int64_t m : {1, 5, 16, 128, 257}) {
    auto x = random_floats(static_cast<size_t>(m * k), -1.f, 1.f, static_cast<uint32_t>(m));
    for (brisk::kernels::GemmEpilogue e : {GemmEpilogue::kBias, GemmEpilogue::kBiasGeluErf, GemmEpilogue::kBiasGeluTanh,
                                           GemmEpilogue::kBiasRelu, GemmEpilogue::kBiasAccumulate}) {
      auto y = random_floats(static_cast<size_t>(m * n), -1.f, 1.f, 99);
      const auto want = reference(x, w, b, y, m, n, k, e);
      REQUIRE(fc->forward(x.data(), m, y.data(), e).ok());
      INFO("m=" << m << " n=" << n << " k=" << k << " epilogue=" << static_cast<int>(e));
      CHECK_CLOSE(y, want, 1e-4, 1e-4);
    }
  }
}

TEST_CASE("Linear rejects bad weights and arguments", "[kernels][gemm]") {
  std::vector<float> w(12), b(3);
  std::vector<int32_t> wi(12);
  auto bad_dtype = brisk::kernels::Linear::create(brisk::Tensor::borrow(wi.data(), {3, 4}, brisk::DType::kI32), {},
                                                  brisk::Device::kCPU);
  REQUIRE_FALSE(bad_dtype.ok());
  CHECK(bad_dtype.status().message().find("i32") != std::string::npos);
  auto bad_rank = brisk::kernels::Linear::create(brisk::Tensor::borrow(w.data(), {12}, brisk::DType::kF32), {},
                                                 brisk::Device::kCPU);
  CHECK_FALSE(bad_rank.ok());
  auto bad_bias =
      brisk::kernels::Linear::create(brisk::Tensor::borrow(w.data(), {3, 4}, brisk::DType::kF32),
                                     brisk::Tensor::borrow(b.data(), {2}, brisk::DType::kF32), brisk::Device::kCPU);
  REQUIRE_FALSE(bad_bias.ok());
  CHECK(bad_bias.status().message().find("bias") != std::string::npos);
  auto fc = brisk::kernels::Linear::create(brisk::Tensor::borrow(w.data(), {3, 4}, brisk::DType::kF32), {},
                                           brisk::Device::kCPU);
  REQUIRE(fc.ok());
  std::vector<float> y(3);
  const auto message = [](const brisk::Status& s) { return std::string(s.message()); };
  CHECK(message(fc->forward(static_cast<const float*>(nullptr), 1, y.data(), brisk::kernels::GemmEpilogue::kBias)) ==
        "Linear::forward got a null x; expected the input rows");
  CHECK(message(fc->forward(w.data(), 1, static_cast<float*>(nullptr), brisk::kernels::GemmEpilogue::kBias)) ==
        "Linear::forward got a null y; expected the output rows");
  CHECK(message(fc->forward(w.data(), -1, y.data(), brisk::kernels::GemmEpilogue::kBias)) ==
        "Linear::forward rows is -1; expected >= 0");
  CHECK(fc->forward(w.data(), 0, static_cast<float*>(nullptr), brisk::kernels::GemmEpilogue::kBias)
            .ok());  // nothing to do
  CHECK_FALSE(brisk::kernels::Linear().forward(w.data(), 1, y.data(), brisk::kernels::GemmEpilogue::kBias).ok());
}

TEST_CASE("one Linear is safe to use from several threads", "[kernels][gemm]") {
  const int64_t n = 96, k = 64, m = 33;
  auto w = random_floats(static_cast<size_t>(n * k), -0.2f, 0.2f, 5);
  auto fc = brisk::kernels::Linear::create(brisk::Tensor::borrow(w.data(), {n, k}, brisk::DType::kF32), {},
                                           brisk::Device::kCPU);
  REQUIRE(fc.ok());
  auto x = random_floats(static_cast<size_t>(m * k), -1.f, 1.f, 6);
  std::vector<float> expected(static_cast<size_t>(m * n));
  REQUIRE(fc->forward(x.data(), m, expected.data(), brisk::kernels::GemmEpilogue::kBiasGeluErf).ok());
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<float> y(expected.size());
      for (int i = 0; i < 50; ++i) {
        if (!fc->forward(x.data(), m, y.data(), brisk::kernels::GemmEpilogue::kBiasGeluErf).ok() || y != expected) {
          mismatches.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(mismatches.load() == 0);
}
