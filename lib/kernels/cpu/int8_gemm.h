// Private to brisk (the quantizer's int8 Linear layers): an int8 GEMM of quantized activations and s8 weights, with
// the dequantisation, bias and activation fused into its store, on one kernel per ISA level.
//
//   const Int8Kernel kernel = int8_kernel_for(cpu_isa());                 // once, at load time
//   const Int8PackedWeights w = pack_int8_weights(w_s8, n, k);           // once, at load time (one layout for all)
//   std::vector<uint8_t> xq(m * w.k_padded * int8_activation_bytes(kernel));
//   std::vector<float> row_scales(m);
//   quantize_activations(kernel, x, m, k, w.k_padded, xq.data(), row_scales.data());              // per call
//   int8_gemm(kernel, xq.data(), w.k_padded, row_scales.data(), m, w, col_scales, bias, Int8Epilogue::kBias, y, n);
//
// Arithmetic: activations are quantised per row (dynamic: scale = absmax / 127) or with one static scale, to
// q in [-127, 127]; weights are symmetric s8 per output channel, their scales (col_scales) the caller's. Every
// kernel computes the exact integer dot product sum_k q[m,k] * w[j,k], then y = epi(float(acc) * (row_scale *
// col_scale) + bias): one rounding for the conversion (exact while |acc| < 2^24) and one for the fused
// multiply-add. So all kernels give the same bits, except for the GeLU forms (std::erf / std::tanh in the scalar
// reference against simd_math.h's, <= 1e-6 apart).
//
// The kernels and the activation encoding each one reads:
//   kAvx512Vnni  vpdpbusd zmm (u8 x s8 -> s32, no saturation)      u8: q + 128, removed with the column sums
//   kAvxVnni     vpdpbusd ymm (VEX AVX-VNNI)                        u8: q + 128
//   kAvx512      vpmovsxbw + vpmaddwd zmm (AVX-512BW, no VNNI)      s16: q
//   kAvx2        vpmovsxbw + vpmaddwd ymm                           s16: q
//   kScalar      the reference, plain C++                           u8: q + 128
// Without VNNI, vpmaddubsw (u8 x s8 pairs summed in int16) would saturate: 255 * 127 * 2 > 32767. The int16
// kernels widen the weights instead and multiply in vpmaddwd (s16 x s16 pairs summed in int32, exact): the same
// multiplies per instruction as the vpmaddubsw + vpmaddwd chain, on the same ports, with no saturation, no 7-bit
// weights and no accuracy cost (benchmarks/RESULTS.md, "int8 on every ISA level": the kernel without VNNI).
//
// Thread safety: pack_int8_weights returns an immutable value; int8_gemm and quantize_activations are reentrant
// and parallelise internally with brisk::parallel_for (concurrent calls must write disjoint outputs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "brisk/core/cpu_features.h"
#include "../rows_done.h"

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

enum class Int8Kernel : int { kScalar, kAvx2, kAvxVnni, kAvx512, kAvx512Vnni };

// The kernel for an ISA level (the level's best).
Int8Kernel int8_kernel_for(CpuIsa isa);
// The kernel's name for reports: "avx512_vnni vpdpbusd", "avx2 vpmaddwd", ...
const char* int8_kernel_name(Int8Kernel kernel);
// Bytes per quantized activation: 1 (u8, q + 128) or 2 (s16, q).
int64_t int8_activation_bytes(Int8Kernel kernel);

// Weights in the packed layout every kernel reads. Columns (output channels) are padded with zero weights to
// n_padded, a multiple of 16, and grouped in panels of kInt8PanelColumns (the last panel may be narrower: 16, 32
// or 48). Panel p starts at byte p * kInt8PanelColumns * k_padded and holds, for each group of 4 consecutive k
// (k_padded / 4 groups, k padded with zeros), `width` columns x 4 bytes: w[j, 4g .. 4g+3] at panel + g * width * 4
// + (j - first) * 4. One 64-byte load is 16 columns' dword operands for vpdpbusd; one 16-byte load, widened to
// s16, is 4 columns' operands for vpmaddwd.
inline constexpr int64_t kInt8PanelColumns = 64;

struct Int8PackedWeights {
  int64_t n = 0;
  int64_t k = 0;
  int64_t k_padded = 0;  // k rounded up to a multiple of 4: the minimum row stride of the activations
  int64_t n_padded = 0;  // n rounded up to a multiple of 16
  std::vector<int8_t, CacheAlignedAllocator<int8_t>> data;  // n_padded * k_padded bytes, layout above
  // [n_padded]: -128 * sum_k w[j, k] (0 in the padding): the u8 kernels' starting accumulators, which cancel the
  // +128 shift of their activations.
  std::vector<int32_t, CacheAlignedAllocator<int32_t>> compensation;
};

// Packs s8 weights [n, k] row-major (PyTorch's Linear layout).
Int8PackedWeights pack_int8_weights(const int8_t* w, int64_t n, int64_t k);

inline constexpr int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

// The panels of w: the range of panel indices the GEMM blocks take.
inline int64_t panel_count(const Int8PackedWeights& w) {
  return (w.n_padded + kInt8PanelColumns - 1) / kInt8PanelColumns;
}

// Sets w's shape for n x k (k_padded, n_padded as above) and sizes its buffers, keeping their capacity; the caller
// writes the bytes (int8 attention packs K and V into reused weights this way, per head).
void reshape_packed(Int8PackedWeights& w, int64_t n, int64_t k);

// Quantizes rows of x [rows, k] into `kernel`'s encoding, ldq >= k elements apart (int8_activation_bytes each):
// dynamic (static_scale == 0): row_scales[r] = absmax(x[r, :]) / 127 and q = round(x * (127 / absmax)); static
// (static_scale > 0): row_scales[r] = static_scale and q = round(x / static_scale); both round half to even and
// clamp to [-127, 127]. The padding [k, ldq) holds the encoding of 0, so ldq = k_padded gives the padded rows
// int8_gemm reads. An all-zero row gets scale 1. `channel_scale` (nullable, [k]) multiplies x column by column
// first (SmoothQuant's 1 / s), in the same pass. Inputs must be finite.
void quantize_activations(Int8Kernel kernel, const float* x, int64_t rows, int64_t k, int64_t ldq, void* xq,
                          float* row_scales, const float* channel_scale = nullptr, float static_scale = 0.0f);

// kDots writes the exact int32 dot products themselves (their bits, into y's floats: y must point at int32_t storage),
// with no scale, bias or activation: int8 attention's scores, which its softmax reads as integers.
enum class Int8Epilogue : int { kBias, kBiasGeluErf, kBiasGeluTanh, kBiasRelu, kBiasAccumulate, kDots };

// y[r, j] (row stride ldy >= n) = epi(row_scales[r] * col_scales[j] * sum_k q[r,k] * w[j,k] + bias[j]) for r < m,
// j < n; kBiasAccumulate adds that value to y's contents (y must be initialised); bias is nullable (0). xq: m rows
// in `kernel`'s encoding (quantize_activations with the same kernel) of at least w.k_padded elements at stride
// ldq >= w.k_padded. col_scales: [n].
void int8_gemm(Int8Kernel kernel, const void* xq, int64_t ldq, const float* row_scales, int64_t m,
               const Int8PackedWeights& w, const float* col_scales, const float* bias, Int8Epilogue epilogue, float* y,
               int64_t ldy);

// int8_gemm in tasks of whole row blocks (all of n for ~32 rows), each followed on its worker by then(begin, end,
// rows) for the rows [begin, end) it computed, at `rows` (n floats apart), while they are in cache: a consumer's
// per-token quantization of y. y (ldy == n) may be null: each block then goes to a scratch buffer of its worker, and
// no output is written but through `then`. Below 128 rows (too few blocks to share out), int8_gemm's own split, then
// `then` over row ranges in parallel. `then` must be safe to call concurrently on disjoint ranges.
void int8_gemm(Int8Kernel kernel, const void* xq, int64_t ldq, const float* row_scales, int64_t m,
               const Int8PackedWeights& w, const float* col_scales, const float* bias, Int8Epilogue epilogue, float* y,
               const RowsDone& then);

// ---- Row kernels behind the two ops (the dispatch is in int8_gemm.cc) ----

struct Int8GemmArgs {
  const void* xq;
  int64_t ldq;  // in elements
  const float* row_scales;
  const Int8PackedWeights* w;
  const float* col_scales;
  const float* bias;  // nullable
  Int8Epilogue epilogue;
  float* y;
  int64_t ldy;
};

struct QuantizeActivationsArgs {
  const float* x;
  int64_t ldx;                 // x's row stride in floats, >= k (int8 attention reads Q out of the QKV rows)
  const float* channel_scale;  // nullable, [k]
  int64_t k;
  int64_t ldq;  // in elements
  void* xq;
  float* row_scales;
  float static_scale;  // 0: dynamic
};

// Computes rows [row_begin, row_end) x panels [panel_begin, panel_end) of y.
using Int8GemmBlock = void (*)(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                               int64_t panel_end);
using QuantizeActivationRows = void (*)(const QuantizeActivationsArgs& a, int64_t row_begin, int64_t row_end);

// The row kernels of `kernel`, for callers that split the work themselves (int8 attention: one (sequence, head)
// per task, the GEMMs inside it on one thread).
struct Int8RowKernels {
  Int8GemmBlock gemm;
  QuantizeActivationRows quantize;
};
Int8RowKernels int8_row_kernels(Int8Kernel kernel);

#define BRISK_DECLARE_INT8_KERNEL(name)                                                                       \
  void int8_gemm_block_##name(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin, \
                              int64_t panel_end);                                                             \
  void quantize_activation_rows_##name(const QuantizeActivationsArgs& a, int64_t row_begin, int64_t row_end);
BRISK_DECLARE_INT8_KERNEL(scalar)       // int8_gemm.cc
BRISK_DECLARE_INT8_KERNEL(avx2)         // int8_gemm_int16_avx2.cc
BRISK_DECLARE_INT8_KERNEL(avx_vnni)     // int8_gemm_avx_vnni.cc
BRISK_DECLARE_INT8_KERNEL(avx512)       // int8_gemm_int16_avx512.cc
BRISK_DECLARE_INT8_KERNEL(avx512_vnni)  // int8_gemm_avx512.cc
#undef BRISK_DECLARE_INT8_KERNEL

}  // namespace brisk::kernels::cpu
