// int8 self-attention's per-(sequence, head) kernels for avx512 (this file is compiled with the avx512 ISA flags).
#include "attention_int8_impl.h"

namespace brisk::kernels::cpu {

BRISK_DEFINE_ATTENTION_INT8(avx512, Avx512)

}  // namespace brisk::kernels::cpu
