// brisk::kernels::dot on the CPU: the scalar reference and the one ISA dispatch point (AVX2 and AVX-512 versions are in
// dot_avx2.cc and dot_avx512.cc).
#include "brisk/kernels/vector_math.h"
#include "cpu_kernels.h"

namespace brisk::kernels {
namespace cpu {

float dot_scalar(const float* a, const float* b, int64_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

}  // namespace cpu

float dot(const float* a, const float* b, int64_t n) {
  if (n <= 0) return 0.0f;
  return cpu::select_kernel(&cpu::dot_scalar, &cpu::dot_avx2, &cpu::dot_avx512)(a, b, n);
}

}  // namespace brisk::kernels
