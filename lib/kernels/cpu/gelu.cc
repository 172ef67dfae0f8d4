// bias_gelu on the CPU: the ISA choice (the kernels are the element-wise ones of cpu_kernels.h).

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "cpu_ops.h"

namespace brisk::kernels::cpu {

void bias_gelu(float* x, const float* bias, int64_t rows, int64_t cols, GeluApproximation approx) {
  const ElementwiseOp op = approx == GeluApproximation::kTanh ? ElementwiseOp::kGeluTanh : ElementwiseOp::kGeluErf;
  const ElementwiseArgs args{x, x, bias, cols, op};
  const auto kernel = select_kernel(&elementwise_rows_scalar, &elementwise_rows_avx2, &elementwise_rows_avx512);
  // GeLU costs ~20 flops per element, so smaller tasks than the memory-bound ops still pay for a thread.
  parallel_for(0, rows, row_grain(cols) / 4 + 1, [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
}

}  // namespace brisk::kernels::cpu
