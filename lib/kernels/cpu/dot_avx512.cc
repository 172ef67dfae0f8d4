// The dot product for avx512 (this file is compiled with the avx512 ISA flags).
#include "dot_impl.h"

namespace brisk::kernels::cpu {

float dot_avx512(const float* a, const float* b, int64_t n) { return dot_impl<Avx512>(a, b, n); }

}  // namespace brisk::kernels::cpu
