// Masked-softmax row kernel for avx512 (this file is compiled with the avx512 ISA flags).
#include "softmax_impl.h"

namespace brisk::kernels::cpu {

void softmax_rows_avx512(const SoftmaxArgs& args, int64_t row_begin, int64_t row_end) {
  softmax_rows<Avx512>(args, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
