// The fixed-order GEMM for avx512 (this file is compiled with the avx512 ISA flags and -ffp-contract=off).
#include "gemm_fixed_order_impl.h"

namespace brisk::kernels::cpu {

void gemm_fixed_order_rows_avx512(const FixedOrderGemmArgs& g, int64_t row_begin, int64_t row_end) {
  gemm_fixed_order_rows_impl<Avx512>(g, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
