// vector_exp / vector_erf / vector_tanh on the CPU: the one ISA dispatch point. The flat array is cut into
// fixed-size rows so that brisk::parallel_for can split it.
#include "brisk/kernels/vector_math.h"

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"

namespace brisk {
namespace {

void run_elementwise(const float* x, float* out, int64_t n, kernels::cpu::ElementwiseOp op) {
  if (n <= 0) return;
  namespace cpu = kernels::cpu;
  const auto kernel =
      cpu::select_kernel(&cpu::elementwise_rows_scalar, &cpu::elementwise_rows_avx2, &cpu::elementwise_rows_avx512);
  constexpr int64_t kBlock = 4096;  // elements per row of the split; a multiple of every vector width
  const int64_t full_rows = n / kBlock;
  const cpu::ElementwiseArgs args{x, out, nullptr, kBlock, op};
  parallel_for(0, full_rows, /*grain=*/8, [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
  if (const int64_t rest = n - full_rows * kBlock; rest > 0) {
    const int64_t offset = full_rows * kBlock;
    kernel(cpu::ElementwiseArgs{x + offset, out + offset, nullptr, rest, op}, 0, 1);
  }
}

}  // namespace

template <>
void vector_exp<Device::kCPU>(const float* x, float* out, int64_t n) {
  run_elementwise(x, out, n, kernels::cpu::ElementwiseOp::kExp);
}

template <>
void vector_erf<Device::kCPU>(const float* x, float* out, int64_t n) {
  run_elementwise(x, out, n, kernels::cpu::ElementwiseOp::kErf);
}

template <>
void vector_tanh<Device::kCPU>(const float* x, float* out, int64_t n) {
  run_elementwise(x, out, n, kernels::cpu::ElementwiseOp::kTanh);
}

}  // namespace brisk
