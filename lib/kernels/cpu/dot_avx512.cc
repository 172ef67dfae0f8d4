// The dot product for avx512 (this file is compiled with the avx512 ISA flags).
#include <immintrin.h>

#include "cpu_kernels.h"

namespace brisk::kernels::cpu {

float dot_avx512(const float* a, const float* b, int64_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
  alignas(64) float lanes[16];  // not _mm512_reduce_add_ps: g++ 12 warns inside it (-Wuninitialized)
  _mm512_store_ps(lanes, _mm512_add_ps(acc0, acc1));
  float s = 0;
  for (float lane : lanes) s += lane;
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace brisk::kernels::cpu
