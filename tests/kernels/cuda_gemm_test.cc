// The CUDA Linear (cuBLASLt) and self_attention against the CPU ones, through the public API only, for f32, f16 and
// bf16 activations. Every test case skips (with a warning) on a machine without a GPU.
//
// The CPU reference always sees exactly the values the GPU holds: weights, bias and inputs are rounded to the
// activation type T first, and the CPU then computes in fp32. What is left is bounded per element, with u the unit
// roundoff of T (2^-24 f32, 2^-11 f16, 2^-8 bf16) and products of two T values exact in fp32:
//   - both sides accumulate k products in fp32: |err| <= 2 k 2^-24 Σ_p |x_p w_p| (each side within γ_k);
//   - the GPU rounds its output to T once: u |y|;
//   - the erf GeLU runs after the biased result was rounded to T: gelu' <= 1.13, so + 1.13 u |z|;
//   - cuBLASLt's fused tanh GeLU may use a hardware tanh approximation (relative error about 2^-11 on tanh, times
//     |z| / 2): + 2^-10 |z|;
//   - int8 with random activations: each side's per-token quantization is within half a step sx / 2 of x, so the
//     two sides differ by at most sx Σ_p |w_p| (exactly representable integer inputs make that term vanish, and an
//     exactness case uses them).
// The attention bound is derived where it is checked.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "brisk/core/allocator.h"
#include "brisk/core/half.h"
#include "brisk/kernels/attention.h"
#include "brisk/kernels/copy.h"
#include "brisk/kernels/linear.h"
#include "kernel_test_util.h"
#include "kernels/cuda/cuda_kernels.h"

using brisk::Device;
using brisk::DType;
using brisk::Tensor;
using brisk::kernels::GemmEpilogue;
using brisk::kernels::Linear;
using brisk::kernels::QuantScales;
using brisk::testing::random_floats;

namespace {

constexpr brisk::kernels::GemmEpilogue kEpilogues[] = {GemmEpilogue::kBias, GemmEpilogue::kBiasGeluErf,
                                                       GemmEpilogue::kBiasGeluTanh, GemmEpilogue::kBiasRelu,
                                                       GemmEpilogue::kBiasAccumulate};

template <typename T>
constexpr double unit_roundoff() {
  if constexpr (std::is_same_v<T, float>) {
    return 0x1p-24;
  } else if constexpr (std::is_same_v<T, brisk::float16_t>) {
    return 0x1p-11;
  } else {
    return 0x1p-8;
  }
}

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) {
    return DType::kF32;
  } else if constexpr (std::is_same_v<T, brisk::float16_t>) {
    return DType::kF16;
  } else {
    return DType::kBF16;
  }
}

template <typename T>
T to_t(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, brisk::float16_t>) {
    return brisk::float16_t{brisk::float_to_f16(v)};
  } else {
    return brisk::bfloat16_t{brisk::float_to_bf16(v)};
  }
}

template <typename T>
float to_f(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, brisk::float16_t>) {
    return brisk::f16_to_float(v.bits);
  } else {
    return brisk::bf16_to_float(v.bits);
  }
}

// The values as T holds them.
template <typename T>
std::vector<float> rounded(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_f(to_t<T>(v[i]));
  return out;
}

template <typename T>
std::vector<T> as_t(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_t<T>(v[i]);
  return out;
}

// A device array of T from the caching allocator, freed at scope exit.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    auto p = brisk::allocate(Device::kCUDA, std::max<size_t>(n, 1) * sizeof(T));
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    ptr_ = static_cast<T*>(*p);
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  ~DeviceArray() { brisk::deallocate(Device::kCUDA, ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return ptr_; }
  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() == n_);
    if (n_ == 0) return;
    REQUIRE(brisk::kernels::copy_bytes(Device::kCUDA, ptr_, Device::kCPU, host.data(), n_ * sizeof(T)).ok());
    REQUIRE(brisk::kernels::synchronize(Device::kCUDA).ok());
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    REQUIRE(brisk::kernels::copy_bytes(Device::kCPU, host.data(), Device::kCUDA, ptr_, n_ * sizeof(T)).ok());
    const brisk::Status st = brisk::kernels::synchronize(Device::kCUDA);
    INFO(st.ToString());
    REQUIRE(st.ok());
    return host;
  }

 private:
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

template <typename T>
std::vector<float> download_floats(const DeviceArray<T>& d) {
  const std::vector<T> h = d.download();
  std::vector<float> out(h.size());
  for (size_t i = 0; i < h.size(); ++i) out[i] = to_f(h[i]);
  return out;
}

// got[i] against want[i] within tol[i]; reports how many and the first that are not.
void check_within(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& tol) {
  REQUIRE(got.size() == want.size());
  REQUIRE(tol.size() == want.size());
  size_t bad = 0;
  std::string first;
  double worst_ratio = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]);
    worst_ratio = std::max(worst_ratio, err / tol[i]);
    if (!(err <= tol[i])) {
      if (bad++ == 0) {
        first = "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", want " +
                std::to_string(want[i]) + ", tolerance " + std::to_string(tol[i]);
      }
    }
  }
  INFO(bad << " of " << got.size() << " elements out of tolerance (worst error / tolerance " << worst_ratio
           << "); first: " << first);
  CHECK(bad == 0);
}

// The GEMM-side facts the tolerance needs, in double from the values both sides use: z = x·wᵀ + b (before the
// epilogue) and Σ_p |x_p w_p|, both [rows, n].
struct GemmFacts {
  std::vector<double> z;
  std::vector<double> sum_abs;
};

GemmFacts gemm_facts(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                     int64_t rows, int64_t n, int64_t k) {
  GemmFacts f;
  f.z.resize(static_cast<size_t>(rows * n));
  f.sum_abs.resize(f.z.size());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = b.empty() ? 0.0 : b[j];
      double abs_acc = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = double(x[i * k + p]) * w[j * k + p];
        acc += t;
        abs_acc += std::fabs(t);
      }
      f.z[i * n + j] = acc;
      f.sum_abs[i * n + j] = abs_acc;
    }
  }
  return f;
}

// The per-element allowance of the file comment. `quant` is the int8 quantization term (0 without one).
double tolerance(brisk::kernels::GemmEpilogue e, double z, double want, double sum_abs, int64_t k, double u,
                 double quant) {
  const double gemm = 2.0 * static_cast<double>(k) * 0x1p-24 * sum_abs + quant;
  double slope = 1.0;
  double extra = 0.0;
  if (e == GemmEpilogue::kBiasGeluErf) {
    slope = 1.13;
    extra = 1.13 * u * std::fabs(z);
  } else if (e == GemmEpilogue::kBiasGeluTanh) {
    slope = 1.13;
    extra = 0x1p-10 * std::fabs(z);
  }
  // The floor covers the fp32 roundings of the bias and residual additions.
  return slope * gemm + extra + u * std::fabs(want) + 1e-5 + 1e-6 * std::fabs(want);
}

// Runs one GPU forward into a [rows, ldy] buffer whose valid columns start as y0 and whose padding holds a
// sentinel; checks the padding is untouched and returns the valid columns.
template <typename T>
std::vector<float> gpu_forward(const brisk::kernels::Linear& fc, const DeviceArray<T>& dx, int64_t rows,
                               const std::vector<float>& y0, brisk::kernels::GemmEpilogue e, int64_t ldy) {
  const int64_t n = fc.out_features();
  constexpr float kSentinel = 7.0f;
  std::vector<float> host(static_cast<size_t>(rows * ldy), kSentinel);
  for (int64_t i = 0; i < rows; ++i) std::copy_n(&y0[i * n], n, &host[i * ldy]);
  DeviceArray<T> dy(as_t<T>(host));
  const brisk::Status st = fc.forward(dx.get(), rows, dy.get(), e, ldy == n ? 0 : ldy);
  INFO(st.ToString());
  REQUIRE(st.ok());
  const std::vector<float> got = download_floats(dy);
  std::vector<float> valid(static_cast<size_t>(rows * n));
  size_t touched = 0;
  for (int64_t i = 0; i < rows; ++i) {
    std::copy_n(&got[i * ldy], n, &valid[i * n]);
    for (int64_t j = n; j < ldy; ++j) touched += got[i * ldy + j] != kSentinel;
  }
  CHECK(touched == 0);
  return valid;
}

// f32 or bf16 weights on the GPU against an f32 CPU Linear over the same (rounded) values.
template <typename T>
void check_float_linear(DType weight_dtype) {
  const double u = unit_roundoff<T>();
  struct Shape {
    int64_t n, k;
  };
  uint32_t seed = 1;
  for (const Shape sh : {Shape{1, 3}, Shape{17, 3}, Shape{17, 384}, Shape{384, 384}, Shape{64, 1001}}) {
    for (const bool with_bias : {true, false}) {
      const int64_t n = sh.n, k = sh.k;
      std::vector<float> w = random_floats(static_cast<size_t>(n * k), -0.2f, 0.2f, ++seed);
      std::vector<uint16_t> w_bf16(w.size());
      if (weight_dtype == DType::kBF16) {
        for (size_t i = 0; i < w.size(); ++i) w[i] = brisk::bf16_to_float(w_bf16[i] = brisk::float_to_bf16(w[i]));
      }
      std::vector<float> b =
          with_bias ? random_floats(static_cast<size_t>(n), -1.f, 1.f, ++seed) : std::vector<float>();
      const Tensor wt = weight_dtype == DType::kBF16 ? Tensor::borrow(w_bf16.data(), {n, k}, DType::kBF16)
                                                     : Tensor::borrow(w.data(), {n, k}, DType::kF32);
      const Tensor bt = with_bias ? Tensor::borrow(b.data(), {n}, DType::kF32) : Tensor();
      auto gpu = brisk::kernels::Linear::create(wt, bt, Device::kCUDA, {}, dtype_of<T>());
      INFO("n=" << n << " k=" << k << " bias=" << with_bias << " weights " << brisk::dtype_name(weight_dtype)
                << " activations " << brisk::dtype_name(dtype_of<T>()));
      INFO(gpu.status().ToString());
      REQUIRE(gpu.ok());
      CHECK(gpu->in_features() == k);
      CHECK(gpu->out_features() == n);
      CHECK(gpu->device() == Device::kCUDA);
      CHECK(gpu->activation_dtype() == dtype_of<T>());

      std::vector<float> w_t = rounded<T>(w);
      std::vector<float> b_t = rounded<T>(b);
      auto cpu = brisk::kernels::Linear::create(Tensor::borrow(w_t.data(), {n, k}, DType::kF32),
                                                with_bias ? Tensor::borrow(b_t.data(), {n}, DType::kF32) : Tensor(),
                                                Device::kCPU);
      REQUIRE(cpu.ok());

      for (const int64_t rows : {int64_t{1}, int64_t{5}, int64_t{130}}) {
        const std::vector<float> x = rounded<T>(random_floats(static_cast<size_t>(rows * k), -1.f, 1.f, ++seed));
        const GemmFacts facts = gemm_facts(x, w_t, b_t, rows, n, k);
        DeviceArray<T> dx(as_t<T>(x));
        for (const brisk::kernels::GemmEpilogue e : kEpilogues) {
          const bool strided_ok = e == GemmEpilogue::kBias || e == GemmEpilogue::kBiasAccumulate;
          for (const int64_t ldy : {n, n + 3}) {
            if (ldy != n && !strided_ok) continue;
            INFO("rows=" << rows << " epilogue=" << static_cast<int>(e) << " ldy=" << ldy);
            const std::vector<float> y0 = rounded<T>(random_floats(static_cast<size_t>(rows * n), -1.f, 1.f, ++seed));
            const std::vector<float> got = gpu_forward<T>(*gpu, dx, rows, y0, e, ldy);
            std::vector<float> y_cpu = y0;
            REQUIRE(cpu->forward(x.data(), rows, y_cpu.data(), e).ok());
            std::vector<double> want(y_cpu.begin(), y_cpu.end());
            std::vector<double> tol(want.size());
            for (size_t i = 0; i < tol.size(); ++i) {
              tol[i] = tolerance(e, facts.z[i], want[i], facts.sum_abs[i], k, u, 0.0);
            }
            check_within(got, want, tol);
          }
        }
      }
    }
  }
}

// How an int8 Linear's activations are quantized: per token (dynamic), per token after SmoothQuant's 1 / s
// (input_scale), or with one static scale: the plans brisk quantize writes.
enum class Int8Scaling { kDynamic, kSmoothQuant, kStatic };

// Turns the dequantized fallback on for one scope (as if cuBLASLt had no int8 algorithm for any row count).
class ForcedInt8Fallback {
 public:
  explicit ForcedInt8Fallback(bool on) { brisk::kernels::cuda::force_int8_fallback_for_testing(on); }
  ~ForcedInt8Fallback() { brisk::kernels::cuda::force_int8_fallback_for_testing(false); }
  ForcedInt8Fallback(const ForcedInt8Fallback&) = delete;
  ForcedInt8Fallback& operator=(const ForcedInt8Fallback&) = delete;
};

// i8 weights on the GPU against the CPU int8 Linear. `exact`: integer activations with one ±127 per row (per-token
// scale exactly 1; static scale 1) and power-of-two weight scales, so quantization loses nothing on either side;
// otherwise random activations and scales, with the quantization term of the file comment. SmoothQuant multiplies
// x by 1 / s on both sides in fp32 (the same values), so the reference takes x' = x / s and the quantization term
// is that of x'. `fallback`: the GPU runs the dequantized weights as T on unquantized x (the path taken when
// cuBLASLt has no int8 algorithm); its weights are rounded to T (u Σ|x w| more) and the CPU's quantization error
// stays in the term.
template <typename T>
void check_int8_linear(bool per_channel, bool exact, Int8Scaling scaling, bool fallback) {
  const double u = unit_roundoff<T>();
  struct Shape {
    int64_t n, k;
  };
  uint32_t seed = 100;
  // 19 x 5 and 3 x 384 are not IMMA shapes (n and k must be multiples of 4): they take the dequantized fallback.
  for (const Shape sh : {Shape{16, 64}, Shape{384, 384}, Shape{1536, 384}, Shape{19, 5}, Shape{3, 384}}) {
    const int64_t n = sh.n, k = sh.k;
    std::vector<int8_t> wq(static_cast<size_t>(n * k));
    std::vector<float> scales(per_channel ? static_cast<size_t>(n) : 1);
    std::vector<float> bias = random_floats(static_cast<size_t>(n), -1.f, 1.f, ++seed);
    if (exact) {
      for (int64_t i = 0; i < n * k; ++i) wq[i] = static_cast<int8_t>((i * 7 + 3) % 255 - 127);
      for (size_t j = 0; j < scales.size(); ++j) scales[j] = std::ldexp(1.0f, -static_cast<int>(j % 5) - 10);
      for (int64_t j = 0; j < n; ++j) bias[j] = 0.25f * static_cast<float>(j % 3);
    } else {
      const auto r = random_floats(wq.size(), -127.f, 127.f, ++seed);
      for (size_t i = 0; i < wq.size(); ++i) wq[i] = static_cast<int8_t>(std::lround(r[i]));
      // Channel scales spread over a decade, so a channel taking another's scale shows.
      const auto s = random_floats(scales.size(), 0.5f, 5.0f, ++seed);
      for (size_t j = 0; j < scales.size(); ++j) scales[j] = s[j] * 1e-3f;
    }
    // SmoothQuant's s over a decade (so that a channel taking another's shows), and its 1 / s as both sides use it.
    std::vector<float> input_scale, inv_input;
    if (scaling == Int8Scaling::kSmoothQuant) {
      input_scale = random_floats(static_cast<size_t>(k), 0.3f, 3.0f, ++seed);
      for (const float v : input_scale) inv_input.push_back(1.0f / v);
    }
    const std::vector<float> b_t = rounded<T>(bias);  // the GPU holds the bias as T
    const Tensor wt = Tensor::borrow(wq.data(), {n, k}, DType::kI8);
    const Tensor st = Tensor::borrow(scales.data(), {static_cast<int64_t>(scales.size())}, DType::kF32);
    const Tensor bt = Tensor::borrow(const_cast<float*>(b_t.data()), {n}, DType::kF32);
    const Tensor in_t = input_scale.empty() ? Tensor() : Tensor::borrow(input_scale.data(), {k}, DType::kF32);
    // The dequantized weights, for the reference's z and Σ|x w| (the file's weights: s folded in).
    std::vector<float> w(wq.size());
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) w[j * k + p] = float(wq[j * k + p]) * scales[per_channel ? j : 0];
    }
    for (const int64_t rows : {int64_t{1}, int64_t{7}, int64_t{130}}) {
      std::vector<float> x;
      if (exact) {
        x.resize(static_cast<size_t>(rows * k));
        for (int64_t i = 0; i < rows * k; ++i) x[i] = static_cast<float>((i * 13 + 5) % 201 - 100);
        for (int64_t i = 0; i < rows; ++i) x[i * k + (i % k)] = (i % 2) ? 127.0f : -127.0f;
      } else {
        x = rounded<T>(random_floats(static_cast<size_t>(rows * k), -1.f, 1.f, ++seed));
      }
      // x' = x / s as both sides compute it (fp32 products of the same floats).
      std::vector<float> xs = x;
      if (!inv_input.empty()) {
        for (int64_t i = 0; i < rows * k; ++i) xs[i] = x[i] * inv_input[i % k];
      }
      float batch_absmax = 0.0f;
      for (const float v : xs) batch_absmax = std::max(batch_absmax, std::fabs(v));
      // Static: exact inputs take scale 1; others the batch's absmax / 127, so that nothing clamps.
      const float static_scale =
          scaling != Int8Scaling::kStatic ? 0.0f : (exact ? 1.0f : std::max(batch_absmax, 1e-6f) / 127.0f);
      INFO("n=" << n << " k=" << k << " rows=" << rows << " per_channel=" << per_channel << " exact=" << exact
                << " scaling=" << static_cast<int>(scaling) << " fallback=" << fallback << " activations "
                << brisk::dtype_name(dtype_of<T>()));
      auto gpu =
          brisk::kernels::Linear::create(wt, bt, Device::kCUDA, QuantScales{st, static_scale, in_t}, dtype_of<T>());
      INFO(gpu.status().ToString());
      REQUIRE(gpu.ok());
      CHECK(gpu->weight_dtype() == DType::kI8);
      auto cpu = brisk::kernels::Linear::create(wt, bt, Device::kCPU, QuantScales{st, static_scale, in_t});
      REQUIRE(cpu.ok());

      const GemmFacts facts = gemm_facts(xs, w, b_t, rows, n, k);
      // Σ_p |w_jp| · sx_i: the two sides' quantizations of x' differ by at most one step sx per element.
      std::vector<double> quant(facts.z.size(), 0.0);
      if (!exact || fallback) {
        for (int64_t i = 0; i < rows; ++i) {
          float absmax = 0.0f;
          for (int64_t p = 0; p < k; ++p) absmax = std::max(absmax, std::fabs(xs[i * k + p]));
          const double sx = static_scale > 0.0f ? static_scale : absmax / 127.0;
          for (int64_t j = 0; j < n; ++j) {
            double wsum = 0.0;
            for (int64_t p = 0; p < k; ++p) wsum += std::fabs(w[j * k + p]);
            quant[i * n + j] = (exact ? 0.0 : sx * wsum) + (fallback ? u * facts.sum_abs[i * n + j] : 0.0);
          }
        }
      }
      DeviceArray<T> dx(as_t<T>(x));
      const ForcedInt8Fallback forced(fallback);
      const uint64_t fallbacks_before = brisk::kernels::cuda_int8_fallback_calls();
      for (const brisk::kernels::GemmEpilogue e : kEpilogues) {
        for (const int64_t ldy : {n, n + 3}) {
          if (ldy != n && e != GemmEpilogue::kBias && e != GemmEpilogue::kBiasAccumulate) continue;
          INFO("epilogue=" << static_cast<int>(e) << " ldy=" << ldy);
          const std::vector<float> y0 = rounded<T>(random_floats(static_cast<size_t>(rows * n), -1.f, 1.f, ++seed));
          const std::vector<float> got = gpu_forward<T>(*gpu, dx, rows, y0, e, ldy);
          std::vector<float> y_cpu = y0;
          REQUIRE(cpu->forward(x.data(), rows, y_cpu.data(), e).ok());
          std::vector<double> want(y_cpu.begin(), y_cpu.end());
          std::vector<double> tol(want.size());
          for (size_t i = 0; i < tol.size(); ++i) {
            tol[i] = tolerance(e, facts.z[i], want[i], facts.sum_abs[i], k, u, quant[i]);
          }
          check_within(got, want, tol);
        }
      }
      // Forced, every call of an IMMA-shaped Linear was counted as a fallback.
      if (fallback && n % 4 == 0 && k % 4 == 0) CHECK(brisk::kernels::cuda_int8_fallback_calls() > fallbacks_before);
    }
  }
}

// Restores the device memory cap on scope exit.
class MemoryLimitGuard {
 public:
  MemoryLimitGuard() : previous_(brisk::device_memory_stats(Device::kCUDA).limit_bytes) {}
  ~MemoryLimitGuard() { (void)brisk::set_device_memory_limit(Device::kCUDA, previous_); }

 private:
  size_t previous_;
};

}  // namespace

TEST_CASE("cuda Linear matches the CPU Linear for every epilogue and activation dtype", "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const DType weights = GENERATE(DType::kF32, DType::kBF16);
  const DType activations = GENERATE(DType::kF32, DType::kF16, DType::kBF16);
  switch (activations) {
    case DType::kF32: check_float_linear<float>(weights); break;
    case DType::kF16: check_float_linear<brisk::float16_t>(weights); break;
    default: check_float_linear<brisk::bfloat16_t>(weights); break;
  }
}

TEST_CASE("cuda int8 Linear matches the CPU int8 Linear", "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const bool per_channel = GENERATE(true, false);
  const bool exact = GENERATE(true, false);
  const DType activations = GENERATE(DType::kF32, DType::kF16, DType::kBF16);
  switch (activations) {
    case DType::kF32: check_int8_linear<float>(per_channel, exact, Int8Scaling::kDynamic, false); break;
    case DType::kF16: check_int8_linear<brisk::float16_t>(per_channel, exact, Int8Scaling::kDynamic, false); break;
    default: check_int8_linear<brisk::bfloat16_t>(per_channel, exact, Int8Scaling::kDynamic, false); break;
  }
}

TEST_CASE("cuda int8 Linear with SmoothQuant input scales or a static scale matches the CPU one", "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const Int8Scaling scaling = GENERATE(Int8Scaling::kSmoothQuant, Int8Scaling::kStatic);
  const bool exact = GENERATE(true, false);
  if (exact && scaling == Int8Scaling::kSmoothQuant) return;  // x / s is not an integer: no exact case
  const DType activations = GENERATE(DType::kF32, DType::kF16);
  if (activations == DType::kF32) {
    check_int8_linear<float>(true, exact, scaling, false);
  } else {
    check_int8_linear<brisk::float16_t>(true, exact, scaling, false);
  }
}

TEST_CASE("cuda int8 Linear without a cuBLASLt int8 algorithm runs its dequantized weights and counts it", "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const Int8Scaling scaling = GENERATE(Int8Scaling::kDynamic, Int8Scaling::kSmoothQuant, Int8Scaling::kStatic);
  check_int8_linear<brisk::float16_t>(true, false, scaling, true);
  check_int8_linear<float>(false, scaling != Int8Scaling::kSmoothQuant, scaling, true);
}

TEST_CASE("cuda int8 GEMM rows are padded to a multiple of 32", "[kernels]") {
  using brisk::kernels::cuda::int8_gemm_rows;
  CHECK(int8_gemm_rows(1) == 32);
  CHECK(int8_gemm_rows(4) == 32);
  CHECK(int8_gemm_rows(32) == 32);
  CHECK(int8_gemm_rows(33) == 64);
  CHECK(int8_gemm_rows(130) == 160);
}

namespace {

// One self_attention case on the GPU against the CPU op on the same (rounded) values.
//
// Bound, per query row i of a sequence and channel c, with u the unit roundoff of T: the GPU holds q, k, v rounded
// to T after the bias add (one rounding each), rounds every score to T and every probability to T, and rounds the
// context once. A logit z_j = scale · q_i · k_j is thus off by at most δ_j = scale Σ_p |q_ip k_jp| (3u + 2 d 2^-24)
// (the score's rounding, q's and k's, fp32 accumulation on both sides). To first order the context moves by
// Σ_j p_j (v_jc − ctx_c) Δz_j, so |Δctx_c| <= 1.5 Σ_j p_j |v_jc − ctx_c| δ_j (1.5 for the second-order terms),
// plus vmax (2u + L 2^-24) for the rounded probabilities and values and the fp32 P V sums, plus u |ctx_c| for
// the output, plus vmax 2^-16 for a fast device exp (a few dozen f32 ulps at logits of size 30), plus 2e-5.
template <typename T>
void check_attention(int64_t heads, int64_t d, const std::vector<int32_t>& lengths, bool padded, bool with_bias) {
  const double u = unit_roundoff<T>();
  const int64_t batch = static_cast<int64_t>(lengths.size());
  const int64_t max_len = *std::max_element(lengths.begin(), lengths.end());
  const int64_t hidden = heads * d;
  std::vector<int32_t> starts(lengths.size());
  int64_t rows = 0;
  for (size_t b = 0; b < lengths.size(); ++b) {
    starts[b] = static_cast<int32_t>(padded ? static_cast<int64_t>(b) * max_len : rows);
    rows += padded ? max_len : lengths[b];
  }
  if (!padded) rows += 2;  // two trailing rows that belong to no sequence: they must come back as zeros
  INFO("heads=" << heads << " d=" << d << " padded=" << padded << " bias=" << with_bias << " rows=" << rows
                << " activations " << brisk::dtype_name(dtype_of<T>()));

  const std::vector<float> qkv = rounded<T>(random_floats(static_cast<size_t>(rows * 3 * hidden), -2.f, 2.f, 21));
  const std::vector<float> bias =
      with_bias ? rounded<T>(random_floats(static_cast<size_t>(3 * hidden), -0.5f, 0.5f, 22)) : std::vector<float>();

  std::vector<float> ctx_cpu(static_cast<size_t>(rows * hidden), -7.f);
  const brisk::kernels::AttentionRows cpu_rows{starts.data(), lengths.data(), batch, max_len};
  REQUIRE(brisk::kernels::self_attention<float>(Device::kCPU, qkv.data(), with_bias ? bias.data() : nullptr, cpu_rows,
                                                rows, heads, d, ctx_cpu.data())
              .ok());

  DeviceArray<T> d_qkv(as_t<T>(qkv));
  DeviceArray<T> d_bias(as_t<T>(bias));
  DeviceArray<int32_t> d_starts(starts);
  DeviceArray<int32_t> d_lengths(lengths);
  DeviceArray<T> d_ctx(as_t<T>(std::vector<float>(static_cast<size_t>(rows * hidden), -7.f)));
  const brisk::kernels::AttentionRows gpu_rows{d_starts.get(), d_lengths.get(), batch, max_len};
  const brisk::Status st = brisk::kernels::self_attention<T>(
      Device::kCUDA, d_qkv.get(), with_bias ? d_bias.get() : nullptr, gpu_rows, rows, heads, d, d_ctx.get());
  INFO(st.ToString());
  REQUIRE(st.ok());
  const std::vector<float> got = download_floats(d_ctx);

  // Rows of no sequence: zeros on both sides; tolerance 0.
  std::vector<double> want(ctx_cpu.begin(), ctx_cpu.end());
  std::vector<double> tol(want.size(), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  auto value = [&](int64_t row, int part, int64_t h, int64_t c) {
    const int64_t col = part * hidden + h * d + c;
    return double(qkv[row * 3 * hidden + col]) + (with_bias ? double(bias[col]) : 0.0);
  };
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lengths[b];
    for (int64_t h = 0; h < heads; ++h) {
      double vmax = 0.0;
      for (int64_t j = 0; j < len; ++j) {
        for (int64_t c = 0; c < d; ++c) vmax = std::max(vmax, std::fabs(value(starts[b] + j, 2, h, c)));
      }
      for (int64_t i = 0; i < len; ++i) {
        const int64_t row = starts[b] + i;
        std::vector<double> p(static_cast<size_t>(len)), delta(static_cast<size_t>(len));
        double zmax = -INFINITY;
        for (int64_t j = 0; j < len; ++j) {
          double dot = 0.0, abs_dot = 0.0;
          for (int64_t c = 0; c < d; ++c) {
            const double t = value(row, 0, h, c) * value(starts[b] + j, 1, h, c);
            dot += t;
            abs_dot += std::fabs(t);
          }
          p[j] = scale * dot;
          delta[j] = scale * abs_dot * (3.0 * u + 2.0 * static_cast<double>(d) * 0x1p-24);
          zmax = std::max(zmax, p[j]);
        }
        double sum = 0.0;
        for (double& pj : p) sum += (pj = std::exp(pj - zmax));
        for (double& pj : p) pj /= sum;
        for (int64_t c = 0; c < d; ++c) {
          double ctx = 0.0;
          for (int64_t j = 0; j < len; ++j) ctx += p[j] * value(starts[b] + j, 2, h, c);
          double first_order = 0.0;
          for (int64_t j = 0; j < len; ++j)
            first_order += p[j] * std::fabs(value(starts[b] + j, 2, h, c) - ctx) * delta[j];
          const size_t at = static_cast<size_t>(row * hidden + h * d + c);
          tol[at] = 1.5 * first_order + vmax * (2.0 * u + static_cast<double>(len) * 0x1p-24 + 0x1p-16) +
                    u * std::fabs(want[at]) + 2e-5;
        }
      }
    }
  }
  check_within(got, want, tol);
}

}  // namespace

TEST_CASE("cuda self_attention matches the CPU one on packed and padded rows", "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const bool padded = GENERATE(false, true);
  const bool with_bias = GENERATE(false, true);
  const DType activations = GENERATE(DType::kF32, DType::kF16, DType::kBF16);
  struct Config {
    int64_t heads, d;
    std::vector<int32_t> lengths;  // mixed, with an empty sequence
  };
  for (const Config& cfg : {Config{3, 16, {5, 0, 17, 1, 33}}, Config{12, 64, {128, 77, 0, 3}}, Config{2, 8, {1}}}) {
    switch (activations) {
      case DType::kF32: check_attention<float>(cfg.heads, cfg.d, cfg.lengths, padded, with_bias); break;
      case DType::kF16: check_attention<brisk::float16_t>(cfg.heads, cfg.d, cfg.lengths, padded, with_bias); break;
      default: check_attention<brisk::bfloat16_t>(cfg.heads, cfg.d, cfg.lengths, padded, with_bias); break;
    }
  }
}

TEST_CASE("cuda self_attention and int8 Linear report OUT_OF_MEMORY past the device cap and release scratch",
          "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  using brisk::float16_t;
  const int64_t heads = 12, d = 64, len = 512, batch = 8, hidden = heads * d, rows = batch * len;
  std::vector<int32_t> starts(batch), lengths(batch, static_cast<int32_t>(len));
  for (int64_t b = 0; b < batch; ++b) starts[b] = static_cast<int32_t>(b * len);
  DeviceArray<float16_t> qkv(as_t<float16_t>(random_floats(static_cast<size_t>(rows * 3 * hidden), -1.f, 1.f, 5)));
  DeviceArray<float16_t> ctx(static_cast<size_t>(rows * hidden));
  DeviceArray<int32_t> d_starts(starts), d_lengths(lengths);
  const brisk::kernels::AttentionRows seqs{d_starts.get(), d_lengths.get(), batch, len};

  std::vector<int8_t> wq(static_cast<size_t>(hidden * hidden), 5);
  std::vector<float> scale{0.01f};
  auto fc = brisk::kernels::Linear::create(
      Tensor::borrow(wq.data(), {hidden, hidden}, DType::kI8), Tensor(), Device::kCUDA,
      brisk::kernels::QuantScales{Tensor::borrow(scale.data(), {1}, DType::kF32), 0.0f, Tensor()}, DType::kF16);
  INFO(fc.status().ToString());
  REQUIRE(fc.ok());

  // Both run once without a cap: this builds the thread's cuBLAS context, whose workspace stays allocated.
  REQUIRE(brisk::kernels::self_attention<float16_t>(Device::kCUDA, qkv.get(), nullptr, seqs, rows, heads, d, ctx.get())
              .ok());
  REQUIRE(fc->forward(ctx.get(), rows, qkv.get(), brisk::kernels::GemmEpilogue::kBias, 3 * hidden).ok());
  REQUIRE(brisk::kernels::synchronize(Device::kCUDA).ok());
  const size_t in_use = brisk::device_memory_stats(Device::kCUDA).in_use_bytes;
  {
    MemoryLimitGuard guard;
    // 1 MiB of headroom: the scores alone are 8 x 12 x 512 x 512 f16 (48 MiB), the int8 scratch about 16 MiB.
    REQUIRE(brisk::set_device_memory_limit(Device::kCUDA, in_use + (size_t{1} << 20)).ok());
    const brisk::Status attention =
        brisk::kernels::self_attention<float16_t>(Device::kCUDA, qkv.get(), nullptr, seqs, rows, heads, d, ctx.get());
    INFO(attention.ToString());
    CHECK(brisk::is_out_of_memory(attention));
    const brisk::Status linear =
        fc->forward(ctx.get(), rows, qkv.get(), brisk::kernels::GemmEpilogue::kBias, 3 * hidden);
    INFO(linear.ToString());
    CHECK(brisk::is_out_of_memory(linear));
  }
  REQUIRE(brisk::kernels::synchronize(Device::kCUDA).ok());
  CHECK(brisk::device_memory_stats(Device::kCUDA).in_use_bytes == in_use);
  // And they run again once the cap is gone, leaving nothing allocated behind.
  REQUIRE(brisk::kernels::self_attention<float16_t>(Device::kCUDA, qkv.get(), nullptr, seqs, rows, heads, d, ctx.get())
              .ok());
  REQUIRE(brisk::kernels::synchronize(Device::kCUDA).ok());
  CHECK(brisk::device_memory_stats(Device::kCUDA).in_use_bytes == in_use);
}
