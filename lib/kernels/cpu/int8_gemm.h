// Private to brisk (the quantizer's dynamic-int8 Linear layers): an int8 GEMM with u8 activations and s8 weights
// on AVX-512 VNNI (vpdpbusd), with the dequantisation, bias and activation fused into its store.
//
//   const Int8PackedWeights w = pack_int8_weights(w_s8, n, k);          // once, at load time
//   std::vector<uint8_t> xq(m * w.k_padded);
//   std::vector<float> row_scales(m);
//   quantize_rows_u8(x, m, k, w.k_padded, xq.data(), row_scales.data());  // per call
//   int8_gemm(xq.data(), w.k_padded, row_scales.data(), m, w, col_scales, bias, Int8Epilogue::kBiasGeluErf, y, n);
//
// Arithmetic: activations are quantised per row, symmetric, and stored shifted by +128 as u8 (vpdpbusd multiplies
// u8 by s8); the shift is removed exactly with the weights' column sums, so the int32 accumulator equals
// sum_k q[m,k] * w[j,k] for q = xq - 128. Weights are symmetric per output channel; their scales (col_scales) are
// the caller's. The accumulator is converted to float and scaled once: y = epi(float(acc) * (row_scale * col_scale)
// + bias), one rounding for the conversion (exact while |acc| < 2^24) and one for the fused multiply-add.
// vpdpbusd does not saturate; every partial sum is bounded by k * (127 * 128 + 2 * 128 * 128), inside int32
// for k <= 32768.
//
// ISA: the VNNI kernel (int8_gemm_avx512.cc) runs when cpu_isa() is kAvx512 and the CPU has avx512_vnni
// (cpu_has_avx512_vnni()); otherwise the scalar reference in int8_gemm.cc does, with the same results except
// for the GeLU forms (std::erf / std::tanh against simd_math.h's, <= 1e-6 apart).
//
// Thread safety: pack_int8_weights returns an immutable value; int8_gemm and quantize_rows_u8 are reentrant and
// parallelise internally with brisk::parallel_for (concurrent calls must write disjoint outputs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "brisk/core/export.h"

namespace brisk::kernels::cpu {

// std::allocator with 64-byte (cache line, one zmm) alignment, for the packed weights.
template <typename T>
struct CacheAlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  CacheAlignedAllocator() = default;
  template <typename U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlignment); }
  template <typename U>
  bool operator==(const CacheAlignedAllocator<U>&) const {
    return true;
  }
};

// Weights in the VNNI layout. Columns (output channels) are padded with zero weights to n_padded, a multiple of
// 16, and grouped in panels of kInt8PanelColumns (the last panel may be narrower: 16, 32 or 48). Panel p starts
// at byte p * kInt8PanelColumns * k_padded and holds, for each group of 4 consecutive k (k_padded / 4 groups, k
// padded with zeros), `width` columns x 4 bytes: w[j, 4g .. 4g+3] at panel + g * width * 4 + (j - first) * 4.
// One 64-byte load is then 16 columns' dword operands for vpdpbusd.
inline constexpr int64_t kInt8PanelColumns = 64;

struct Int8PackedWeights {
  int64_t n = 0;
  int64_t k = 0;
  int64_t k_padded = 0;  // k rounded up to a multiple of 4: the minimum row stride of the activations
  int64_t n_padded = 0;  // n rounded up to a multiple of 16
  std::vector<int8_t, CacheAlignedAllocator<int8_t>> data;  // n_padded * k_padded bytes, layout above
  std::vector<int32_t> column_sums;                         // [n]: sum_k w[j, k]
  // [n_padded]: -128 * column_sums (0 in the padding): the accumulators' starting values, which cancel the +128
  // shift of the u8 activations.
  std::vector<int32_t, CacheAlignedAllocator<int32_t>> compensation;
};

// Packs s8 weights [n, k] row-major (PyTorch's Linear layout).
BRISK_API Int8PackedWeights pack_int8_weights(const int8_t* w, int64_t n, int64_t k);

// Per-row dynamic quantisation: row_scales[r] = absmax(x[r, :]) / 127 and xq[r, c] = round(x[r, c] / scale) + 128
// (round half to even, computed as x * (127 / absmax)), with row stride ldq >= k; xq[r, k .. ldq) is filled with
// 128 (the encoding of 0), so ldq = k_padded gives the padded rows int8_gemm reads. An all-zero row gets scale 1
// and all bytes 128. Inputs must be finite.
// `channel_scale` (nullable, [k]) multiplies x column by column first (SmoothQuant's 1 / s), in the same pass.
BRISK_API void quantize_rows_u8(const float* x, int64_t rows, int64_t k, int64_t ldq, uint8_t* xq, float* row_scales,
                                const float* channel_scale = nullptr);

enum class Int8Epilogue : int { kBias, kBiasGeluErf, kBiasGeluTanh, kBiasRelu, kBiasAccumulate };

// y[r, j] (row stride ldy >= n) = epi(row_scales[r] * col_scales[j] * (sum_k xq[r,k] * w[j,k] - 128 *
// column_sums[j]) + bias[j]) for r < m, j < n; kBiasAccumulate adds that value to y's contents (y must be
// initialised); bias is nullable (0). xq: m rows of at least w.k_padded bytes at stride ldq >= w.k_padded, the
// padding bytes any value (the padded weights are 0). col_scales: [n].
BRISK_API void int8_gemm(const uint8_t* xq, int64_t ldq, const float* row_scales, int64_t m, const Int8PackedWeights& w,
                         const float* col_scales, const float* bias, Int8Epilogue epilogue, float* y, int64_t ldy);

// ---- Row kernels behind the two ops (the dispatch is in int8_gemm.cc) ----

struct Int8GemmArgs {
  const uint8_t* xq;
  int64_t ldq;
  const float* row_scales;
  const Int8PackedWeights* w;
  const float* col_scales;
  const float* bias;  // nullable
  Int8Epilogue epilogue;
  float* y;
  int64_t ldy;
};

// Computes rows [row_begin, row_end) x panels [panel_begin, panel_end) of y.
void int8_gemm_block_scalar(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                            int64_t panel_end);
void int8_gemm_block_avx512_vnni(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                                 int64_t panel_end);

struct QuantizeRowsU8Args {
  const float* x;              // row stride k
  const float* channel_scale;  // nullable, [k]
  int64_t k;
  int64_t ldq;
  uint8_t* xq;
  float* row_scales;
};

void quantize_rows_u8_scalar(const QuantizeRowsU8Args& a, int64_t row_begin, int64_t row_end);
void quantize_rows_u8_avx512(const QuantizeRowsU8Args& a, int64_t row_begin, int64_t row_end);

}  // namespace brisk::kernels::cpu
