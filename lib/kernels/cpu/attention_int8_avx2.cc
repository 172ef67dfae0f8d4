// int8 self-attention's per-(sequence, head) kernels for avx2 (this file is compiled with the avx2 ISA flags).
#include "attention_int8_impl.h"

namespace brisk::kernels::cpu {

BRISK_DEFINE_ATTENTION_INT8(avx2, Avx2)

}  // namespace brisk::kernels::cpu
