// The fixed-order GEMM for avx2 (this file is compiled with the avx2 ISA flags and -ffp-contract=off).
#include "gemm_fixed_order_impl.h"

namespace brisk::kernels::cpu {

void gemm_fixed_order_rows_avx2(const FixedOrderGemmArgs& g, int64_t row_begin, int64_t row_end) {
  gemm_fixed_order_rows_impl<Avx2>(g, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
