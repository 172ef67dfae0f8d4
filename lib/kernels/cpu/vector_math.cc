// vector_exp / vector_erf / vector_tanh on the CPU: the ISA choice. The flat array is cut into fixed-size rows so
// that brisk::parallel_for can split it.

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "cpu_ops.h"

namespace brisk::kernels::cpu {

void vector_unary(UnaryOp unary, const float* x, float* out, int64_t n) {
  const ElementwiseOp op = unary == UnaryOp::kExp   ? ElementwiseOp::kExp
                           : unary == UnaryOp::kErf ? ElementwiseOp::kErf
                                                    : ElementwiseOp::kTanh;
  const auto kernel = select_kernel(&elementwise_rows_scalar, &elementwise_rows_avx2, &elementwise_rows_avx512);
  constexpr int64_t kBlock = 4096;  // elements per row of the split; a multiple of every vector width
  const int64_t full_rows = n / kBlock;
  const ElementwiseArgs args{x, out, nullptr, kBlock, op};
  parallel_for(0, full_rows, /*grain=*/8, [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
  if (const int64_t rest = n - full_rows * kBlock; rest > 0) {
    const int64_t offset = full_rows * kBlock;
    kernel(ElementwiseArgs{x + offset, out + offset, nullptr, rest, op}, 0, 1);
  }
}

}  // namespace brisk::kernels::cpu
