// bias_gelu on the CPU: the one ISA dispatch point (the kernels are the element-wise ones of cpu_kernels.h).
#include "brisk/kernels/gelu.h"

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"

namespace brisk {

template <>
void bias_gelu<Device::kCPU>(float* x, const float* bias, int64_t rows, int64_t cols, GeluApproximation approx) {
  if (rows <= 0 || cols <= 0) return;
  namespace cpu = kernels::cpu;
  const cpu::ElementwiseOp op =
      approx == GeluApproximation::kTanh ? cpu::ElementwiseOp::kGeluTanh : cpu::ElementwiseOp::kGeluErf;
  const cpu::ElementwiseArgs args{x, x, bias, cols, op};
  const auto kernel =
      cpu::select_kernel(&cpu::elementwise_rows_scalar, &cpu::elementwise_rows_avx2, &cpu::elementwise_rows_avx512);
  // GeLU costs ~20 flops per element, so smaller tasks than the memory-bound ops still pay for a thread.
  parallel_for(0, rows, cpu::row_grain(cols) / 4 + 1, [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
}

}  // namespace brisk
