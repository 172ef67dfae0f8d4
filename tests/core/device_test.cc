// Device names, and the errors a device this build or machine lacks gives: at the runtime's check and at every op's
// CUDA entry point.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "brisk/core/allocator.h"
#include "brisk/core/device.h"
#include "brisk/kernels/copy.h"
#include "brisk/kernels/gelu.h"
#include "brisk/kernels/layernorm.h"

namespace {

bool mentions(const brisk::Status& s, const std::string& text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("parse_device reads cpu, cuda and cuda:N, and names what it expects otherwise", "[core][device]") {
  auto cpu = brisk::parse_device("cpu");
  REQUIRE(cpu.ok());
  CHECK(cpu->type == brisk::Device::kCPU);
  auto cuda = brisk::parse_device("cuda");
  REQUIRE(cuda.ok());
  CHECK((cuda->type == brisk::Device::kCUDA && cuda->index == 0));
  auto second = brisk::parse_device("cuda:1");
  REQUIRE(second.ok());
  CHECK(second->index == 1);
  CHECK(brisk::device_string(*second) == "cuda:1");
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1x", "CPU", ""}) {
    auto s = brisk::parse_device(bad);
    INFO(bad);
    REQUIRE_FALSE(s.ok());
    CHECK(mentions(s.status(), "expected cpu, cuda or cuda:N"));
  }
}

TEST_CASE("check_device_available: UNIMPLEMENTED without CUDA in the build, NOT_FOUND without the GPU",
          "[core][device]") {
  CHECK(brisk::check_device_available({brisk::Device::kCPU, 0}).ok());
  const auto s = brisk::check_device_available({brisk::Device::kCUDA, 7});
  if (!brisk::built_with_cuda()) {
    CHECK(s.code() == absl::StatusCode::kUnimplemented);
    CHECK(mentions(s, "BRISK_WITH_CUDA"));
  } else if (brisk::cuda_device_count() < 8) {
    CHECK(s.code() == absl::StatusCode::kNotFound);
    CHECK(mentions(s, "device cuda:7 is not present"));
  }
}

TEST_CASE("an op asked for cuda dispatches there: UNIMPLEMENTED naming the option in a build without CUDA",
          "[core][device]") {
  if (brisk::cuda_device_count() > 0) return;  // the [cuda] kernel tests cover a real GPU
  std::vector<float> x(8, 1.0f), gamma(4, 1.0f), beta(4, 0.0f);
  const std::vector<brisk::Status> statuses = {
      brisk::kernels::layer_norm_bias_residual(brisk::Device::kCUDA, x.data(), nullptr, nullptr, gamma.data(),
                                               beta.data(), 1e-12f, x.data(), 2, 4),
      brisk::kernels::bias_gelu(brisk::Device::kCUDA, x.data(), nullptr, 2, 4, brisk::kernels::GeluApproximation::kErf),
      brisk::kernels::synchronize(brisk::Device::kCUDA),
  };
  for (const auto& s : statuses) {
    INFO(s.message());
    REQUIRE_FALSE(s.ok());
    if (!brisk::built_with_cuda()) {
      CHECK(s.code() == absl::StatusCode::kUnimplemented);
      CHECK(mentions(s, "BRISK_WITH_CUDA=OFF"));
    }
  }
  // The argument checks run before the dispatch, on every build.
  const auto negative = brisk::kernels::bias_gelu(brisk::Device::kCUDA, x.data(), nullptr, -1, 4,
                                                  brisk::kernels::GeluApproximation::kErf);
  CHECK(mentions(negative, "rows is -1"));
}
