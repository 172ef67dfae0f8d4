// Private to lib/kernels/cpu: the per-ISA row kernels behind the public ops of include/brisk/kernels/, and the
// one place that picks an ISA level.
//
// Every op has a scalar reference (in <op>.cc, compiled without ISA flags) and AVX2 / AVX-512 versions
// (<op>_avx2.cc, <op>_avx512.cc, one template in <op>_impl.h instantiated per ISA). bias_gelu (gelu.cc) and
// vector_exp/erf/tanh (vector_math.cc) share one element-wise kernel: elementwise.cc, elementwise_avx2.cc,
// elementwise_avx512.cc, elementwise_impl.h. SIMD wrappers are in simd.h, exp/erf/tanh in simd_math.h.
// A row kernel processes rows [row_begin, row_end) and is called by the op's dispatch function inside
// brisk::parallel_for, so the ISA translation units contain only arithmetic: no std::function, no OpenMP, nothing
// the linker could merge with code compiled for another ISA.
//
// Thread safety: all kernels are reentrant; concurrent calls must write disjoint rows.
#pragma once

#include <cstdint>

#include "brisk/core/cpu_features.h"
#include "brisk/core/internal/reproducible.h"

namespace brisk::kernels::cpu {

struct LayerNormArgs {
  const float* x;
  const float* bias;      // nullable, [cols]
  const float* residual;  // nullable, [rows, cols]
  const float* gamma;
  const float* beta;
  float epsilon;
  float* out;
  int64_t cols;
};

struct SoftmaxArgs {
  float* x;
  int64_t ld;  // distance between rows, in floats
  int64_t cols;
  int64_t rows_per_group;           // rows that share one group_valid_cols entry
  const int32_t* group_valid_cols;  // [rows / rows_per_group]; when null, every row uses valid_cols
  int64_t valid_cols;
  float scale;
};

struct MeanPoolArgs {
  const float* hidden;     // [batch, seq, dim]
  const int32_t* lengths;  // [batch], nullable: every sequence is `seq` long
  int64_t seq;
  int64_t dim;
  float* out;  // [batch, dim]
};

enum class ElementwiseOp : int { kExp, kErf, kTanh, kGeluErf, kGeluTanh, kSilu };

// out[r, :] = op(in[r, :] + bias) for rows [row_begin, row_end); bias nullable; out may equal in. kExp, kErf
// and kTanh serve the flat vector_* ops, the GeLU forms bias_gelu (in place), kSilu the decoders' silu_mul.
struct ElementwiseArgs {
  const float* in;
  float* out;
  const float* bias;  // nullable, [cols]
  int64_t cols;
  ElementwiseOp op;
};

// Rows of x quantized to s8 for the int8 linear layers: per row, scale = absmax / 127 (dynamic; an all-zero row
// gets scale 1), or one given scale for every row (static). q = saturate(round(x / scale)) into [-127, 127].
// With a channel scale, x[r, c] * channel_scale[c] is quantized instead (SmoothQuant's 1 / s, in the same pass).
struct QuantizeRowsArgs {
  const float* x;
  const float* channel_scale;  // nullable, [cols]
  int64_t cols;
  int8_t* q;  // [rows, ldq]
  int64_t ldq;
  float* row_scales;   // [rows], written
  float static_scale;  // > 0: static per-tensor scale; 0: dynamic per row
};

// The int8 GEMM's int32 accumulators back to floats: y[r, j] (+)= row_scales[r] * col_scales[j] * acc[r, j] + bias[j].
struct DequantizeRowsArgs {
  const int32_t* acc;  // [rows, cols]
  int64_t cols;
  const float* row_scales;  // [rows]
  const float* col_scales;  // [cols], or [1] when per_tensor_weights
  bool per_tensor_weights;
  const float* bias;  // nullable, [cols]
  float* y;           // [rows, ldy]
  int64_t ldy;
  bool accumulate;
};

// f32 rows to bf16 (round to nearest even), for the bf16 linear layers' activations.
struct Bf16RowsArgs {
  const float* x;
  int64_t cols;
  uint16_t* out;  // [rows, cols]
};

#define BRISK_DECLARE_QUANT_ROW_KERNELS(isa)                                                      \
  void quantize_rows_s8_##isa(const QuantizeRowsArgs& args, int64_t row_begin, int64_t row_end);  \
  void dequantize_rows_##isa(const DequantizeRowsArgs& args, int64_t row_begin, int64_t row_end); \
  void bf16_rows_##isa(const Bf16RowsArgs& args, int64_t row_begin, int64_t row_end);
BRISK_DECLARE_QUANT_ROW_KERNELS(scalar)
BRISK_DECLARE_QUANT_ROW_KERNELS(avx512)
#undef BRISK_DECLARE_QUANT_ROW_KERNELS

#define BRISK_DECLARE_ROW_KERNELS(isa)                                                                 \
  void layer_norm_rows_##isa(const LayerNormArgs& args, int64_t row_begin, int64_t row_end);           \
  void softmax_rows_##isa(const SoftmaxArgs& args, int64_t row_begin, int64_t row_end);                \
  void mean_pool_rows_##isa(const MeanPoolArgs& args, int64_t row_begin, int64_t row_end);             \
  void l2_normalize_rows_##isa(float* x, int64_t cols, float eps, int64_t row_begin, int64_t row_end); \
  void elementwise_rows_##isa(const ElementwiseArgs& args, int64_t row_begin, int64_t row_end);        \
  float dot_##isa(const float* a, const float* b, int64_t n);

// The scalar reference of the element-wise kernel (elementwise.cc), shared by bias_gelu and vector_*; the
// other ops keep their scalar reference next to their dispatch.
void elementwise_rows_scalar(const ElementwiseArgs& args, int64_t row_begin, int64_t row_end);

// The scalar dot product (dot.cc), next to brisk::kernels::dot's dispatch.
float dot_scalar(const float* a, const float* b, int64_t n);

BRISK_DECLARE_ROW_KERNELS(avx2)
BRISK_DECLARE_ROW_KERNELS(avx512)
#undef BRISK_DECLARE_ROW_KERNELS

// The level whose kernels an op on this thread takes: cpu_isa() (the detected level, capped by BRISK_ISA and
// set_cpu_isa_cap()), or scalar under reproducible arithmetic (brisk/core/internal/reproducible.h).
inline CpuIsa kernel_isa() { return internal::reproducible_arithmetic() ? CpuIsa::kScalar : brisk::cpu_isa(); }

// Picks the kernel for kernel_isa(). Called once per op invocation, outside the parallel region.
template <typename Fn>
Fn select_kernel(Fn scalar, Fn avx2, Fn avx512) {
  const CpuIsa isa = kernel_isa();
  if (isa >= CpuIsa::kAvx512) return avx512;
  if (isa >= CpuIsa::kAvx2) return avx2;
  return scalar;
}

// Rows per parallel task so that each task touches at least ~32K elements: below that, waking a second
// thread costs more than it saves.
inline int64_t row_grain(int64_t cols) {
  constexpr int64_t kMinElementsPerTask = 32 * 1024;
  return cols >= kMinElementsPerTask ? 1 : kMinElementsPerTask / (cols < 1 ? 1 : cols);
}

}  // namespace brisk::kernels::cpu
