// LayerNorm(+bias+residual) row kernel for avx512 (this file is compiled with the avx512 ISA flags).
#include "layernorm_impl.h"

namespace brisk::kernels::cpu {

void layer_norm_rows_avx512(const LayerNormArgs& args, int64_t row_begin, int64_t row_end) {
  layer_norm_rows<Avx512>(args, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
