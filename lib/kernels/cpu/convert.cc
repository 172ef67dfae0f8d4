// convert on the CPU: element-wise float <-> f16 / bf16 with the scalar conversions of brisk/core/half.h.
#include <type_traits>

#include "brisk/core/half.h"
#include "brisk/core/parallel.h"
#include "cpu_ops.h"

namespace brisk::kernels::cpu {
namespace {

template <typename T>
float to_float(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, float16_t>) {
    return f16_to_float(v.bits);
  } else {
    return bf16_to_float(v.bits);
  }
}

template <typename T>
T from_float(float f) {
  if constexpr (std::is_same_v<T, float>) {
    return f;
  } else if constexpr (std::is_same_v<T, float16_t>) {
    return float16_t{float_to_f16(f)};
  } else {
    return bfloat16_t{float_to_bf16(f)};
  }
}

}  // namespace

template <typename From, typename To>
void convert(const From* in, To* out, int64_t n) {
  parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = from_float<To>(to_float(in[i]));
  });
}

#define BRISK_INSTANTIATE_CONVERT(From, To) template void convert<From, To>(const From*, To*, int64_t);
BRISK_INSTANTIATE_CONVERT(float, float16_t)
BRISK_INSTANTIATE_CONVERT(float, bfloat16_t)
BRISK_INSTANTIATE_CONVERT(float16_t, float)
BRISK_INSTANTIATE_CONVERT(bfloat16_t, float)
BRISK_INSTANTIATE_CONVERT(float16_t, bfloat16_t)
BRISK_INSTANTIATE_CONVERT(bfloat16_t, float16_t)
#undef BRISK_INSTANTIATE_CONVERT

}  // namespace brisk::kernels::cpu
