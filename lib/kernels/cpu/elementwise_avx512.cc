// Element-wise (GeLU, exp, erf, tanh) row kernel for avx512 (this file is compiled with the avx512 ISA flags).
#include "elementwise_impl.h"

namespace brisk::kernels::cpu {

void elementwise_rows_avx512(const ElementwiseArgs& args, int64_t row_begin, int64_t row_end) {
  elementwise_rows<Avx512>(args, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
