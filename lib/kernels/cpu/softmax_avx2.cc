// Masked-softmax row kernel for avx2 (this file is compiled with the avx2 ISA flags).
#include "softmax_impl.h"

namespace brisk::kernels::cpu {

void softmax_rows_avx2(const SoftmaxArgs& args, int64_t row_begin, int64_t row_end) {
  softmax_rows<Avx2>(args, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
