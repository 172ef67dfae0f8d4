// LayerNorm(+bias+residual) row kernel for avx2 (this file is compiled with the avx2 ISA flags).
#include "layernorm_impl.h"

namespace brisk::kernels::cpu {

void layer_norm_rows_avx2(const LayerNormArgs& args, int64_t row_begin, int64_t row_end) {
  layer_norm_rows<Avx2>(args, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
