// The dot product for avx2 (this file is compiled with the avx2 ISA flags).
#include "dot_impl.h"

namespace brisk::kernels::cpu {

float dot_avx2(const float* a, const float* b, int64_t n) { return dot_impl<Avx2>(a, b, n); }

}  // namespace brisk::kernels::cpu
