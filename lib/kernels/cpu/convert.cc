// convert on the CPU: element-wise float <-> f16 / bf16 with the scalar conversions of brisk/core/half.h.
#include "brisk/core/half.h"
#include "brisk/core/parallel.h"
#include "cpu_ops.h"

namespace brisk::kernels::cpu {
template <typename From, typename To>
void convert(const From* in, To* out, int64_t n) {
  parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = from_float<To>(to_float(in[i]));
  });
}

#define BRISK_INSTANTIATE(From, To) template void convert<From, To>(const From*, To*, int64_t);
BRISK_FOR_EACH_CONVERSION(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels::cpu
