// The CUDA fused kernels through the public ops (Device::kCUDA) against the CPU ops (Device::kCPU, float) on random
// data, for float, float16_t and bfloat16_t. Without a CUDA device every test case passes with a warning.
//
// Tolerances. Each input is rounded to T once on the host and the CPU reference gets exactly those rounded values,
// so the two sides differ only by (a) fp32 arithmetic done in another order (and CUDA's expf/erff/tanhf against
// the CPU's vectorised forms, each within ~1e-6 relative or absolute) and (b) the one rounding of a T output.
// (b) is at most u_T |want| with round-to-nearest (u = 2^-11 for fp16, 2^-8 for bf16, 2^-24 for fp32); we allow
// 2 u_T |want| (the GPU's fp32 value is itself off by (a) before it is rounded) plus kF32Rel |want| for (a), plus an
// absolute floor per op for results near zero whose error is set by larger intermediate values (LayerNorm's mean,
// the sum of a softmax row).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "brisk/core/allocator.h"
#include "brisk/core/half.h"
#include "brisk/kernels/copy.h"
#include "brisk/kernels/embedding.h"
#include "brisk/kernels/gelu.h"
#include "brisk/kernels/layernorm.h"
#include "brisk/kernels/pooling.h"
#include "brisk/kernels/quantize.h"
#include "brisk/kernels/softmax.h"
#include "brisk/kernels/vector_math.h"
#include "kernels/kernel_test_util.h"

namespace brisk::kernels {
namespace {

using testing::random_floats;

#define REQUIRE_OK(expr)               \
  do {                                 \
    const ::brisk::Status s_ = (expr); \
    INFO(s_.ToString());               \
    REQUIRE(s_.ok());                  \
  } while (0)

constexpr double kF32Rel = 1e-6;

template <typename T>
constexpr double unit_roundoff() {
  if constexpr (std::is_same_v<T, float16_t>) return 0x1p-11;
  if constexpr (std::is_same_v<T, bfloat16_t>) return 0x1p-8;
  return 0x1p-24;
}

template <typename T>
T to_type(float v) {
  if constexpr (std::is_same_v<T, float16_t>) return float16_t{float_to_f16(v)};
  if constexpr (std::is_same_v<T, bfloat16_t>) return bfloat16_t{float_to_bf16(v)};
  if constexpr (std::is_same_v<T, float>) return v;
}

inline float value_of(float v) { return v; }
inline float value_of(float16_t v) { return f16_to_float(v.bits); }
inline float value_of(bfloat16_t v) { return bf16_to_float(v.bits); }

// Inputs rounded to T: the T elements for the device and their exact float values for the CPU reference.
template <typename T>
struct Rounded {
  std::vector<T> typed;
  std::vector<float> values;
};

template <typename T>
Rounded<T> rounded(const std::vector<float>& v) {
  Rounded<T> r;
  r.typed.reserve(v.size());
  r.values.reserve(v.size());
  for (const float x : v) {
    r.typed.push_back(to_type<T>(x));
    r.values.push_back(value_of(r.typed.back()));
  }
  return r;
}

template <typename T>
std::vector<float> values_of(const std::vector<T>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = value_of(v[i]);
  return out;
}

std::vector<double> as_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// T outputs against a float reference: 2 u_T + kF32Rel relative, plus abs.
template <typename T>
void check_typed(const std::vector<T>& got, const std::vector<float>& want, double abs_tol, double f32_rel = kF32Rel) {
  CHECK_CLOSE(values_of(got), as_double(want), abs_tol, 2.0 * unit_roundoff<T>() + f32_rel);
}

// A device array of n elements from brisk's CUDA allocator; `offset` elements in (to misalign it on purpose).
template <typename E>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n, size_t offset = 0) : n_(n), offset_(offset) {
    StatusOr<void*> p = allocate(Device::kCUDA, std::max<size_t>(n + offset, 1) * sizeof(E));
    REQUIRE(p.ok());
    base_ = static_cast<E*>(*p);
  }
  DeviceArray(const std::vector<E>& host, size_t offset = 0) : DeviceArray(host.size(), offset) { upload(host); }
  ~DeviceArray() { deallocate(Device::kCUDA, base_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  E* get() const { return base_ + offset_; }
  void upload(const std::vector<E>& host) {
    REQUIRE(host.size() == n_);
    REQUIRE_OK(copy_bytes(Device::kCUDA, get(), Device::kCPU, host.data(), n_ * sizeof(E)));
    REQUIRE_OK(synchronize(Device::kCUDA));
  }
  std::vector<E> download() const {
    std::vector<E> host(n_);
    REQUIRE_OK(synchronize(Device::kCUDA));  // the kernels that wrote it, and any fault they had
    REQUIRE_OK(copy_bytes(Device::kCPU, host.data(), Device::kCUDA, get(), n_ * sizeof(E)));
    REQUIRE_OK(synchronize(Device::kCUDA));
    return host;
  }

 private:
  size_t n_;
  size_t offset_;
  E* base_ = nullptr;
};

size_t sz(int64_t v) { return static_cast<size_t>(v); }

// ---------------------------------------------------------------------------------------------------------------
// LayerNorm

// LayerNorm of rows with |mean| ~ 10 and stddev ~ 0.6: an fp32 rounding of the mean is ~1e-6, which the
// normalisation divides by the stddev and gamma (<= 1.5) scales.
constexpr double kLayerNormAbs = 2e-5;

TEMPLATE_TEST_CASE("cuda layer_norm_bias_residual matches the CPU op", "[cuda]", float, float16_t, bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  // 384/1024: a warp per row; 4096: a block per row; 20000: streaming; 383: the scalar path.
  for (const int64_t cols : {384, 383, 1024, 4096, 20000}) {
    const int64_t rows = cols > 4096 ? 3 : 37;
    const auto x = rounded<T>(random_floats(sz(rows * cols), -1.0f, 1.0f, 1));
    const auto residual = rounded<T>(random_floats(sz(rows * cols), 9.0f, 11.0f, 2));
    const auto bias = rounded<T>(random_floats(sz(cols), -0.5f, 0.5f, 3));
    const auto gamma = rounded<T>(random_floats(sz(cols), 0.5f, 1.5f, 4));
    const auto beta = rounded<T>(random_floats(sz(cols), -0.5f, 0.5f, 5));
    DeviceArray<T> d_x(x.typed), d_res(residual.typed), d_bias(bias.typed), d_gamma(gamma.typed), d_beta(beta.typed);
    for (const bool with_bias : {true, false}) {
      for (const bool with_residual : {true, false}) {
        INFO("cols " << cols << " bias " << with_bias << " residual " << with_residual);
        std::vector<float> want(sz(rows * cols));
        REQUIRE_OK(layer_norm_bias_residual(Device::kCPU, x.values.data(), with_bias ? bias.values.data() : nullptr,
                                            with_residual ? residual.values.data() : nullptr, gamma.values.data(),
                                            beta.values.data(), 1e-12f, want.data(), rows, cols));
        DeviceArray<T> d_out(sz(rows * cols));
        REQUIRE_OK(layer_norm_bias_residual(Device::kCUDA, d_x.get(), with_bias ? d_bias.get() : nullptr,
                                            with_residual ? d_res.get() : nullptr, d_gamma.get(), d_beta.get(), 1e-12f,
                                            d_out.get(), rows, cols));
        check_typed(d_out.download(), want, kLayerNormAbs);
      }
    }
  }
}

TEMPLATE_TEST_CASE("cuda layer_norm_bias_residual in place on x or on the residual, and on misaligned rows", "[cuda]",
                   float, float16_t, bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  for (const int64_t cols : {384, 4096, 20000}) {
    const int64_t rows = 5;
    const auto x = rounded<T>(random_floats(sz(rows * cols), -1.0f, 1.0f, 11));
    const auto residual = rounded<T>(random_floats(sz(rows * cols), -3.0f, 3.0f, 12));
    const auto bias = rounded<T>(random_floats(sz(cols), -0.5f, 0.5f, 13));
    const auto gamma = rounded<T>(random_floats(sz(cols), 0.5f, 1.5f, 14));
    const auto beta = rounded<T>(random_floats(sz(cols), -0.5f, 0.5f, 15));
    std::vector<float> want(sz(rows * cols));
    REQUIRE_OK(layer_norm_bias_residual(Device::kCPU, x.values.data(), bias.values.data(), residual.values.data(),
                                        gamma.values.data(), beta.values.data(), 1e-12f, want.data(), rows, cols));
    DeviceArray<T> d_bias(bias.typed), d_gamma(gamma.typed), d_beta(beta.typed);
    for (const size_t offset : {size_t{0}, size_t{1}}) {  // offset 1: every pointer misaligned -> scalar path
      INFO("cols " << cols << " offset " << offset);
      DeviceArray<T> d_x(x.typed, offset), d_res(residual.typed, offset);
      // out == residual
      REQUIRE_OK(layer_norm_bias_residual(Device::kCUDA, d_x.get(), d_bias.get(), d_res.get(), d_gamma.get(),
                                          d_beta.get(), 1e-12f, d_res.get(), rows, cols));
      check_typed(d_res.download(), want, kLayerNormAbs);
      // out == x
      d_res.upload(residual.typed);
      REQUIRE_OK(layer_norm_bias_residual(Device::kCUDA, d_x.get(), d_bias.get(), d_res.get(), d_gamma.get(),
                                          d_beta.get(), 1e-12f, d_x.get(), rows, cols));
      check_typed(d_x.download(), want, kLayerNormAbs);
    }
  }
}

TEMPLATE_TEST_CASE("cuda layer_norm_bias_residual_quantize writes the CPU's LayerNorm and its int8 rows", "[cuda]",
                   float, float16_t, bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  for (const int64_t cols : {384, 383, 4096, 20000}) {
    const int64_t rows = cols > 4096 ? 3 : 29;
    const auto x = rounded<T>(random_floats(sz(rows * cols), -1.0f, 1.0f, 21));
    const auto residual = rounded<T>(random_floats(sz(rows * cols), -4.0f, 4.0f, 22));
    const auto bias = rounded<T>(random_floats(sz(cols), -0.5f, 0.5f, 23));
    const auto gamma = rounded<T>(random_floats(sz(cols), 0.5f, 1.5f, 24));
    const auto beta = rounded<T>(random_floats(sz(cols), -0.5f, 0.5f, 25));
    INFO("cols " << cols);
    std::vector<float> want(sz(rows * cols)), want_scales(sz(rows));
    std::vector<int8_t> want_q(sz(rows * cols));
    REQUIRE_OK(layer_norm_bias_residual_quantize(Device::kCPU, x.values.data(), bias.values.data(),
                                                 residual.values.data(), gamma.values.data(), beta.values.data(),
                                                 1e-12f, want.data(), want_q.data(), want_scales.data(), rows, cols));
    DeviceArray<T> d_x(x.typed), d_res(residual.typed), d_bias(bias.typed), d_gamma(gamma.typed), d_beta(beta.typed);
    DeviceArray<T> d_out(sz(rows * cols));
    DeviceArray<int8_t> d_q(sz(rows * cols));
    DeviceArray<float> d_scales(sz(rows));
    REQUIRE_OK(layer_norm_bias_residual_quantize(Device::kCUDA, d_x.get(), d_bias.get(), d_res.get(), d_gamma.get(),
                                                 d_beta.get(), 1e-12f, d_out.get(), d_q.get(), d_scales.get(), rows,
                                                 cols));
    check_typed(d_out.download(), want, kLayerNormAbs);
    // The scale is max|out| / 127 of the rounded T outputs: within the output's tolerance of the CPU's.
    CHECK_CLOSE(d_scales.download(), as_double(want_scales), 0.0, 2.0 * unit_roundoff<T>() + 1e-5);
    // q is round(out / scale) of slightly different out and scale: at most one step apart.
    const std::vector<int8_t> q = d_q.download();
    int worst = 0;
    for (size_t i = 0; i < q.size(); ++i) worst = std::max(worst, std::abs(int{q[i]} - int{want_q[i]}));
    CHECK(worst <= 1);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// GeLU

TEMPLATE_TEST_CASE("cuda bias_gelu matches the CPU op in both forms", "[cuda]", float, float16_t, bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  for (const int64_t cols : {1536, 100, 4096, 37}) {
    const int64_t rows = 33;
    const auto x = rounded<T>(random_floats(sz(rows * cols), -6.0f, 6.0f, 31));
    const auto bias = rounded<T>(random_floats(sz(cols), -1.0f, 1.0f, 32));
    DeviceArray<T> d_bias(bias.typed);
    for (const GeluApproximation approx : {GeluApproximation::kErf, GeluApproximation::kTanh}) {
      for (const bool with_bias : {true, false}) {
        INFO("cols " << cols << " tanh " << (approx == GeluApproximation::kTanh) << " bias " << with_bias);
        std::vector<float> want = x.values;
        REQUIRE_OK(bias_gelu(Device::kCPU, want.data(), with_bias ? bias.values.data() : nullptr, rows, cols, approx));
        DeviceArray<T> d_x(x.typed);
        REQUIRE_OK(bias_gelu(Device::kCUDA, d_x.get(), with_bias ? d_bias.get() : nullptr, rows, cols, approx));
        // The CPU's erf is within 1e-6 absolute; gelu ~ x near the top of the range.
        check_typed(d_x.download(), want, 1e-5);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Softmax

// Weights are <= 1; the sum of a row is >= 1, so fp32 errors stay ~1e-6 absolute.
constexpr double kSoftmaxAbs = 2e-6;

TEMPLATE_TEST_CASE("cuda masked_softmax matches the CPU op for every valid_cols edge", "[cuda]", float, float16_t,
                   bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  // 128: a warp; 77: scalar; 2000: a block; 20000: streaming.
  for (const int64_t cols : {128, 77, 2000, 20000}) {
    const int64_t rows = cols > 2000 ? 3 : 21;
    for (const int64_t valid : {cols, cols / 2, int64_t{1}, int64_t{0}, cols + 5}) {
      INFO("cols " << cols << " valid " << valid);
      const auto x = rounded<T>(random_floats(sz(rows * cols), -8.0f, 8.0f, 41));
      std::vector<float> want = x.values;
      REQUIRE_OK(masked_softmax(Device::kCPU, want.data(), rows, cols, valid, 0.125f));
      DeviceArray<T> d_x(x.typed);
      REQUIRE_OK(masked_softmax(Device::kCUDA, d_x.get(), rows, cols, valid, 0.125f));
      check_typed(d_x.download(), want, kSoftmaxAbs);
    }
  }
}

TEMPLATE_TEST_CASE("cuda masked_softmax_strided leaves the columns cols..ld-1 alone, and an all -inf row gives zeros",
                   "[cuda]", float, float16_t, bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  for (const int64_t cols : {64, 61, 3000}) {
    for (const int64_t pad : {8, 3}) {
      const int64_t ld = cols + pad;
      const int64_t rows = 9;
      INFO("cols " << cols << " ld " << ld);
      std::vector<float> host = random_floats(sz(rows * ld), -8.0f, 8.0f, 51);
      for (int64_t c = 0; c < cols; ++c) host[sz(2 * ld + c)] = -std::numeric_limits<float>::infinity();
      const auto x = rounded<T>(host);
      std::vector<float> want = x.values;
      REQUIRE_OK(masked_softmax_strided(Device::kCPU, want.data(), rows, cols, ld, cols - 1, 0.125f));
      DeviceArray<T> d_x(x.typed);
      REQUIRE_OK(masked_softmax_strided(Device::kCUDA, d_x.get(), rows, cols, ld, cols - 1, 0.125f));
      const std::vector<T> got = d_x.download();
      check_typed(got, want, kSoftmaxAbs);
      for (int64_t c = 0; c < cols; ++c) CHECK(value_of(got[sz(2 * ld + c)]) == 0.0f);
      bool untouched = true;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = cols; c < ld; ++c) {
          if (std::memcmp(&got[sz(r * ld + c)], &x.typed[sz(r * ld + c)], sizeof(T)) != 0) untouched = false;
        }
      }
      CHECK(untouched);
    }
  }
}

TEMPLATE_TEST_CASE("cuda masked_softmax_batched masks each group with its own length", "[cuda]", float, float16_t,
                   bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  const int64_t cols = 64, ld = 72, rows_per_group = 6;
  const std::vector<int32_t> lengths = {64, 1, 0, 30, 100, -2, 63};
  const int64_t batch = static_cast<int64_t>(lengths.size());
  const int64_t rows = batch * rows_per_group;
  const auto x = rounded<T>(random_floats(sz(rows * ld), -8.0f, 8.0f, 61));
  std::vector<float> want = x.values;
  REQUIRE_OK(
      masked_softmax_batched(Device::kCPU, want.data(), batch, rows_per_group, cols, ld, lengths.data(), 0.125f));
  DeviceArray<T> d_x(x.typed);
  DeviceArray<int32_t> d_lengths(lengths);
  REQUIRE_OK(
      masked_softmax_batched(Device::kCUDA, d_x.get(), batch, rows_per_group, cols, ld, d_lengths.get(), 0.125f));
  check_typed(d_x.download(), want, kSoftmaxAbs);
}

// ---------------------------------------------------------------------------------------------------------------
// Embedding

TEMPLATE_TEST_CASE("cuda embed_layer_norm matches the CPU op with and without the optional tables", "[cuda]", float,
                   float16_t, bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  const int64_t vocab = 50, max_positions = 40, type_vocab = 2, rows = 37;
  for (const int64_t hidden : {384, 100, 2048}) {
    const auto word = rounded<T>(random_floats(sz(vocab * hidden), -1.0f, 1.0f, 71));
    const auto position = rounded<T>(random_floats(sz(max_positions * hidden), -0.5f, 0.5f, 72));
    const auto token_type = rounded<T>(random_floats(sz(type_vocab * hidden), -0.2f, 0.2f, 73));
    const auto gamma = rounded<T>(random_floats(sz(hidden), 0.5f, 1.5f, 74));
    const auto beta = rounded<T>(random_floats(sz(hidden), -0.5f, 0.5f, 75));
    std::mt19937 rng(76);
    std::vector<int32_t> ids(sz(rows)), type_ids(sz(rows)), positions(sz(rows));
    for (int64_t r = 0; r < rows; ++r) {
      ids[sz(r)] = static_cast<int32_t>(rng() % vocab);
      type_ids[sz(r)] = static_cast<int32_t>(rng() % type_vocab);
      positions[sz(r)] = static_cast<int32_t>(r % max_positions);
    }
    DeviceArray<T> d_word(word.typed), d_position(position.typed), d_type(token_type.typed), d_gamma(gamma.typed),
        d_beta(beta.typed);
    DeviceArray<int32_t> d_ids(ids), d_type_ids(type_ids), d_positions(positions);
    for (const int variant : {0, 1, 2, 3}) {  // full; no type_ids; no token_type table; no word table (out holds it)
      INFO("hidden " << hidden << " variant " << variant);
      const bool no_type_ids = variant == 1, no_types = variant == 2, no_word = variant == 3;
      EmbeddingTables<float> cpu{no_word ? nullptr : word.values.data(),
                                 position.values.data(),
                                 no_types ? nullptr : token_type.values.data(),
                                 gamma.values.data(),
                                 beta.values.data(),
                                 hidden};
      EmbeddingTables<T> gpu{no_word ? nullptr : d_word.get(),
                             d_position.get(),
                             no_types ? nullptr : d_type.get(),
                             d_gamma.get(),
                             d_beta.get(),
                             hidden};
      std::vector<float> want(sz(rows * hidden));
      std::vector<T> out_init(sz(rows * hidden), to_type<T>(0.0f));
      if (no_word) {
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < hidden; ++c) {
            want[sz(r * hidden + c)] = word.values[sz(ids[sz(r)] * hidden + c)];
            out_init[sz(r * hidden + c)] = word.typed[sz(ids[sz(r)] * hidden + c)];
          }
        }
      }
      REQUIRE_OK(embed_layer_norm(Device::kCPU, cpu, ids.data(), no_type_ids ? nullptr : type_ids.data(),
                                  positions.data(), 1e-12f, want.data(), rows));
      DeviceArray<T> d_out(out_init);
      REQUIRE_OK(embed_layer_norm(Device::kCUDA, gpu, d_ids.get(), no_type_ids ? nullptr : d_type_ids.get(),
                                  d_positions.get(), 1e-12f, d_out.get(), rows));
      check_typed(d_out.download(), want, kLayerNormAbs);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Pooling: fp32 outputs of identical inputs; only the summation order differs.

constexpr double kPoolAbs = 1e-5;
constexpr double kPoolRel = 1e-5;

TEMPLATE_TEST_CASE("cuda mean_pool and cls_pool match the CPU ops", "[cuda]", float, float16_t, bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  const int64_t seq = 19;
  const std::vector<int32_t> lengths = {19, 1, 0, 7, 25, -3, 12};
  const int64_t batch = static_cast<int64_t>(lengths.size());
  for (const int64_t dim : {384, 100, 2050}) {
    INFO("dim " << dim);
    const auto hidden = rounded<T>(random_floats(sz(batch * seq * dim), -2.0f, 2.0f, 81));
    DeviceArray<T> d_hidden(hidden.typed);
    DeviceArray<int32_t> d_lengths(lengths);
    DeviceArray<float> d_out(sz(batch * dim));
    std::vector<float> want(sz(batch * dim));
    for (const bool with_lengths : {true, false}) {
      REQUIRE_OK(mean_pool(Device::kCPU, hidden.values.data(), with_lengths ? lengths.data() : nullptr, batch, seq, dim,
                           want.data()));
      REQUIRE_OK(mean_pool(Device::kCUDA, d_hidden.get(), with_lengths ? d_lengths.get() : nullptr, batch, seq, dim,
                           d_out.get()));
      CHECK_CLOSE(d_out.download(), as_double(want), kPoolAbs, kPoolRel);
    }
    REQUIRE_OK(cls_pool(Device::kCPU, hidden.values.data(), batch, seq, dim, want.data()));
    REQUIRE_OK(cls_pool(Device::kCUDA, d_hidden.get(), batch, seq, dim, d_out.get()));
    CHECK_CLOSE(d_out.download(), as_double(want), 0.0, 0.0);
  }
}

TEMPLATE_TEST_CASE("cuda pool_sequences pools packed sequences and normalises them", "[cuda]", float, float16_t,
                   bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  const std::vector<int32_t> lengths = {5, 1, 0, 17, 9};
  std::vector<int32_t> starts;
  int32_t rows = 0;
  for (const int32_t len : lengths) {
    starts.push_back(rows);
    rows += len;
  }
  const int64_t batch = static_cast<int64_t>(lengths.size());
  for (const int64_t dim : {384, 101}) {
    const auto hidden = rounded<T>(random_floats(sz(rows * dim), -2.0f, 2.0f, 91));
    DeviceArray<T> d_hidden(hidden.typed);
    DeviceArray<int32_t> d_starts(starts), d_lengths(lengths);
    DeviceArray<float> d_out(sz(batch * dim));
    for (const SequencePooling mode : {SequencePooling::kMean, SequencePooling::kCls}) {
      for (const bool normalize : {false, true}) {
        INFO("dim " << dim << " cls " << (mode == SequencePooling::kCls) << " normalize " << normalize);
        std::vector<float> want(sz(batch * dim));
        REQUIRE_OK(pool_sequences(Device::kCPU, hidden.values.data(),
                                  SequenceRows{starts.data(), lengths.data(), batch}, dim, mode, normalize,
                                  want.data()));
        REQUIRE_OK(pool_sequences(Device::kCUDA, d_hidden.get(), SequenceRows{d_starts.get(), d_lengths.get(), batch},
                                  dim, mode, normalize, d_out.get()));
        CHECK_CLOSE(d_out.download(), as_double(want), kPoolAbs, kPoolRel);
      }
    }
  }
}

TEST_CASE("cuda l2_normalize matches the CPU op, and a zero row stays zero", "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  // 384: a warp; 5000: a block; 20000: streaming; 383: scalar.
  for (const int64_t cols : {384, 383, 5000, 20000}) {
    const int64_t rows = 6;
    INFO("cols " << cols);
    std::vector<float> x = random_floats(sz(rows * cols), -3.0f, 3.0f, 101);
    std::fill(x.begin() + cols, x.begin() + 2 * cols, 0.0f);
    std::vector<float> want = x;
    REQUIRE_OK(l2_normalize(Device::kCPU, want.data(), rows, cols));
    DeviceArray<float> d_x(x);
    REQUIRE_OK(l2_normalize(Device::kCUDA, d_x.get(), rows, cols));
    CHECK_CLOSE(d_x.download(), as_double(want), 1e-7, 1e-5);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// int8 quantization

TEMPLATE_TEST_CASE("cuda quantize_rows_int8 matches the CPU op, an all-zero row included", "[cuda]", float, float16_t,
                   bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  for (const int64_t cols : {384, 383, 4096, 20000}) {
    const int64_t rows = 7;
    INFO("cols " << cols);
    std::vector<float> host = random_floats(sz(rows * cols), -5.0f, 5.0f, 111);
    std::fill(host.begin() + 2 * cols, host.begin() + 3 * cols, 0.0f);
    const auto x = rounded<T>(host);
    std::vector<int8_t> want_q(sz(rows * cols));
    std::vector<float> want_scales(sz(rows));
    REQUIRE_OK(quantize_rows_int8(Device::kCPU, x.values.data(), rows, cols, want_q.data(), want_scales.data()));
    DeviceArray<T> d_x(x.typed);
    DeviceArray<int8_t> d_q(sz(rows * cols));
    DeviceArray<float> d_scales(sz(rows));
    REQUIRE_OK(quantize_rows_int8(Device::kCUDA, d_x.get(), rows, cols, d_q.get(), d_scales.get()));
    // The same inputs give the same absmax, so the same scale; q = round(x * (1 / scale)) in fp32 on both sides.
    CHECK_CLOSE(d_scales.download(), as_double(want_scales), 0.0, 3e-7);  // a CPU path may divide differently
    const std::vector<int8_t> q = d_q.download();
    int worst = 0;
    for (size_t i = 0; i < q.size(); ++i) worst = std::max(worst, std::abs(int{q[i]} - int{want_q[i]}));
    CHECK(worst <= 1);
    CHECK(d_scales.download()[2] == 1.0f);
  }
}

TEMPLATE_TEST_CASE("cuda dequantize_rows_int8 matches the CPU op for every epilogue", "[cuda]", float, float16_t,
                   bfloat16_t) {
  BRISK_SKIP_WITHOUT_CUDA();
  using T = TestType;
  const int64_t rows = 19;
  for (const int64_t cols : {1536, 37}) {
    std::mt19937 rng(121);
    std::uniform_int_distribution<int32_t> acc_dist(-200000, 200000);
    std::vector<int32_t> acc(sz(rows * cols));
    for (int32_t& a : acc) a = acc_dist(rng);
    const std::vector<float> row_scales = random_floats(sz(rows), 1e-3f, 3e-3f, 122);
    const std::vector<float> col_scales = random_floats(sz(cols), 5e-3f, 1.5e-2f, 123);
    const auto bias = rounded<T>(random_floats(sz(cols), -1.0f, 1.0f, 124));
    DeviceArray<int32_t> d_acc(acc);
    DeviceArray<float> d_row_scales(row_scales), d_col_scales(col_scales);
    DeviceArray<T> d_bias(bias.typed);
    for (const GemmEpilogue epilogue : {GemmEpilogue::kBias, GemmEpilogue::kBiasGeluErf, GemmEpilogue::kBiasGeluTanh,
                                        GemmEpilogue::kBiasRelu, GemmEpilogue::kBiasAccumulate}) {
      for (const int64_t n_col_scales : {cols, int64_t{1}}) {
        for (const bool with_bias : {true, false}) {
          for (const int64_t ldy : {cols, cols + 8}) {
            INFO("cols " << cols << " epilogue " << static_cast<int>(epilogue) << " col scales " << n_col_scales
                         << " bias " << with_bias << " ldy " << ldy);
            const auto y0 = rounded<T>(random_floats(sz(rows * ldy), -2.0f, 2.0f, 125));
            std::vector<float> want = y0.values;
            REQUIRE_OK(dequantize_rows_int8(Device::kCPU, acc.data(), row_scales.data(), col_scales.data(),
                                            n_col_scales, with_bias ? bias.values.data() : nullptr, epilogue,
                                            want.data(), ldy, rows, cols));
            DeviceArray<T> d_y(y0.typed);
            REQUIRE_OK(dequantize_rows_int8(Device::kCUDA, d_acc.get(), d_row_scales.get(), d_col_scales.get(),
                                            n_col_scales, with_bias ? d_bias.get() : nullptr, epilogue, d_y.get(), ldy,
                                            rows, cols));
            // |v| <= ~10; the CPU's erf is within 1e-6 absolute.
            check_typed(d_y.download(), want, 1e-5);
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Conversion and copies

template <typename T>
bool same_value(T a, T b) {
  const float fa = value_of(a), fb = value_of(b);
  if (std::isnan(fa) || std::isnan(fb)) return std::isnan(fa) && std::isnan(fb);
  return std::memcmp(&a, &b, sizeof(T)) == 0;  // bit-exact, signed zeros included
}

// Inputs that exercise rounding: random values over the formats' ranges, ties, subnormals, overflow, inf, NaN.
std::vector<float> conversion_inputs(size_t n) {
  std::vector<float> v = random_floats(n, -70000.0f, 70000.0f, 131);
  const std::vector<float> small = random_floats(n / 4, -1e-4f, 1e-4f, 132);
  std::copy(small.begin(), small.end(), v.begin());
  const float specials[] = {
      0.0f,     -0.0f,           1.0f,   1.0f + 0x1p-11f, 1.0f + 0x1p-8f, 65504.0f, 65520.0f,  70000.0f, 0x1p-24f,
      0x1p-25f, 3.0f * 0x1p-26f, 1e-45f, -1e-40f,         3.4e38f,        INFINITY, -INFINITY, NAN,      -NAN};
  const size_t count = std::min(std::size(specials), n - n / 2);
  std::copy(std::begin(specials), std::begin(specials) + count, v.begin() + static_cast<std::ptrdiff_t>(n / 2));
  return v;
}

template <typename From, typename To>
void check_convert(const std::vector<From>& in, size_t offset) {
  std::vector<To> want(in.size());
  for (size_t i = 0; i < in.size(); ++i) want[i] = to_type<To>(value_of(in[i]));
  DeviceArray<From> d_in(in, offset);
  DeviceArray<To> d_out(in.size(), offset);
  REQUIRE_OK(convert(Device::kCUDA, d_in.get(), d_out.get(), static_cast<int64_t>(in.size())));
  const std::vector<To> got = d_out.download();
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += same_value(got[i], want[i]) ? 0 : 1;
  CHECK(bad == 0);
}

TEST_CASE("cuda convert rounds to nearest even exactly as the host conversions do", "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  for (const size_t n : {size_t{100003}, size_t{4096}, size_t{7}}) {
    for (const size_t offset : {size_t{0}, size_t{1}}) {
      INFO("n " << n << " offset " << offset);
      const std::vector<float> f = conversion_inputs(n);
      std::vector<float16_t> h(n);
      std::vector<bfloat16_t> b(n);
      for (size_t i = 0; i < n; ++i) {
        h[i] = to_type<float16_t>(f[i]);
        b[i] = to_type<bfloat16_t>(f[i]);
      }
      check_convert<float, float16_t>(f, offset);
      check_convert<float, bfloat16_t>(f, offset);
      check_convert<float16_t, float>(h, offset);
      check_convert<bfloat16_t, float>(b, offset);
      check_convert<float16_t, bfloat16_t>(h, offset);
      check_convert<bfloat16_t, float16_t>(b, offset);
    }
  }
}

TEST_CASE("cuda copy_bytes moves bytes host to device, device to device and back", "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const size_t n = (size_t{1} << 20) + 3;
  std::vector<uint8_t> host(n);
  std::mt19937 rng(141);
  for (uint8_t& v : host) v = static_cast<uint8_t>(rng());
  DeviceArray<uint8_t> a(host);
  DeviceArray<uint8_t> b(n, 1);
  REQUIRE_OK(copy_bytes(Device::kCUDA, b.get(), Device::kCUDA, a.get(), n));
  CHECK(b.download() == host);
  REQUIRE_OK(copy_bytes(Device::kCUDA, b.get(), Device::kCPU, host.data(), 0));  // zero bytes: nothing
  REQUIRE_OK(synchronize(Device::kCUDA));
}

// ---------------------------------------------------------------------------------------------------------------
// Element-wise transcendental functions: CUDA's expf, erff, tanhf (<= 2 ulp) against double.

TEST_CASE("cuda vector_exp, vector_erf and vector_tanh match the double functions", "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const int64_t n = 100003;  // odd: the element-wise tail
  struct Case {
    const char* name;
    Status (*op)(Device, const float*, float*, int64_t);
    double (*ref)(double);
    float lo, hi;
  };
  const Case cases[] = {{"exp", &vector_exp, [](double v) { return std::exp(v); }, -87.0f, 88.0f},
                        {"erf", &vector_erf, [](double v) { return std::erf(v); }, -6.0f, 6.0f},
                        {"tanh", &vector_tanh, [](double v) { return std::tanh(v); }, -10.0f, 10.0f}};
  for (const Case& c : cases) {
    INFO(c.name);
    const std::vector<float> x = random_floats(sz(n), c.lo, c.hi, 151);
    std::vector<double> want(sz(n));
    for (int64_t i = 0; i < n; ++i) want[sz(i)] = c.ref(x[sz(i)]);
    DeviceArray<float> d_x(x), d_out(sz(n));
    REQUIRE_OK(c.op(Device::kCUDA, d_x.get(), d_out.get(), n));
    CHECK_CLOSE(d_out.download(), want, 1e-7, 1e-6);
    REQUIRE_OK(c.op(Device::kCUDA, d_x.get(), d_x.get(), n));  // in place
    CHECK_CLOSE(d_x.download(), want, 1e-7, 1e-6);
  }
}

}  // namespace
}  // namespace brisk::kernels
