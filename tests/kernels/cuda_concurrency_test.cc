// Two executors on cuda:0 at once, as the batcher runs them: two threads (two cudaStreamPerThread streams, two
// cuBLASLt contexts and plan caches) share one Linear and the caching allocator, each running batches of many row
// counts, and every result is checked against the CPU Linear. Also the per-thread cuBLASLt context's setup under a
// memory cap too low for its workspace: OUT_OF_MEMORY, then a working context once the cap allows it. Every case
// skips without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "brisk/core/allocator.h"
#include "brisk/core/half.h"
#include "brisk/kernels/copy.h"
#include "brisk/kernels/linear.h"
#include "kernel_test_util.h"
#if defined(BRISK_HAVE_CUDA)
#include "kernels/cuda/blas_handles.h"
#endif

using brisk::Device;
using brisk::DType;
using brisk::Tensor;
using brisk::kernels::GemmEpilogue;
using brisk::kernels::Linear;

namespace {

// The rows of the y = x·Wᵀ + b checks: a fixed Linear, and inputs of every row count up to kMaxRows, rounded to
// f16 so that the GPU (f16 activations, fp32 accumulation) and the CPU (fp32) see the same values.
constexpr int64_t kOut = 96;
constexpr int64_t kIn = 160;
constexpr int64_t kMaxRows = 160;

float round_f16(float v) { return brisk::f16_to_float(brisk::float_to_f16(v)); }

std::vector<float> rounded_f16(std::vector<float> v) {
  for (float& x : v) x = round_f16(x);
  return v;
}

// What one executor thread saw; checked on the test's thread (Catch2's assertions are not thread-safe).
struct ExecutorResult {
  std::string first_error;
  size_t errors = 0;
  size_t out_of_tolerance = 0;
  double worst_ratio = 0.0;  // worst |got - want| / tolerance
  size_t batches = 0;
  size_t plans_held = 0;
  void error(const std::string& what) {
    if (errors++ == 0) first_error = what;
  }
};

// Runs `rows_list` batches through `gpu` on the calling thread and compares each with y_cpu (all kMaxRows rows).
void run_executor(const Linear& gpu, const std::vector<float>& x, const std::vector<float>& y_cpu,
                  const std::vector<double>& tol, const std::vector<int64_t>& rows_list, ExecutorResult& r) {
  std::vector<uint16_t> x16(x.size());
  for (size_t i = 0; i < x.size(); ++i) x16[i] = brisk::float_to_f16(x[i]);
  auto dx = brisk::allocate(Device::kCUDA, x16.size() * 2);
  auto dy = brisk::allocate(Device::kCUDA, static_cast<size_t>(kMaxRows * kOut) * 2);
  if (!dx.ok() || !dy.ok()) {
    r.error("allocate: " + (dx.ok() ? dy.status() : dx.status()).ToString());
    if (dx.ok()) brisk::deallocate(Device::kCUDA, *dx);
    if (dy.ok()) brisk::deallocate(Device::kCUDA, *dy);
    return;
  }
  brisk::Status st = brisk::kernels::copy_bytes(Device::kCUDA, *dx, Device::kCPU, x16.data(), x16.size() * 2);
  std::vector<uint16_t> y16(static_cast<size_t>(kMaxRows * kOut));
  for (const int64_t rows : rows_list) {
    if (!st.ok()) break;
    // Each batch starts at a different row of x, so a result computed from another batch's rows would show.
    const int64_t first = (rows * 37) % (kMaxRows - rows + 1);
    const auto* xin = static_cast<const brisk::float16_t*>(*dx) + first * kIn;
    auto* yout = static_cast<brisk::float16_t*>(*dy);
    st = gpu.forward(xin, rows, yout, GemmEpilogue::kBias);
    if (st.ok()) {
      st = brisk::kernels::copy_bytes(Device::kCPU, y16.data(), Device::kCUDA, *dy,
                                      static_cast<size_t>(rows * kOut) * 2);
    }
    if (st.ok()) st = brisk::kernels::synchronize(Device::kCUDA);
    if (!st.ok()) break;
    ++r.batches;
    for (int64_t i = 0; i < rows * kOut; ++i) {
      const size_t ref = static_cast<size_t>(first * kOut + i);
      const double err = std::fabs(double(brisk::f16_to_float(y16[static_cast<size_t>(i)])) - y_cpu[ref]);
      r.worst_ratio = std::max(r.worst_ratio, err / tol[ref]);
      if (!(err <= tol[ref]) && r.out_of_tolerance++ == 0 && r.first_error.empty()) {
        r.first_error = "rows " + std::to_string(rows) + " element " + std::to_string(i) + ": got " +
                        std::to_string(brisk::f16_to_float(y16[static_cast<size_t>(i)])) + ", want " +
                        std::to_string(y_cpu[ref]);
      }
    }
  }
  if (!st.ok()) r.error(st.ToString());
#if defined(BRISK_HAVE_CUDA)
  if (auto ctx = brisk::kernels::cuda::blas_context(); ctx.ok()) r.plans_held = (*ctx)->plans_held();
#endif
  brisk::deallocate(Device::kCUDA, *dx);
  brisk::deallocate(Device::kCUDA, *dy);
}

}  // namespace

TEST_CASE("cuda two executors share a Linear on two streams and both get the CPU's values", "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const std::vector<float> w = rounded_f16(brisk::testing::random_floats(kOut * kIn, -0.2f, 0.2f, 11));
  const std::vector<float> b = rounded_f16(brisk::testing::random_floats(kOut, -1.0f, 1.0f, 12));
  const std::vector<float> x = rounded_f16(brisk::testing::random_floats(kMaxRows * kIn, -1.0f, 1.0f, 13));
  const Tensor wt = Tensor::borrow(const_cast<float*>(w.data()), {kOut, kIn}, DType::kF32);
  const Tensor bt = Tensor::borrow(const_cast<float*>(b.data()), {kOut}, DType::kF32);
  auto cpu = Linear::create(wt, bt, Device::kCPU);
  REQUIRE(cpu.ok());
  auto gpu = Linear::create(wt, bt, Device::kCUDA, {}, DType::kF16);
  INFO(gpu.status().ToString());
  REQUIRE(gpu.ok());

  // The CPU reference for all rows, and the allowance per element: both sides accumulate in fp32 (2 k 2^-24 Σ|xw|),
  // the GPU rounds its output to f16 once (2^-11 |y|).
  std::vector<float> y_cpu(static_cast<size_t>(kMaxRows * kOut));
  REQUIRE(cpu->forward(x.data(), kMaxRows, y_cpu.data(), GemmEpilogue::kBias).ok());
  std::vector<double> tol(y_cpu.size());
  for (int64_t i = 0; i < kMaxRows; ++i) {
    for (int64_t j = 0; j < kOut; ++j) {
      double sum_abs = std::fabs(double(b[j]));
      for (int64_t p = 0; p < kIn; ++p) sum_abs += std::fabs(double(x[i * kIn + p]) * w[j * kIn + p]);
      const double want = y_cpu[static_cast<size_t>(i * kOut + j)];
      tol[static_cast<size_t>(i * kOut + j)] = 2.0 * kIn * 0x1p-24 * sum_abs + 0x1p-11 * std::fabs(want) + 1e-5;
    }
  }

  // Every row count 1..kMaxRows, in opposite orders on the two executors, three times over: at any moment the two
  // run different counts, in different plan buckets, each thread with its own plans.
  std::vector<int64_t> up, down;
  for (int pass = 0; pass < 3; ++pass) {
    for (int64_t r = 1; r <= kMaxRows; ++r) {
      up.push_back(r);
      down.push_back(kMaxRows + 1 - r);
    }
  }
  ExecutorResult a, c;
  std::thread ta([&] { run_executor(*gpu, x, y_cpu, tol, up, a); });
  std::thread tc([&] { run_executor(*gpu, x, y_cpu, tol, down, c); });
  ta.join();
  tc.join();
  for (const ExecutorResult* r : {&a, &c}) {
    INFO("executor " << (r == &a ? "up" : "down") << ": " << r->batches << " batches, " << r->errors << " errors, "
                     << r->out_of_tolerance << " elements out of tolerance (worst error / tolerance " << r->worst_ratio
                     << "), " << r->plans_held << " plans; first: " << r->first_error);
    CHECK(r->errors == 0);
    CHECK(r->batches == up.size());
    CHECK(r->out_of_tolerance == 0);
#if defined(BRISK_HAVE_CUDA)
    // 160 row counts fall in 12 buckets, and the batches' offsets into x give x 3 alignments (64, 128, 256 bytes):
    // at most 36 plans, plus one per count a bucket's algorithm cannot run. Exact keys held one per count and
    // alignment, over 300.
    CHECK(r->plans_held >= 12);
    CHECK(r->plans_held < 80);
#endif
  }
}

TEST_CASE("cuda a thread whose cuBLASLt workspace is over the cap gets OUT_OF_MEMORY then works once it fits",
          "[cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const std::vector<float> w = rounded_f16(brisk::testing::random_floats(kOut * kIn, -0.2f, 0.2f, 21));
  const std::vector<float> x = rounded_f16(brisk::testing::random_floats(8 * kIn, -1.0f, 1.0f, 22));
  const Tensor wt = Tensor::borrow(const_cast<float*>(w.data()), {kOut, kIn}, DType::kF32);
  auto gpu = Linear::create(wt, Tensor(), Device::kCUDA, {}, DType::kF16);
  REQUIRE(gpu.ok());
  auto cpu = Linear::create(wt, Tensor(), Device::kCPU);
  REQUIRE(cpu.ok());
  std::vector<float> want(static_cast<size_t>(8 * kOut));
  REQUIRE(cpu->forward(x.data(), 8, want.data(), GemmEpilogue::kBias).ok());

  brisk::testing::ScopedDeviceMemoryLimit restore_cap;
  brisk::release_cached_device_memory(Device::kCUDA);
  brisk::Status first, retried, after;
  std::vector<uint16_t> y16(static_cast<size_t>(8 * kOut));
  uint64_t failures_during_retries = 0;
  // A fresh thread has no cuBLASLt context yet: its first GEMM sets one up, which takes a 32 MiB workspace.
  std::thread t([&] {
    std::vector<uint16_t> x16(x.size());
    for (size_t i = 0; i < x.size(); ++i) x16[i] = brisk::float_to_f16(x[i]);
    auto dx = brisk::allocate(Device::kCUDA, x16.size() * 2);
    auto dy = brisk::allocate(Device::kCUDA, y16.size() * 2);
    if (!dx.ok() || !dy.ok()) {
      first = dx.ok() ? dy.status() : dx.status();
      return;
    }
    first = brisk::kernels::copy_bytes(Device::kCUDA, *dx, Device::kCPU, x16.data(), x16.size() * 2);
    if (first.ok()) first = brisk::kernels::synchronize(Device::kCUDA);
    if (first.ok()) {
      const brisk::DeviceMemoryStats s = brisk::device_memory_stats(Device::kCUDA);
      // Room for anything but the workspace.
      (void)brisk::set_device_memory_limit(Device::kCUDA, s.in_use_bytes + s.cached_bytes + (size_t{4} << 20));
      const auto* xin = static_cast<const brisk::float16_t*>(*dx);
      auto* yout = static_cast<brisk::float16_t*>(*dy);
      first = gpu->forward(xin, 8, yout, GemmEpilogue::kBias);
      const uint64_t failures_before = brisk::device_memory_stats(Device::kCUDA).failures;
      for (int i = 0; i < 20; ++i)
        retried = gpu->forward(xin, 8, yout, GemmEpilogue::kBias);  // a failed setup, retried
      failures_during_retries = brisk::device_memory_stats(Device::kCUDA).failures - failures_before;
      (void)brisk::set_device_memory_limit(Device::kCUDA, 0);
      after = gpu->forward(xin, 8, yout, GemmEpilogue::kBias);
      if (after.ok()) after = brisk::kernels::copy_bytes(Device::kCPU, y16.data(), Device::kCUDA, *dy, y16.size() * 2);
      if (after.ok()) after = brisk::kernels::synchronize(Device::kCUDA);
    }
    brisk::deallocate(Device::kCUDA, *dx);
    brisk::deallocate(Device::kCUDA, *dy);
  });
  t.join();
  INFO("first: " << first.ToString() << "; retried: " << retried.ToString() << "; after: " << after.ToString());
  CHECK(brisk::is_out_of_memory(first));
  CHECK(brisk::is_out_of_memory(retried));
  CHECK(failures_during_retries == 20);  // each retry tried the workspace again, and nothing else failed
  REQUIRE(after.ok());
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    bad += !(std::fabs(brisk::f16_to_float(y16[i]) - want[i]) <= 2e-3 + 0x1p-10 * std::fabs(want[i]));
  }
  CHECK(bad == 0);
}
