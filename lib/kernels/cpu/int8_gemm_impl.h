// Private to the ISA translation units of int8_gemm.h (int8_gemm_avx512.cc, int8_gemm_int16_avx512.cc,
// int8_gemm_avx_vnni.cc, int8_gemm_int16_avx2.cc): the parts every vector kernel shares, as templates over the
// float wrapper S of simd.h and an integer-dot traits type D.
//
// - quantize_rows<S, Code>: per-row quantisation to u8 (q + 128, the VNNI kernels) or s16 (q, the vpmaddwd ones).
// - gemm_block<S, D, kMaxRows, kMaxVectors>: the tiling of rows x panels, each tile computed by D's micro-kernel
//   into a small int32 buffer (exact dot products, one panel-relative row of kInt8PanelColumns per tile row), then
//   the fused epilogue: convert, scale, add the bias, apply the activation, store with a lane mask for the last
//   columns.
//
// A micro-kernel D provides:
//   using Code;                    the activation element (uint8_t or int16_t)
//   static constexpr int kColumns; columns of one accumulator vector
//   template <int MR, int NV> static void tile(const Code* x, int64_t ldq, const int8_t* wp, int64_t stride,
//       int64_t groups, const int32_t* compensation, int32_t* acc);
// computing acc[r * kInt8PanelColumns + c] for MR rows and NV * kColumns columns from the panel bytes at wp
// (stride bytes per group of 4 k).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "int8_gemm.h"
#include "quantize_rows_impl.h"
#include "simd.h"
#include "simd_math.h"

namespace brisk::kernels::cpu {
namespace {

// ---- Quantisation ----

#if defined(__AVX512F__)
BRISK_SIMD_INLINE void store_codes(uint8_t* q, __m512 rounded_clamped) {
  const __m512i i = _mm512_add_epi32(_mm512_cvtps_epi32(rounded_clamped), _mm512_set1_epi32(128));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(i));
}
BRISK_SIMD_INLINE void store_codes(int16_t* q, __m512 rounded_clamped) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(rounded_clamped)));
}
#endif
#if defined(__AVX2__)
BRISK_SIMD_INLINE void store_codes(uint8_t* q, __m256 rounded_clamped) {
  const __m256i i = _mm256_add_epi32(_mm256_cvtps_epi32(rounded_clamped), _mm256_set1_epi32(128));
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));  // 8 x s16
  _mm_storel_epi64(reinterpret_cast<__m128i*>(q), _mm_packus_epi16(w, w));
}
BRISK_SIMD_INLINE void store_codes(int16_t* q, __m256 rounded_clamped) {
  const __m256i i = _mm256_cvtps_epi32(rounded_clamped);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q),
                   _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1)));
}
#endif

template <typename Code>
constexpr Code code_of(int q) {
  if constexpr (sizeof(Code) == 1) return static_cast<Code>(q + 128);
  return static_cast<Code>(q);
}

template <typename S, typename Code, bool kChannelScale>
void quantize_rows_impl(const QuantizeActivationsArgs& a, int64_t row_begin, int64_t row_end) {
  const int64_t k = a.k;
  const float* cs = a.channel_scale;
  const auto load = [&](const float* x, int64_t c) {
    if constexpr (kChannelScale) return S::mul(S::load(x + c), S::load(cs + c));
    return S::load(x + c);
  };
  const auto load_tail = [&](const float* x, int64_t c, typename S::Tail mask) {
    if constexpr (kChannelScale) return S::mul(S::load_partial(x + c, mask), S::load_partial(cs + c, mask));
    return S::load_partial(x + c, mask);
  };
  const typename S::V lo = S::set1(-127.0f), hi = S::set1(127.0f);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + r * a.ldx;
    Code* q = static_cast<Code*>(a.xq) + r * a.ldq;
    float inv = 0.0f;
    if (a.static_scale > 0.0f) {
      a.row_scales[r] = a.static_scale;
      inv = 1.0f / a.static_scale;
    } else {
      typename S::V vmax = S::zero();
      int64_t c = 0;
      for (; c + S::kWidth <= k; c += S::kWidth) vmax = S::max(vmax, S::abs(load(x, c)));
      if (c < k) vmax = S::max(vmax, S::abs(load_tail(x, c, S::tail_mask(k - c))));
      const float absmax = S::reduce_max(vmax);
      if (absmax == 0.0f) {
        a.row_scales[r] = 1.0f;
        std::fill(q, q + a.ldq, code_of<Code>(0));
        continue;
      }
      a.row_scales[r] = absmax / 127.0f;
      inv = 127.0f / absmax;
    }
    // Clamped before rounding (the bounds are integers, so this equals clamping after), rounded half to even by
    // the conversion (MXCSR's default), as the scalar reference's nearbyint.
    const typename S::V vinv = S::set1(inv);
    int64_t c = 0;
    for (; c + S::kWidth <= k; c += S::kWidth) store_codes(q + c, S::min(S::max(S::mul(load(x, c), vinv), lo), hi));
    for (; c < k; ++c) {
      const float v = cs != nullptr ? x[c] * cs[c] : x[c];
      q[c] = code_of<Code>(static_cast<int>(std::nearbyint(clamp_to_code(v * inv))));
    }
    std::fill(q + k, q + a.ldq, code_of<Code>(0));
  }
}

template <typename S, typename Code>
void quantize_rows(const QuantizeActivationsArgs& a, int64_t row_begin, int64_t row_end) {
  if (a.channel_scale != nullptr) {
    quantize_rows_impl<S, Code, true>(a, row_begin, row_end);
  } else {
    quantize_rows_impl<S, Code, false>(a, row_begin, row_end);
  }
}

// ---- The GEMM block: tiles and the fused epilogue ----

template <typename S>
BRISK_SIMD_INLINE typename S::V int32_to_float(const int32_t* p) {
  if constexpr (S::kWidth == 16) {
    return _mm512_cvtepi32_ps(_mm512_loadu_si512(p));
  } else {
    return _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
}

// y[row + r, col + c] = epi(float(acc[r * kInt8PanelColumns + c]) * row_scale * col_scale + bias) for c < cols
// (the columns of one panel), stopping at n; kDots stores acc's bits instead.
template <typename S, Int8Epilogue E>
void tile_epilogue(const Int8GemmArgs& a, const int32_t* acc, int64_t row, int64_t rows, int64_t col, int64_t cols) {
  const int64_t n = a.w->n;
  for (int64_t c = 0; c < cols; c += S::kWidth) {
    const int64_t j = col + c;
    const int64_t valid = std::min<int64_t>(S::kWidth, n - j);
    if (valid <= 0) break;
    const typename S::Tail mask = S::tail_mask(valid);
    constexpr bool scaled = E != Int8Epilogue::kDots;
    const typename S::V col_scale = scaled ? S::load_partial(a.col_scales + j, mask) : S::zero();
    const typename S::V bias = scaled && a.bias != nullptr ? S::load_partial(a.bias + j, mask) : S::zero();
    for (int64_t r = 0; r < rows; ++r) {
      float* y = a.y + (row + r) * a.ldy + j;
      typename S::V out;
      if constexpr (E == Int8Epilogue::kDots) {  // the int32 bits as they are (intrinsic loads may alias)
        out = S::load(reinterpret_cast<const float*>(acc + r * kInt8PanelColumns + c));
      } else {
        const typename S::V scale = S::mul(S::set1(a.row_scales[row + r]), col_scale);
        out = S::fmadd(int32_to_float<S>(acc + r * kInt8PanelColumns + c), scale, bias);
      }
      if constexpr (E == Int8Epilogue::kBiasGeluErf) out = vmath::gelu_erf<S>(out);
      if constexpr (E == Int8Epilogue::kBiasGeluTanh) out = vmath::gelu_tanh<S>(out);
      if constexpr (E == Int8Epilogue::kBiasRelu) out = S::max(out, S::zero());
      if constexpr (E == Int8Epilogue::kBiasAccumulate) out = S::add(S::load_partial(y, mask), out);
      if (valid == S::kWidth) {
        S::store(y, out);
      } else {
        S::store_partial(y, out, mask);
      }
    }
  }
}

template <typename S>
void tile_epilogue_any(const Int8GemmArgs& a, const int32_t* acc, int64_t row, int64_t rows, int64_t col,
                       int64_t cols) {
  switch (a.epilogue) {
    case Int8Epilogue::kDots: return tile_epilogue<S, Int8Epilogue::kDots>(a, acc, row, rows, col, cols);
    case Int8Epilogue::kBias: return tile_epilogue<S, Int8Epilogue::kBias>(a, acc, row, rows, col, cols);
    case Int8Epilogue::kBiasGeluErf: return tile_epilogue<S, Int8Epilogue::kBiasGeluErf>(a, acc, row, rows, col, cols);
    case Int8Epilogue::kBiasGeluTanh:
      return tile_epilogue<S, Int8Epilogue::kBiasGeluTanh>(a, acc, row, rows, col, cols);
    case Int8Epilogue::kBiasRelu: return tile_epilogue<S, Int8Epilogue::kBiasRelu>(a, acc, row, rows, col, cols);
    case Int8Epilogue::kBiasAccumulate:
      return tile_epilogue<S, Int8Epilogue::kBiasAccumulate>(a, acc, row, rows, col, cols);
  }
}

template <typename D, int kMaxRows, int kMaxVectors>
struct TileTable {
  using Code = typename D::Code;
  using Fn = void (*)(const Code*, int64_t, const int8_t*, int64_t, int64_t, const int32_t*, int32_t*);
  template <int MR, int... NV>
  static constexpr std::array<Fn, sizeof...(NV)> row(std::integer_sequence<int, NV...>) {
    return {&D::template tile<MR, NV + 1>...};
  }
  template <int... MR>
  static constexpr std::array<std::array<Fn, kMaxVectors>, kMaxRows> all(std::integer_sequence<int, MR...>) {
    return {row<MR + 1>(std::make_integer_sequence<int, kMaxVectors>())...};
  }
  static constexpr std::array<std::array<Fn, kMaxVectors>, kMaxRows> kFns =
      all(std::make_integer_sequence<int, kMaxRows>());
};

// Rows [row_begin, row_end) x panels [panel_begin, panel_end): per panel, column tiles of at most kMaxVectors
// accumulator vectors, each over equal row tiles of at most kMaxRows rows (16 rows: 6 + 5 + 5, not 6 + 6 + 4).
template <typename S, typename D, int kMaxRows, int kMaxVectors>
void gemm_block(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin, int64_t panel_end) {
  using Code = typename D::Code;
  constexpr int64_t kTileColumns = int64_t{kMaxVectors} * D::kColumns;
  const Int8PackedWeights& w = *a.w;
  const int64_t groups = w.k_padded / 4;
  const int64_t rows = row_end - row_begin;
  if (rows <= 0) return;
  const int64_t tiles = (rows + kMaxRows - 1) / kMaxRows;
  const Code* xq = static_cast<const Code*>(a.xq);
  alignas(64) int32_t acc[kMaxRows * kInt8PanelColumns];
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const int64_t panel_col = p * kInt8PanelColumns;
    const int64_t width = std::min(kInt8PanelColumns, w.n_padded - panel_col);
    const int8_t* panel = w.data.data() + panel_col * w.k_padded;
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t row = row_begin + rows * t / tiles;
      const int64_t mr = row_begin + rows * (t + 1) / tiles - row;
      for (int64_t c = 0; c < width && panel_col + c < w.n; c += kTileColumns) {
        const int64_t cols = std::min(kTileColumns, width - c);
        const int nv = static_cast<int>(cols / D::kColumns);
        TileTable<D, kMaxRows, kMaxVectors>::kFns[mr - 1][nv - 1](
            xq + row * a.ldq, a.ldq, panel + c * 4, width * 4, groups, w.compensation.data() + panel_col + c, acc + c);
      }
      tile_epilogue_any<S>(a, acc, row, mr, panel_col, width);
    }
  }
}

// ---- Micro-kernels ----

// u8 x s8 dot products of 4 (vpdpbusd), no saturation. V provides the vector type I, kColumns (int32 lanes),
// load/store of int32 and of 64-byte-aligned weights, a dword broadcast and dpbusd(acc, u8, s8).
template <typename V>
struct VnniDot {
  using Code = uint8_t;
  static constexpr int kColumns = V::kLanes;

  template <int MR, int NV>
  __attribute__((noinline)) static void tile(const uint8_t* x, int64_t ldq, const int8_t* wp, int64_t stride,
                                             int64_t groups, const int32_t* compensation, int32_t* acc) {
    typename V::I c[MR][NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const typename V::I start = V::load(compensation + V::kLanes * v);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) c[r][v] = start;
    }
    for (int64_t g = 0; g < groups; ++g) {
      typename V::I b[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) b[v] = V::load(reinterpret_cast<const int32_t*>(wp) + V::kLanes * v);
      wp += stride;
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        int32_t four;
        std::memcpy(&four, x + r * ldq + 4 * g, sizeof(four));
        const typename V::I a = V::set1(four);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) c[r][v] = V::dpbusd(c[r][v], a, b[v]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) V::store(acc + r * kInt8PanelColumns + V::kLanes * v, c[r][v]);
    }
  }
};

// s16 x s16 pairs summed in int32 (vpmaddwd), exact. One "vector" of this kernel is two accumulators: the weights'
// 4 bytes per column widened to s16 give V::kLanes / 2 columns per register, each column's dot product split over
// two int32 lanes (k = 4g, 4g+1 and 4g+2, 4g+3), summed at the end by V::sum_pairs into V::kLanes columns. V
// provides I, kLanes, widen (V::kLanes / 2 columns x 4 s8 bytes to s16), set1_64 (4 s16 activations),
// madd_add(c, a, b) (c += vpmaddwd(a, b)), zero, and sum_pairs(lo, hi, out).
template <typename V>
struct Int16Dot {
  using Code = int16_t;
  static constexpr int kColumns = V::kLanes;

  template <int MR, int NV>
  __attribute__((noinline)) static void tile(const int16_t* x, int64_t ldq, const int8_t* wp, int64_t stride,
                                             int64_t groups, const int32_t*, int32_t* acc) {
    constexpr int kHalfBytes = V::kLanes / 2 * 4;  // bytes of one register's columns in a group
    typename V::I c[MR][2 * NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
      for (int v = 0; v < 2 * NV; ++v) c[r][v] = V::zero();
    }
    for (int64_t g = 0; g < groups; ++g) {
      typename V::I b[2 * NV];
#pragma GCC unroll 8
      for (int v = 0; v < 2 * NV; ++v) b[v] = V::widen(wp + kHalfBytes * v);
      wp += stride;
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        int64_t four;
        std::memcpy(&four, x + r * ldq + 4 * g, sizeof(four));
        const typename V::I a = V::set1_64(four);
#pragma GCC unroll 8
        for (int v = 0; v < 2 * NV; ++v) V::madd_add(c[r][v], a, b[v]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        V::sum_pairs(c[r][2 * v], c[r][2 * v + 1], acc + r * kInt8PanelColumns + V::kLanes * v);
    }
  }
};

}  // namespace
}  // namespace brisk::kernels::cpu
