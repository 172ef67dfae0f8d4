// Private to lib/kernels: the fixed-order f32 GEMM of reproducible arithmetic (brisk/core/internal/reproducible.h),
// which the Linear layers and float attention run in place of oneDNN under a ReproducibleScope.
//
// C[m, n] = A[m, k] · B[k, n], row-major with leading dimensions. Element (i, j) is, on every ISA level:
//   s = 0;  for p = 0 .. k-1: s = s + A[i, p] * B[p, j]     (one rounding per multiply and per add: no FMA)
//   s = s + bias[j]                                          (with a bias)
//   C[i, j] = C[i, j] + s  (accumulate)  or  C[i, j] = s
// The AVX2 and AVX-512 versions give each j a lane of its own and keep that order, so their bits are the scalar
// reference's, whatever the CPU, the level or the split of the rows over threads. The three translation units are
// compiled with -ffp-contract=off (lib/CMakeLists.txt), so that the compiler fuses no multiply-add either.
//
//   const FixedOrderGemmArgs g{x, k, wt, n, bias, /*accumulate=*/false, y, n, n, k};   // y = x · wt + bias
//   gemm_fixed_order(g, rows);
//
// Thread safety: reentrant; concurrent calls must write disjoint C.
#pragma once

#include <cstdint>

namespace brisk::kernels::cpu {

struct FixedOrderGemmArgs {
  const float* a;  // [m, lda]
  int64_t lda;
  const float* b;  // [k, ldb]
  int64_t ldb;
  const float* bias;  // nullable, [n]
  bool accumulate;
  float* c;  // [m, ldc]
  int64_t ldc;
  int64_t n;
  int64_t k;
};

// Rows [row_begin, row_end) of C.
void gemm_fixed_order_rows_scalar(const FixedOrderGemmArgs& g, int64_t row_begin, int64_t row_end);
void gemm_fixed_order_rows_avx2(const FixedOrderGemmArgs& g, int64_t row_begin, int64_t row_end);
void gemm_fixed_order_rows_avx512(const FixedOrderGemmArgs& g, int64_t row_begin, int64_t row_end);

// Rows [0, m) of C over parallel_for, on the widest vectors of the level in use (cpu_isa(), not the scalar kernels
// reproducible arithmetic picks elsewhere: every level gives the same bits here).
void gemm_fixed_order(const FixedOrderGemmArgs& g, int64_t m);

}  // namespace brisk::kernels::cpu
