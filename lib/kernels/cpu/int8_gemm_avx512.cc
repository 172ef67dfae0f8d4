// The AVX-512 kernels of int8_gemm.h (this file is compiled with the avx512 ISA flags, VNNI included): the
// vpdpbusd GEMM micro-kernel with its fused epilogue, and the row quantisation.
//
// Micro-kernel: a tile of up to 6 rows x 64 columns (4 zmm of 16 int32 per row: 24 accumulators, 4 weight
// registers, 1 broadcast). Per group of 4 k it loads the panel's 4 x 64 bytes once (contiguous, aligned),
// broadcasts each row's 4 activation bytes, and issues rows x 4 vpdpbusd. The accumulators start at the
// compensation (-128 * column sums), so they end as the exact signed dot products. They go through a small
// int32 buffer to the epilogue (rows x 4 stores and loads against rows x 4 x k/4 vpdpbusd), which converts,
// scales, adds the bias, applies the activation and stores with a lane mask for the last columns.
#include <algorithm>
#include <cstring>

#include "int8_gemm.h"
#include "simd_math.h"

namespace brisk::kernels::cpu {
namespace {

using S = Avx512;

constexpr int kMaxRows = 6;
constexpr int kMaxVectors = kInt8PanelColumns / 16;

// acc[r * 64 + 16 v + lane] = compensation + sum over k of x[r, k] * w[col, k], for a tile of MR rows and NV x 16
// columns of one panel. `wp` is the panel's first group, `stride` the panel's bytes per group of 4 k.
template <int MR, int NV>
__attribute__((noinline)) void tile_dot(const uint8_t* x, int64_t ldq, const int8_t* wp, int64_t stride, int64_t groups,
                                        const int32_t* compensation, int32_t* acc) {
  __m512i c[MR][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m512i start = _mm512_load_si512(compensation + 16 * v);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) c[r][v] = start;
  }
  for (int64_t g = 0; g < groups; ++g) {
    __m512i b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = _mm512_load_si512(wp + 64 * v);
    wp += stride;
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      int32_t four;
      std::memcpy(&four, x + r * ldq + 4 * g, sizeof(four));
      const __m512i a = _mm512_set1_epi32(four);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) c[r][v] = _mm512_dpbusd_epi32(c[r][v], a, b[v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_store_si512(acc + r * kInt8PanelColumns + 16 * v, c[r][v]);
  }
}

using TileDot = void (*)(const uint8_t*, int64_t, const int8_t*, int64_t, int64_t, const int32_t*, int32_t*);

template <int MR>
constexpr TileDot tile_dot_for(int nv) {
  return nv == 1 ? &tile_dot<MR, 1> : nv == 2 ? &tile_dot<MR, 2> : nv == 3 ? &tile_dot<MR, 3> : &tile_dot<MR, 4>;
}

constexpr TileDot kTileDots[kMaxRows][kMaxVectors] = {
    {tile_dot_for<1>(1), tile_dot_for<1>(2), tile_dot_for<1>(3), tile_dot_for<1>(4)},
    {tile_dot_for<2>(1), tile_dot_for<2>(2), tile_dot_for<2>(3), tile_dot_for<2>(4)},
    {tile_dot_for<3>(1), tile_dot_for<3>(2), tile_dot_for<3>(3), tile_dot_for<3>(4)},
    {tile_dot_for<4>(1), tile_dot_for<4>(2), tile_dot_for<4>(3), tile_dot_for<4>(4)},
    {tile_dot_for<5>(1), tile_dot_for<5>(2), tile_dot_for<5>(3), tile_dot_for<5>(4)},
    {tile_dot_for<6>(1), tile_dot_for<6>(2), tile_dot_for<6>(3), tile_dot_for<6>(4)},
};

// y[row + r, col + 16 v + lane] = epi(float(acc) * row_scale * col_scale + bias) for the tile's valid columns.
template <Int8Epilogue E>
void tile_epilogue(const Int8GemmArgs& a, const int32_t* acc, int64_t row, int64_t rows, int64_t col, int nv) {
  const int64_t n = a.w->n;
  for (int v = 0; v < nv; ++v) {
    const int64_t j = col + 16 * v;
    const int64_t valid = std::min<int64_t>(16, n - j);
    if (valid <= 0) break;
    const S::Tail mask = S::tail_mask(valid);
    const S::V col_scale = S::load_partial(a.col_scales + j, mask);
    const S::V bias = a.bias != nullptr ? S::load_partial(a.bias + j, mask) : S::zero();
    for (int64_t r = 0; r < rows; ++r) {
      float* y = a.y + (row + r) * a.ldy + j;
      const __m512i dot = _mm512_load_si512(acc + r * kInt8PanelColumns + 16 * v);
      const S::V scale = S::mul(S::set1(a.row_scales[row + r]), col_scale);
      S::V out = S::fmadd(_mm512_cvtepi32_ps(dot), scale, bias);
      if constexpr (E == Int8Epilogue::kBiasGeluErf) out = vmath::gelu_erf<S>(out);
      if constexpr (E == Int8Epilogue::kBiasGeluTanh) out = vmath::gelu_tanh<S>(out);
      if constexpr (E == Int8Epilogue::kBiasRelu) out = S::max(out, S::zero());
      if constexpr (E == Int8Epilogue::kBiasAccumulate) out = S::add(S::load_partial(y, mask), out);
      if (valid == 16) {
        S::store(y, out);
      } else {
        S::store_partial(y, out, mask);
      }
    }
  }
}

void tile_epilogue_any(const Int8GemmArgs& a, const int32_t* acc, int64_t row, int64_t rows, int64_t col, int nv) {
  switch (a.epilogue) {
    case Int8Epilogue::kBias: return tile_epilogue<Int8Epilogue::kBias>(a, acc, row, rows, col, nv);
    case Int8Epilogue::kBiasGeluErf: return tile_epilogue<Int8Epilogue::kBiasGeluErf>(a, acc, row, rows, col, nv);
    case Int8Epilogue::kBiasGeluTanh: return tile_epilogue<Int8Epilogue::kBiasGeluTanh>(a, acc, row, rows, col, nv);
    case Int8Epilogue::kBiasRelu: return tile_epilogue<Int8Epilogue::kBiasRelu>(a, acc, row, rows, col, nv);
    case Int8Epilogue::kBiasAccumulate: return tile_epilogue<Int8Epilogue::kBiasAccumulate>(a, acc, row, rows, col, nv);
  }
}

}  // namespace

void int8_gemm_block_avx512_vnni(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                                 int64_t panel_end) {
  const Int8PackedWeights& w = *a.w;
  const int64_t groups = w.k_padded / 4;
  const int64_t rows = row_end - row_begin;
  if (rows <= 0) return;
  // Equal tiles of at most kMaxRows rows (16 rows: 6 + 5 + 5, not 6 + 6 + 4).
  const int64_t tiles = (rows + kMaxRows - 1) / kMaxRows;
  alignas(64) int32_t acc[kMaxRows * kInt8PanelColumns];
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const int64_t col = p * kInt8PanelColumns;
    const int64_t width = std::min(kInt8PanelColumns, w.n_padded - col);
    const int nv = static_cast<int>(width / 16);
    const int8_t* panel = w.data.data() + col * w.k_padded;
    const int32_t* compensation = w.compensation.data() + col;
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t row = row_begin + rows * t / tiles;
      const int64_t mr = row_begin + rows * (t + 1) / tiles - row;
      kTileDots[mr - 1][nv - 1](a.xq + row * a.ldq, a.ldq, panel, width * 4, groups, compensation, acc);
      tile_epilogue_any(a, acc, row, mr, col, nv);
    }
  }
}

namespace {

template <bool kChannelScale>
void quantize_rows_u8_impl(const QuantizeRowsU8Args& a, int64_t row_begin, int64_t row_end) {
  const int64_t k = a.k;
  const float* cs = a.channel_scale;
  // x[c], times the channel scale when there is one (SmoothQuant).
  const auto load = [&](const float* x, int64_t c) {
    if constexpr (kChannelScale) return S::mul(S::load(x + c), S::load(cs + c));
    return S::load(x + c);
  };
  const auto load_tail = [&](const float* x, int64_t c, S::Tail mask) {
    if constexpr (kChannelScale) return S::mul(S::load_partial(x + c, mask), S::load_partial(cs + c, mask));
    return S::load_partial(x + c, mask);
  };
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + r * k;
    uint8_t* q = a.xq + r * a.ldq;
    S::V vmax = S::zero();
    int64_t c = 0;
    for (; c + 16 <= k; c += 16) vmax = S::max(vmax, S::abs(load(x, c)));
    if (c < k) vmax = S::max(vmax, S::abs(load_tail(x, c, S::tail_mask(k - c))));
    const float absmax = S::reduce_max(vmax);
    if (absmax == 0.0f) {
      a.row_scales[r] = 1.0f;
      std::memset(q, 128, static_cast<size_t>(a.ldq));
      continue;
    }
    a.row_scales[r] = absmax / 127.0f;
    const S::V inv = S::set1(127.0f / absmax);
    const __m512i lo = _mm512_set1_epi32(-127);
    const __m512i hi = _mm512_set1_epi32(127);
    const __m512i shift = _mm512_set1_epi32(128);
    // Round half to even (MXCSR's default), as the scalar reference's nearbyint.
    const auto quantize16 = [&](S::V v) {
      const __m512i i = _mm512_cvtps_epi32(S::mul(v, inv));
      return _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(i, lo), hi), shift);
    };
    for (c = 0; c + 16 <= k; c += 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + c), _mm512_cvtepi32_epi8(quantize16(load(x, c))));
    }
    if (c < k) {
      const S::Tail mask = S::tail_mask(k - c);
      _mm512_mask_cvtepi32_storeu_epi8(q + c, mask, quantize16(load_tail(x, c, mask)));
    }
    std::memset(q + k, 128, static_cast<size_t>(a.ldq - k));
  }
}

}  // namespace

void quantize_rows_u8_avx512(const QuantizeRowsU8Args& a, int64_t row_begin, int64_t row_end) {
  if (a.channel_scale != nullptr) {
    quantize_rows_u8_impl<true>(a, row_begin, row_end);
  } else {
    quantize_rows_u8_impl<false>(a, row_begin, row_end);
  }
}

}  // namespace brisk::kernels::cpu
