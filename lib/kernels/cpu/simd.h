// Private to lib/kernels/cpu: thin SIMD wrappers that let one kernel template serve every ISA level.
//
// Include this only from a translation unit compiled for that ISA (*_avx512.cc, *_avx2.cc). Each ISA struct is
// defined only when the compiler targets it (__AVX512F__, __AVX2__ + __FMA__), and everything here lives in an
// anonymous namespace so that code compiled with different ISA flags never merges across translation units
// (an inline function emitted with AVX-512 instructions must not be picked by the linker for the AVX2 path).
//
//   using S = Avx512;
//   S::V acc = S::zero();
//   for (; i + S::kWidth <= n; i += S::kWidth) acc = S::add(acc, S::load(x + i));
//   if (i < n) acc = S::add(acc, S::load_partial(x + i, S::tail_mask(n - i)));   // masked-out lanes read as 0
//   float total = S::reduce_add(acc);
//
// Thread safety: stateless.
#pragma once

// GCC 12 reports -Wmaybe-uninitialized (and, in some inlining contexts such as a horizontal sum, -Wuninitialized)
// inside its own AVX-512 intrinsics (the `__Y = __Y` idiom of _mm*_undefined_*); the warning is located in the
// intrinsic headers, so silencing it for their lines suffices.
#if defined(__GNUC__) && !defined(__clang__)  // clang (the fuzz preset) has no such warning
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include <cstdint>

#define BRISK_SIMD_INLINE inline __attribute__((always_inline))

namespace brisk::kernels::cpu {
namespace {

#if defined(__AVX512F__) && defined(__AVX512DQ__)
struct Avx512 {
  using V = __m512;        // 16 floats
  using I = __m512i;       // 16 int32
  using M = __mmask16;     // comparison result
  using Tail = __mmask16;  // lanes [0, n) of a partial vector
  static constexpr int64_t kWidth = 16;

  static BRISK_SIMD_INLINE V zero() { return _mm512_setzero_ps(); }
  static BRISK_SIMD_INLINE V set1(float v) { return _mm512_set1_ps(v); }
  static BRISK_SIMD_INLINE V load(const float* p) { return _mm512_loadu_ps(p); }
  static BRISK_SIMD_INLINE void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static BRISK_SIMD_INLINE Tail tail_mask(int64_t n) {
    return static_cast<__mmask16>((1u << static_cast<unsigned>(n)) - 1u);
  }
  // Masked-out lanes read as 0 and are never touched in memory (no fault past the end of a buffer).
  static BRISK_SIMD_INLINE V load_partial(const float* p, Tail m) { return _mm512_maskz_loadu_ps(m, p); }
  static BRISK_SIMD_INLINE void store_partial(float* p, V v, Tail m) { _mm512_mask_storeu_ps(p, m, v); }
  // Lanes outside `m` become `fill`.
  static BRISK_SIMD_INLINE V keep(Tail m, V v, V fill) { return _mm512_mask_blend_ps(m, fill, v); }

  static BRISK_SIMD_INLINE V add(V a, V b) { return _mm512_add_ps(a, b); }
  static BRISK_SIMD_INLINE V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static BRISK_SIMD_INLINE V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static BRISK_SIMD_INLINE V div(V a, V b) { return _mm512_div_ps(a, b); }
  // 1 / b for finite, normal b: vrcp14ps (relative error < 2^-14) and one Newton step, r (2 - b r), to ~2^-23
  // (a few ulp; ~4x the throughput of vdivps on this width).
  static BRISK_SIMD_INLINE V recip(V b) {
    const V r = _mm512_rcp14_ps(b);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(b, r, _mm512_set1_ps(2.0f)));
  }
  static BRISK_SIMD_INLINE V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }    // a*b + c
  static BRISK_SIMD_INLINE V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a*b
  static BRISK_SIMD_INLINE V max(V a, V b) { return _mm512_max_ps(a, b); }
  static BRISK_SIMD_INLINE V min(V a, V b) { return _mm512_min_ps(a, b); }
  static BRISK_SIMD_INLINE V abs(V a) { return _mm512_abs_ps(a); }
  static BRISK_SIMD_INLINE V sign_bits(V a) {  // a with everything but the sign bit cleared
    return _mm512_and_ps(a, _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(0x80000000u))));
  }
  static BRISK_SIMD_INLINE V bit_or(V a, V b) { return _mm512_or_ps(a, b); }
  static BRISK_SIMD_INLINE M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static BRISK_SIMD_INLINE M gt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static BRISK_SIMD_INLINE V select(M m, V if_true, V if_false) { return _mm512_mask_blend_ps(m, if_false, if_true); }
  // Reinterprets the low mantissa bits of `t` (an integer k held as magic + k) as the float 2^(k - 127).
  static BRISK_SIMD_INLINE V shift_to_exponent(V t) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(t), 23));
  }

  static BRISK_SIMD_INLINE float reduce_add(V v) {
    // Fold 512 -> 128 bits with in-register lane shuffles (GCC 12 warns falsely on the extract intrinsics).
    __m512 t = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    t = _mm512_add_ps(t, _mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
    __m128 s4 = _mm512_castps512_ps128(t);
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
    return _mm_cvtss_f32(s4);
  }
  static BRISK_SIMD_INLINE float reduce_max(V v) {
    __m512 t = _mm512_max_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    t = _mm512_max_ps(t, _mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
    __m128 s4 = _mm512_castps512_ps128(t);
    s4 = _mm_max_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_max_ss(s4, _mm_movehdup_ps(s4));
    return _mm_cvtss_f32(s4);
  }
  static BRISK_SIMD_INLINE float reduce_min(V v) {
    __m512 t = _mm512_min_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    t = _mm512_min_ps(t, _mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
    __m128 s4 = _mm512_castps512_ps128(t);
    s4 = _mm_min_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_min_ss(s4, _mm_movehdup_ps(s4));
    return _mm_cvtss_f32(s4);
  }
};
#endif  // __AVX512F__

#if defined(__AVX2__) && defined(__FMA__)
struct Avx2 {
  using V = __m256;  // 8 floats
  using I = __m256i;
  using M = __m256;  // comparison result: all-ones / all-zeros lanes
  using Tail = __m256i;
  static constexpr int64_t kWidth = 8;

  static BRISK_SIMD_INLINE V zero() { return _mm256_setzero_ps(); }
  static BRISK_SIMD_INLINE V set1(float v) { return _mm256_set1_ps(v); }
  static BRISK_SIMD_INLINE V load(const float* p) { return _mm256_loadu_ps(p); }
  static BRISK_SIMD_INLINE void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static BRISK_SIMD_INLINE Tail tail_mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static BRISK_SIMD_INLINE V load_partial(const float* p, Tail m) { return _mm256_maskload_ps(p, m); }
  static BRISK_SIMD_INLINE void store_partial(float* p, V v, Tail m) { _mm256_maskstore_ps(p, m, v); }
  static BRISK_SIMD_INLINE V keep(Tail m, V v, V fill) { return _mm256_blendv_ps(fill, v, _mm256_castsi256_ps(m)); }

  static BRISK_SIMD_INLINE V add(V a, V b) { return _mm256_add_ps(a, b); }
  static BRISK_SIMD_INLINE V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static BRISK_SIMD_INLINE V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static BRISK_SIMD_INLINE V div(V a, V b) { return _mm256_div_ps(a, b); }
  // 1 / b for finite, normal b: vrcpps (relative error < 1.5 * 2^-12) and one Newton step, to ~2^-22.
  static BRISK_SIMD_INLINE V recip(V b) {
    const V r = _mm256_rcp_ps(b);
    return _mm256_mul_ps(r, _mm256_fnmadd_ps(b, r, _mm256_set1_ps(2.0f)));
  }
  static BRISK_SIMD_INLINE V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static BRISK_SIMD_INLINE V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  static BRISK_SIMD_INLINE V max(V a, V b) { return _mm256_max_ps(a, b); }
  static BRISK_SIMD_INLINE V min(V a, V b) { return _mm256_min_ps(a, b); }
  static BRISK_SIMD_INLINE V abs(V a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
  static BRISK_SIMD_INLINE V sign_bits(V a) {
    return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u))));
  }
  static BRISK_SIMD_INLINE V bit_or(V a, V b) { return _mm256_or_ps(a, b); }
  static BRISK_SIMD_INLINE M lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static BRISK_SIMD_INLINE M gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static BRISK_SIMD_INLINE V select(M m, V if_true, V if_false) { return _mm256_blendv_ps(if_false, if_true, m); }
  static BRISK_SIMD_INLINE V shift_to_exponent(V t) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23));
  }

  static BRISK_SIMD_INLINE float reduce_add(V v) {
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
    return _mm_cvtss_f32(s4);
  }
  static BRISK_SIMD_INLINE float reduce_max(V v) {
    __m128 s4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s4 = _mm_max_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_max_ss(s4, _mm_movehdup_ps(s4));
    return _mm_cvtss_f32(s4);
  }
  static BRISK_SIMD_INLINE float reduce_min(V v) {
    __m128 s4 = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s4 = _mm_min_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_min_ss(s4, _mm_movehdup_ps(s4));
    return _mm_cvtss_f32(s4);
  }
};
#endif  // __AVX2__ && __FMA__

}  // namespace
}  // namespace brisk::kernels::cpu
