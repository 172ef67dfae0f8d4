// Element-wise (GeLU, exp, erf, tanh) row kernel for avx2 (this file is compiled with the avx2 ISA flags).
#include "elementwise_impl.h"

namespace brisk::kernels::cpu {

void elementwise_rows_avx2(const ElementwiseArgs& args, int64_t row_begin, int64_t row_end) {
  elementwise_rows<Avx2>(args, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
