// Reproducible arithmetic's f32 kernels (brisk/core/internal/reproducible.h): the fixed-order GEMM against a
// reference computed here from its definition (gemm_fixed_order.h) with every rounding spelled out, bit for bit, at
// each ISA level and thread count; the Linear it backs; and self_attention under the scope. A bit-for-bit check is
// the point: this arithmetic must give the same file on every CPU.
#include <cmath>
#include <cstring>
#include <vector>

#include "brisk/core/half.h"
#include "brisk/core/internal/reproducible.h"
#include "brisk/core/parallel.h"
#include "brisk/kernels/linear.h"
#include "kernel_test_util.h"
#include "kernels/cpu/gemm_fixed_order.h"

namespace brisk::kernels {
namespace {

using testing::random_floats;

// float a + b and a * b, each rounded once: computed in double (exact for a product of two floats; a sum of two
// floats rounded to double and then to float is the float sum, since double has more than 2 * 24 + 2 bits), so that
// no compiler flag can fuse them.
float add(float a, float b) { return static_cast<float>(static_cast<double>(a) + static_cast<double>(b)); }
float mul(float a, float b) { return static_cast<float>(static_cast<double>(a) * static_cast<double>(b)); }

// gemm_fixed_order.h's definition, element by element.
std::vector<float> reference(const cpu::FixedOrderGemmArgs& g, int64_t m, std::vector<float> c) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      float s = 0.0f;
      for (int64_t p = 0; p < g.k; ++p) s = add(s, mul(g.a[i * g.lda + p], g.b[p * g.ldb + j]));
      if (g.bias != nullptr) s = add(s, g.bias[j]);
      float& out = c[static_cast<size_t>(i * g.ldc + j)];
      out = g.accumulate ? add(out, s) : s;
    }
  }
  return c;
}

// Values over many binades, so that the order of the additions shows in the last bits.
std::vector<float> spread(size_t n, uint32_t seed) {
  std::vector<float> v = random_floats(n, -1.0f, 1.0f, seed);
  for (size_t i = 0; i < n; ++i) v[i] *= std::ldexp(1.0f, static_cast<int>((i * 7 + seed) % 13) - 6);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("fixed-order GEMM gives its definition's bits at every level and thread count", "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t m = GENERATE(1, 3, 4, 5, 9, 17);
  const int64_t n = GENERATE(1, 7, 8, 15, 16, 17, 31, 32, 33, 64, 100);
  const int64_t k = GENERATE(0, 1, 5, 37, 384);
  const bool bias = GENERATE(false, true), accumulate = GENERATE(false, true);
  const int64_t lda = k + 3, ldb = n + 5, ldc = n + 2;
  const auto a = spread(static_cast<size_t>(m * lda), 1), b = spread(static_cast<size_t>(k * ldb + 1), 2);
  const auto bias_values = spread(static_cast<size_t>(n), 3), c0 = spread(static_cast<size_t>(m * ldc), 4);
  const cpu::FixedOrderGemmArgs shape{a.data(),   lda,     b.data(), ldb, bias ? bias_values.data() : nullptr,
                                      accumulate, nullptr, ldc,      n,   k};
  const std::vector<float> want = reference(shape, m, c0);
  for (int threads : {1, 2, 3}) {
    INFO("m " << m << " n " << n << " k " << k << " bias " << bias << " accumulate " << accumulate << " threads "
              << threads);
    const ScopedNumThreads scoped(threads);
    std::vector<float> c = c0;
    cpu::FixedOrderGemmArgs g = shape;
    g.c = c.data();
    cpu::gemm_fixed_order(g, m);
    CHECK(same_bits(c, want));
  }
}

TEST_CASE(
    "a Linear made under reproducible arithmetic runs the fixed-order GEMM: the scalar level's bits at every "
    "level",
    "[kernels][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t rows = 13, n = 40, k = 72;
  const DType dtype = GENERATE(DType::kF32, DType::kBF16);
  // The weights, and the f32 values they stand for.
  Tensor w = Tensor::empty({n, k}, dtype).value();
  auto wv = random_floats(static_cast<size_t>(n * k), -0.5f, 0.5f, 5);
  for (size_t i = 0; i < wv.size(); ++i) {
    if (dtype == DType::kBF16) {
      static_cast<uint16_t*>(w.raw_data())[i] = float_to_bf16(wv[i]);
      wv[i] = bf16_to_float(float_to_bf16(wv[i]));
    } else {
      w.data<float>()[i] = wv[i];
    }
  }
  Tensor bias = Tensor::empty({n}, DType::kF32).value();
  const auto bv = random_floats(static_cast<size_t>(n), -0.5f, 0.5f, 6);
  std::copy(bv.begin(), bv.end(), bias.data<float>());
  const auto x = random_floats(static_cast<size_t>(rows * k), -2.0f, 2.0f, 7);
  const auto residual = random_floats(static_cast<size_t>(rows * n), -1.0f, 1.0f, 8);

  // Every epilogue at `level`, one output each.
  auto run = [&](CpuIsa level) {
    testing::IsaCapGuard cap(level);
    const internal::ReproducibleScope scope;
    const Linear fc = Linear::create(w, bias, Device::kCPU).value();
    CHECK(fc.kernel_name().find("fixed-order f32 GEMM") != std::string::npos);
    std::vector<std::vector<float>> out;
    for (GemmEpilogue e : {GemmEpilogue::kBias, GemmEpilogue::kBiasGeluErf, GemmEpilogue::kBiasGeluTanh,
                           GemmEpilogue::kBiasRelu, GemmEpilogue::kBiasAccumulate}) {
      std::vector<float> y = residual;
      REQUIRE(fc.forward(x.data(), rows, y.data(), e).ok());
      out.push_back(std::move(y));
    }
    return out;
  };
  const auto here = run(isa), scalar = run(CpuIsa::kScalar);
  for (size_t e = 0; e < here.size(); ++e) {
    INFO("epilogue " << e);
    CHECK(same_bits(here[e], scalar[e]));
  }
  // And it is a Linear: y = x · Wᵀ + b against double precision, and the residual added.
  std::vector<double> want(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double s = bv[j];
      for (int64_t p = 0; p < k; ++p) s += double(x[r * k + p]) * wv[j * k + p];
      want[static_cast<size_t>(r * n + j)] = s;
    }
  }
  CHECK_CLOSE(here[0], want, 1e-5, 1e-5);
  for (size_t i = 0; i < want.size(); ++i) want[i] += residual[i];
  CHECK_CLOSE(here[4], want, 1e-5, 1e-5);
}

TEST_CASE("an i8 Linear made under reproducible arithmetic runs the scalar int8 kernel", "[kernels]") {
  Tensor w = Tensor::empty({4, 8}, DType::kI8).value();
  std::fill_n(w.data<int8_t>(), 32, int8_t{3});
  Tensor scale = Tensor::empty({4}, DType::kF32).value();
  std::fill_n(scale.data<float>(), 4, 0.5f);
  const internal::ReproducibleScope scope;
  QuantScales scales;
  scales.weight_scale = scale;
  const Linear fc = Linear::create(w, Tensor(), Device::kCPU, scales).value();
  CHECK(fc.kernel_name() == "scalar reference");
}

}  // namespace brisk::kernels
