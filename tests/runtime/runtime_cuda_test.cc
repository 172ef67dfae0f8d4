// The runtime on cuda:0: a clear error where there is no GPU (or no CUDA in the build), and on a GPU the same
// embeddings as the CPU, and a concurrent surge under a device memory cap low enough to be hit: every request is
// answered (an embedding or a status), nothing crashes, and the allocator's in-use counter returns to where it was.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "brisk/core/allocator.h"
#include "brisk/core/device.h"
#include "brisk/runtime/runtime.h"
#include "runtime/runtime_test_util.h"
#include "test_util.h"

namespace {

brisk::RuntimeOptions cuda_options() {
  brisk::RuntimeOptions opts = brisk::testing::runtime_options();
  opts.device = brisk::Device::kCUDA;
  opts.cache.result_cache_bytes = 0;  // every text must reach the GPU
  return opts;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

}  // namespace

TEST_CASE("a cuda runtime without a GPU or without CUDA in the build fails at create, naming the device", "[runtime]") {
  if (brisk::cuda_device_count() > 0) BRISK_SKIP("a CUDA device is present: this case checks the failure without one");
  auto rt = brisk::Runtime::create(cuda_options());
  REQUIRE_FALSE(rt.ok());
  const std::string message(rt.status().message());
  INFO(message);
  CHECK(message.find("RuntimeOptions::device") != std::string::npos);
  if (brisk::built_with_cuda()) {
    CHECK(rt.status().code() == absl::StatusCode::kNotFound);
    CHECK(message.find("cuda:0 is not present") != std::string::npos);
  } else {
    CHECK(rt.status().code() == absl::StatusCode::kUnimplemented);
    CHECK(message.find("BRISK_WITH_CUDA") != std::string::npos);
  }
}

TEST_CASE("on cuda:0 the runtime gives the CPU's embeddings within fp16 rounding", "[runtime][cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  auto cpu = brisk::testing::make_runtime(brisk::testing::runtime_options());
  const std::vector<std::string_view> texts = {"how do I reset my card PIN?", "a", "the quick brown fox jumps over",
                                               "where is my parcel? it was due on monday and has not arrived"};
  auto want = cpu->embed(texts);
  REQUIRE(want.ok());
  for (const bool remove_padding : {true, false}) {
    for (const brisk::DType dtype : {brisk::DType::kF16, brisk::DType::kBF16, brisk::DType::kF32}) {
      brisk::RuntimeOptions opts = cuda_options();
      opts.activation_dtype = dtype;
      opts.remove_padding = remove_padding;
      auto gpu = brisk::testing::make_runtime(opts);
      CHECK(gpu->info().device == brisk::Device::kCUDA);
      auto got = gpu->embed(texts);
      REQUIRE(got.ok());
      const size_t dim = static_cast<size_t>(gpu->embedding_dim());
      for (size_t i = 0; i < texts.size(); ++i) {
        const std::vector<float> a(want->begin() + i * dim, want->begin() + (i + 1) * dim);
        const std::vector<float> b(got->begin() + i * dim, got->begin() + (i + 1) * dim);
        INFO(brisk::dtype_name(dtype) << " remove_padding " << remove_padding << " text " << i);
        // bf16 keeps 8 bits of mantissa: its cosine floor is lower than f16's.
        CHECK(cosine(a, b) >= (dtype == brisk::DType::kBF16 ? 0.995 : 0.9995));
      }
    }
  }
}

TEST_CASE("on cuda:0 a surge under a low device memory cap is refused or queued, never crashes, and leaks nothing",
          "[runtime][cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  // The runtime below sets a 192 MiB cap for the process; the guard puts the previous one back however this case
  // ends, a failed REQUIRE included.
  brisk::testing::ScopedDeviceMemoryLimit restore_cap;
  const size_t in_use_before = brisk::device_memory_stats(brisk::Device::kCUDA).in_use_bytes;
  std::atomic<int> ok{0}, refused{0}, failed_other{0};
  {
    brisk::RuntimeOptions opts = cuda_options();
    // MiniLM's weights take ~46 MB in f16 and each executor's cuBLASLt workspace 32 MiB; 192 MiB leaves room for
    // a few small batches but not for a full one of long texts, so the cap is hit.
    opts.device_memory_limit = size_t{192} << 20;
    opts.batching.max_batch_size = 256;
    opts.batching.executor_threads = 2;  // two executors, two streams, sharing the capped memory
    opts.batching.max_queue_size = 100000;
    auto rt = brisk::testing::make_runtime(opts);
    std::string long_text;
    for (int i = 0; i < 60; ++i) long_text += "the parcel was late again ";
    std::vector<std::thread> clients;
    std::vector<std::promise<void>> done(8 * 64);
    std::atomic<size_t> next{0};
    for (int c = 0; c < 8; ++c) {
      clients.emplace_back([&, c] {
        for (int i = 0; i < 64; ++i) {
          const std::string text = long_text + std::to_string(c * 1000 + i);
          std::promise<void>& p = done[next.fetch_add(1)];
          auto id =
              rt->submit(text, {}, [&p, &ok, &refused, &failed_other](uint64_t, brisk::StatusOr<std::vector<float>> e) {
                if (e.ok()) {
                  ++ok;
                } else if (e.status().code() == absl::StatusCode::kResourceExhausted) {
                  ++refused;  // OUT_OF_MEMORY, or the batcher's memory budget
                } else {
                  ++failed_other;
                }
                p.set_value();
              });
          if (!id.ok()) {
            ++refused;
            p.set_value();
          }
        }
      });
    }
    for (auto& t : clients) t.join();
    for (auto& p : done) p.get_future().wait();
    INFO("ok " << ok << ", refused " << refused << ", other failures " << failed_other);
    CHECK(ok + refused + failed_other == 8 * 64);
    CHECK(ok > 0);
    CHECK(failed_other == 0);
    const auto stats = brisk::device_memory_stats(brisk::Device::kCUDA);
    CHECK(stats.in_use_bytes + stats.cached_bytes <= opts.device_memory_limit);
  }
  brisk::release_cached_device_memory(brisk::Device::kCUDA);
  CHECK(brisk::device_memory_stats(brisk::Device::kCUDA).in_use_bytes == in_use_before);
}

TEST_CASE("on cuda:0 two executors on two streams give the CPU's embeddings for every text", "[runtime][cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  // Distinct texts of many lengths, so that the two executors run batches of different row counts (and plan
  // buckets) at the same time, sharing the weights and the caching allocator.
  std::vector<std::string> texts;
  for (int i = 0; i < 96; ++i) {
    std::string t = "request " + std::to_string(i) + ":";
    for (int w = 0; w < 1 + (i * 7) % 40; ++w) t += (w % 3 == 0) ? " parcel" : (w % 3 == 1) ? " refund" : " card";
    texts.push_back(std::move(t));
  }
  auto cpu = brisk::testing::make_runtime(brisk::testing::uncached_runtime_options());
  std::vector<std::string_view> views(texts.begin(), texts.end());
  auto want = cpu->embed(views);
  REQUIRE(want.ok());
  const size_t dim = static_cast<size_t>(cpu->embedding_dim());

  brisk::RuntimeOptions opts = cuda_options();
  opts.cache.token_cache_entries = 0;
  opts.batching.executor_threads = 2;
  opts.batching.max_batch_size = 8;
  opts.batching.max_queue_size = 100000;
  auto gpu = brisk::testing::make_runtime(opts);
  std::vector<std::vector<float>> got(texts.size());
  std::vector<brisk::Status> status(texts.size());
  std::vector<std::promise<void>> done(texts.size());
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (size_t i = static_cast<size_t>(c); i < texts.size(); i += 4) {
        auto id = gpu->submit(texts[i], {}, [&, i](uint64_t, brisk::StatusOr<std::vector<float>> e) {
          if (e.ok()) {
            got[i] = std::move(*e);
          } else {
            status[i] = e.status();
          }
          done[i].set_value();
        });
        if (!id.ok()) {
          status[i] = id.status();
          done[i].set_value();
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  for (auto& p : done) p.get_future().wait();
  size_t failed = 0, wrong = 0;
  double worst = 1.0;
  std::string first;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!status[i].ok() || got[i].size() != dim) {
      if (failed++ == 0) first = "text " + std::to_string(i) + ": " + status[i].ToString();
      continue;
    }
    const std::vector<float> a(want->begin() + i * dim, want->begin() + (i + 1) * dim);
    const double c = cosine(a, got[i]);
    worst = std::min(worst, c);
    if (c < 0.9995) {  // f16 activations, as in the single-executor case above
      if (wrong++ == 0) first = "text " + std::to_string(i) + ": cosine " + std::to_string(c);
    }
  }
  INFO(failed << " failed, " << wrong << " wrong of " << texts.size() << " (worst cosine " << worst
              << "); first: " << first);
  CHECK(failed == 0);
  CHECK(wrong == 0);
}

TEST_CASE("an activation dtype the device cannot run is refused at create, naming both", "[runtime]") {
  brisk::RuntimeOptions opts = brisk::testing::runtime_options();
  opts.activation_dtype = brisk::DType::kF16;
  auto rt = brisk::Runtime::create(opts);
  REQUIRE_FALSE(rt.ok());
  CHECK(rt.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(rt.status().message()).find("RuntimeOptions::activation_dtype is f16 on cpu") != std::string::npos);
  opts.activation_dtype = brisk::DType::kI8;
  CHECK_FALSE(brisk::Runtime::create(opts).ok());
}
