// The batcher's memory budget under a device memory cap, and the activation estimate it is compared with: pure
// functions of the runtime (lib/runtime/runtime_impl.h), checked without a GPU.
#include <catch2/catch.hpp>

#include <cstddef>

#include "brisk/core/parallel.h"
#include "runtime/native_backend.h"
#include "runtime/runtime_impl.h"

using brisk::Device;
using brisk::DType;

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;

brisk::ModelInfo minilm() {
  brisk::ModelInfo info;
  info.hidden_size = 384;
  info.intermediate_size = 1536;
  info.num_heads = 12;
  info.num_layers = 6;
  info.num_parameters = 22'700'000;
  return info;
}

}  // namespace

TEST_CASE("device memory budget: what the cap leaves after the weights, within the policy's budget",
          "[runtime][allocator]") {
  using brisk::device_memory_budget;
  // No cap: the policy's budget as it was (0 included: no budget).
  CHECK(device_memory_budget(0, 100 * kMiB, kGiB) == kGiB);
  CHECK(device_memory_budget(0, 100 * kMiB, 0) == 0);
  // The cap leaves more than the policy allows: the policy's budget.
  CHECK(device_memory_budget(4 * kGiB, kGiB, kGiB) == kGiB);
  // The cap leaves less: what it leaves.
  CHECK(device_memory_budget(2 * kGiB, 1536 * kMiB, kGiB) == 512 * kMiB);
  CHECK(device_memory_budget(2 * kGiB, 1536 * kMiB, 0) == 512 * kMiB);
  // Weights (as estimated) at or past the cap: an eighth of the cap, never 0 (which would mean no budget).
  CHECK(device_memory_budget(kGiB, 2 * kGiB, kGiB) == 128 * kMiB);
  CHECK(device_memory_budget(kGiB, kGiB, 0) == 128 * kMiB);
  CHECK(device_memory_budget(1, 5, 0) == 1);
  CHECK(device_memory_budget(7, 100, 1000) == 1);
}

TEST_CASE("device memory budget: the activation estimate counts the activation dtype and padding on cuda",
          "[runtime][allocator]") {
  const brisk::ModelInfo info = minilm();
  const brisk::BatchShape shape{8, 128, 400};  // 8 texts, the longest 128 tokens, 400 tokens in all
  brisk::RuntimeOptions cuda;
  cuda.device = Device::kCUDA;
  CHECK(brisk::runtime_activation_dtype(cuda) == DType::kF16);
  const size_t f16 = brisk::estimate_activation_bytes(info, cuda, shape, 1);
  cuda.activation_dtype = DType::kF16;
  CHECK(brisk::estimate_activation_bytes(info, cuda, shape, 1) == f16);
  cuda.activation_dtype = DType::kBF16;
  CHECK(brisk::estimate_activation_bytes(info, cuda, shape, 1) == f16);
  cuda.activation_dtype = DType::kF32;
  CHECK(brisk::runtime_activation_dtype(cuda) == DType::kF32);
  CHECK(brisk::estimate_activation_bytes(info, cuda, shape, 1) == 2 * f16);
  // f16 elements: tokens x (8 x hidden + intermediate), the padded Q/K/V/context, every text's scores per head.
  const size_t elements = 400 * (8 * 384 + 1536) + 8 * 128 * 4 * 384 + 8 * 12 * 128 * 128;
  CHECK(f16 == 2 * elements);
  // Without padding removal every per-token buffer is padded to the longest text: more memory.
  cuda.activation_dtype.reset();
  cuda.remove_padding = false;
  CHECK(brisk::estimate_activation_bytes(info, cuda, shape, 1) ==
        2 * (8 * 128 * (8 * 384 + 1536) + 8 * 12 * 128 * 128));
  CHECK(brisk::estimate_activation_bytes(info, cuda, shape, 1) > f16);

  // The CPU estimate is f32 whatever the options say about the GPU.
  brisk::RuntimeOptions cpu;
  CHECK(brisk::runtime_activation_dtype(cpu) == DType::kF32);
  const size_t on_cpu = brisk::estimate_activation_bytes(info, cpu, shape, 2);
  cpu.remove_padding = false;
  CHECK(brisk::estimate_activation_bytes(info, cpu, shape, 2) == on_cpu);
  CHECK(on_cpu % sizeof(float) == 0);
  // One 128 x 128 score matrix of floats per compute thread.
  CHECK(brisk::estimate_activation_bytes(info, cpu, shape, 3) == on_cpu + 128 * 128 * sizeof(float));
}

TEST_CASE("the cpu memory estimate counts the runtime's threads and not the asking thread's", "[runtime][allocator]") {
  brisk::RuntimeOptions cpu;
  cpu.num_threads = 3;
  CHECK(brisk::estimate_cpu_threads(cpu) == 3);
  brisk::ScopedNumThreads one(1);
  CHECK(brisk::estimate_cpu_threads(cpu) == 3);
  cpu.num_threads = 0;  // the CPUs this process may use, not this thread's count
  CHECK(brisk::estimate_cpu_threads(cpu) == brisk::available_cpus());
}
