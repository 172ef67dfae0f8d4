// Mean-pooling and L2-normalisation row kernels for avx2 (this file is compiled with the avx2 ISA flags).
#include "pooling_impl.h"

namespace brisk::kernels::cpu {

void mean_pool_rows_avx2(const MeanPoolArgs& args, int64_t row_begin, int64_t row_end) {
  mean_pool_rows<Avx2>(args, row_begin, row_end);
}

void l2_normalize_rows_avx2(float* x, int64_t cols, float eps, int64_t row_begin, int64_t row_end) {
  l2_normalize_rows<Avx2>(x, cols, eps, row_begin, row_end);
}

}  // namespace brisk::kernels::cpu
