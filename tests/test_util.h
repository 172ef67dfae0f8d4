// Shared helpers for brisk's tests: where the test data and the default model live.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "brisk/core/allocator.h"
#include "brisk/core/device.h"
#include "brisk/runtime/runtime.h"
#include "test_skip.h"

namespace brisk::testing {

std::filesystem::path test_data_dir();  // tests/data of the checkout (test_data_dir.cc)

// Compute threads for tests that run the model. Under ThreadSanitizer one: libgomp is not instrumented, so the
// synchronisation of an OpenMP team is invisible to TSan and every parallel region would be reported as a race;
// with one thread the regions run inline and TSan checks brisk's own threads (batcher, concurrent callers).
inline int compute_threads() {
#if defined(__SANITIZE_THREAD__)
  return 1;
#else
  return 2;
#endif
}

// The all-MiniLM-L6-v2 directory that scripts/setup installs (BRISK_MODEL_DIR overrides it).
inline std::filesystem::path model_dir() { return brisk::default_model_dir(); }

// Options for a runtime over the default model with the tests' compute threads.
inline brisk::RuntimeOptions runtime_options() {
  brisk::RuntimeOptions opts;
  opts.model_dir = model_dir().string();
  opts.num_threads = compute_threads();
  return opts;
}

// The same with both caches off, so that every embedding comes from a forward pass: for tests of the model and
// of concurrency, which a cache would otherwise answer.
inline brisk::RuntimeOptions uncached_runtime_options() {
  brisk::RuntimeOptions opts = runtime_options();
  opts.cache.result_cache_bytes = 0;
  opts.cache.token_cache_entries = 0;
  return opts;
}

// n floats uniform in [lo, hi), reproducible for a given seed.
inline std::vector<float> random_floats(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The bytes of a file under tests/data (relative to test_data_dir()), or "" when it cannot be read.
inline std::string read_test_file(const std::filesystem::path& relative) {
  std::ifstream in(test_data_dir() / relative, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Cosine similarity of two n-vectors, accumulated in double.
inline double cosine(const float* a, const float* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// Polls `cond` every 5 ms until it holds or `limit` passes (for asynchronous effects: pub/sub, write-behind).
inline bool wait_until(const std::function<bool()>& cond, std::chrono::nanoseconds limit = std::chrono::seconds(5)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

// A fresh directory under the system temp dir, removed with everything in it when the object dies.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("brisk_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& rel) const { return (path / rel).string(); }
  // Writes `text` to path/rel, creating parent directories; returns the file's path.
  std::string write(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories((path / rel).parent_path());
    std::ofstream(path / rel, std::ios::binary) << text;
    return (path / rel).string();
  }
};

// Restores the CUDA allocator's cap (set_device_memory_limit) when the guard dies, to what it was when the guard was
// made; with `bytes`, sets it to that meanwhile. A failed REQUIRE unwinds the test case by an exception, so a cap
// restored by a statement at the end of the case would stay in force for every later test in the process.
//
//   brisk::testing::ScopedDeviceMemoryLimit cap;               // before a Runtime whose options set the cap
//   brisk::testing::ScopedDeviceMemoryLimit cap(64 << 20);     // or: this cap until the end of the scope
class ScopedDeviceMemoryLimit {
 public:
  ScopedDeviceMemoryLimit() : previous_(brisk::device_memory_stats(brisk::Device::kCUDA).limit_bytes) {}
  explicit ScopedDeviceMemoryLimit(size_t bytes) : ScopedDeviceMemoryLimit() {
    status_ = brisk::set_device_memory_limit(brisk::Device::kCUDA, bytes);
  }
  ~ScopedDeviceMemoryLimit() { (void)brisk::set_device_memory_limit(brisk::Device::kCUDA, previous_); }
  ScopedDeviceMemoryLimit(const ScopedDeviceMemoryLimit&) = delete;
  ScopedDeviceMemoryLimit& operator=(const ScopedDeviceMemoryLimit&) = delete;

  size_t previous() const { return previous_; }
  // What setting the cap returned (UNIMPLEMENTED in a build without CUDA); OK for the restoring-only form.
  const brisk::Status& status() const { return status_; }

 private:
  size_t previous_;
  brisk::Status status_;
};

// Why a CUDA test cannot run here: a build without CUDA, or no device.
inline std::string no_cuda_reason() {
  return brisk::built_with_cuda() ? "no CUDA device (cuda_device_count() is 0; nvidia-smi -L lists none?)"
                                  : "brisk was built without CUDA (BRISK_WITH_CUDA=OFF, or no nvcc at configure time)";
}

}  // namespace brisk::testing

// Skips the enclosing TEST_CASE (reported Skipped by ctest, see test_skip.h) without a CUDA device.
#define BRISK_SKIP_WITHOUT_CUDA()                                                          \
  do {                                                                                     \
    if (::brisk::cuda_device_count() == 0) BRISK_SKIP(::brisk::testing::no_cuda_reason()); \
  } while (0)
