// Linear layers: y = epilogue(x · Wᵀ + b), with W in PyTorch's [out_features, in_features] layout. On CPU this is
// a oneDNN matmul whose bias, GeLU and residual-add run as fused post-ops; primitives are cached per row count. On
// CUDA it is a cuBLASLt matmul with the BIAS / GELU_BIAS / RELU_BIAS epilogues (beta = 1 for the residual add),
// its handle and workspace cached per stream; the erf GeLU, which cuBLASLt lacks, runs as brisk's bias_gelu.
// The weight's dtype picks the precision:
//   f32  fp32 throughout.
//   bf16 activations rounded to bf16, bf16 x bf16 products accumulated in f32 (oneDNN's avx512_bf16 path). On a
//        CPU without avx512_bf16 (or below the avx512_bf16 cap) the weights are widened to f32 at create() and the
//        Linear computes in f32: every plan loads on every CPU.
//   i8   symmetric int8 weights with QuantScales; activations quantized to s8 per token (dynamic) or with one
//        calibrated scale (static); s8 x s8 products accumulated exactly in s32, then scaled back to f32 before the
//        bias and the epilogue: brisk's kernel for the ISA level at create() (lib/kernels/cpu/int8_gemm.h: VNNI,
//        AVX-VNNI, or vpmaddwd on AVX-512BW / AVX2), IMMA tensor cores on CUDA (dynamic per-token scales).
//        x must be finite: a NaN or an infinity makes its row of y unspecified (a NaN is not carried into y as in
//        f32: its code is -127, the same on every ISA level).
// Under reproducible arithmetic (brisk/core/internal/reproducible.h) at create(), f32 and bf16 weights run brisk's
// fixed-order GEMM instead of oneDNN, and i8 weights the scalar int8 kernel: the same bits on every CPU.
// Activations (x, y) are float on the CPU. On CUDA they are the `activation` dtype given to create(): f32, f16 or
// bf16 (f32 or bf16 weights are converted to it once, at create()), accumulated in f32.
//
//   BRISK_ASSIGN_OR_RETURN(Linear fc, Linear::create(weight /*[n, k] f32*/, bias /*[n] f32*/, Device::kCPU));
//   BRISK_RETURN_IF_ERROR(fc.forward(x, rows, y, GemmEpilogue::kBiasGeluErf));   // y[rows, n]
//   BRISK_RETURN_IF_ERROR(fc.forward(x, rows, h, GemmEpilogue::kBiasAccumulate)); // h += x · Wᵀ + b
//   // on a GPU, fp16 activations: weights uploaded and converted once
//   BRISK_ASSIGN_OR_RETURN(Linear g, Linear::create(weight, bias, Device::kCUDA, {}, DType::kF16));
//   BRISK_RETURN_IF_ERROR(g.forward(d_x /*float16_t* on the device*/, rows, d_y, GemmEpilogue::kBias));
//
// An int8 Linear on the CPU quantizes its input per token in a pass of its own over x. The op that produces x can
// do it instead, while each row is still in cache: LayerNorm's quantizing form (brisk/kernels/layernorm.h) fills a
// QuantizedInput for the Linear that consumes its output, and forward(QuantizedInput) skips the pass. The codes are
// the ones forward(x) would compute from the same x, so both give the same bits.
//
//   if (fc.takes_quantized_input()) {
//     BRISK_RETURN_IF_ERROR(layer_norm_bias_residual_quantize(Device::kCPU, h, nullptr, nullptr, gamma, beta, eps, h,
//                                                             rows, hidden, fc, q));   // h = LN(h), q = its codes
//     BRISK_RETURN_IF_ERROR(fc.forward(q, /*first_row=*/0, rows, y, GemmEpilogue::kBiasGeluErf));
//   }
//
// Thread safety: a Linear is immutable after create(); forward() may run concurrently on distinct outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk::kernels {

enum class GemmEpilogue : uint8_t {
  kBias,            // y = x · Wᵀ + b
  kBiasGeluErf,     // y = gelu_erf(x · Wᵀ + b)
  kBiasGeluTanh,    // y = gelu_tanh(x · Wᵀ + b)
  kBiasRelu,        // y = max(x · Wᵀ + b, 0)
  kBiasAccumulate,  // y = y + x · Wᵀ + b   (residual connections: y holds the residual on entry)
};

// The scales of an i8 weight: y ≈ (x / activation_scale) · (W / weight_scale)ᵀ · activation_scale · weight_scale.
struct BRISK_API QuantScales {
  Tensor weight_scale;            // f32 [out_features] (per output channel) or [1] (per tensor)
  float activation_scale = 0.0f;  // 0: dynamic, one scale per token (row) at run time; > 0: static, per tensor
  // Optional f32 [in_features], SmoothQuant: x is divided by it channel by channel before it is quantized (the
  // weight's columns were multiplied by it), moving outlier channels' range from the activations to the weights.
  Tensor input_scale;
};

struct LinearAccess;

// Rows of an int8 Linear's input in that Linear's own encoding (codes and one scale per row), written by the op that
// produced the rows. Holds its buffers between calls; reuse one per consumer. Not thread-safe: one writer at a time,
// no reader while it is written.
class BRISK_API QuantizedInput {
 public:
  int64_t rows() const { return rows_; }

 private:
  friend struct LinearAccess;
  const void* owner_ = nullptr;  // the Linear::Impl whose encoding the codes are in
  int64_t rows_ = 0;
  int64_t row_bytes_ = 0;
  std::vector<uint8_t> codes_;
  std::vector<float> row_scales_;
};

class BRISK_API Linear {
 public:
  // `weight` is f32, bf16 or i8 [out_features, in_features] (i8 needs `scales`); `bias` is f32 [out_features] or
  // an undefined Tensor for none; both in host memory. The Linear keeps its own copy (or a shared reference) of
  // both, on `device`. `activation` is the dtype of x and y: f32 on the CPU; f32, f16 or bf16 on CUDA.
  static StatusOr<Linear> create(const Tensor& weight, const Tensor& bias, Device device,
                                 const QuantScales& scales = {}, DType activation = DType::kF32);

  Linear() = default;
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  DType weight_dtype() const { return weight_dtype_; }
  DType activation_dtype() const { return activation_dtype_; }
  Device device() const { return device_; }
  // What computes this Linear, for reports (brisk info, stats_json): brisk's int8 kernel for the ISA level in use
  // at create() ("avx512_vnni vpdpbusd", "avx2 vpmaddwd", ...), oneDNN's implementation ("oneDNN brg:avx512_core"),
  // "... (bf16 weights widened to f32 at load)" on a CPU without avx512_bf16, or cuBLASLt's. Empty for an empty
  // Linear.
  std::string kernel_name() const;

  // x: [rows, in_features] row-major; y: [rows, out_features] with rows ldy elements apart (0: out_features), both
  // on this Linear's device. The activation epilogues (GeLU, ReLU) need ldy == out_features. T must match
  // activation_dtype() (float, float16_t or bfloat16_t).
  template <typename T>
  Status forward(const T* x, int64_t rows, T* y, GemmEpilogue epilogue, int64_t ldy = 0) const;

  // Whether a producer can quantize this Linear's input for it (layer_norm_bias_residual_quantize's Linear form):
  // true for i8 weights on the CPU.
  bool takes_quantized_input() const;
  // forward() of rows [first_row, first_row + rows) of an input that a producer quantized for this Linear. Fails if
  // x was quantized for another Linear or holds fewer rows.
  Status forward(const QuantizedInput& x, int64_t first_row, int64_t rows, float* y, GemmEpilogue epilogue,
                 int64_t ldy = 0) const;
  // The same for an output that feeds `consumer`, another int8 Linear: the output's rows are quantized for it into
  // q (afresh, rows [0, rows)), each block of rows by the worker that just computed it, while it is in cache;
  // consumer.forward(q, ...) then makes no pass of its own, with the same bits as from y. y [rows, out_features]
  // gets the float output too; null: it is not written at all (kept per block in cache only). Fails if consumer
  // does not take quantized input or its in_features is not out_features.
  Status forward(const QuantizedInput& x, int64_t first_row, int64_t rows, float* y, GemmEpilogue epilogue,
                 const Linear& consumer, QuantizedInput& q) const;

  struct Impl;

 private:
  friend struct LinearAccess;
  Status check_output(const void* y, int64_t rows, GemmEpilogue epilogue, int64_t& ldy) const;
  std::shared_ptr<const Impl> impl_;
  int64_t in_features_ = 0;
  int64_t out_features_ = 0;
  DType weight_dtype_ = DType::kF32;
  DType activation_dtype_ = DType::kF32;
  Device device_ = Device::kCPU;
};

// The calls of int8 Linears on CUDA that ran on their dequantized weights (in the activation dtype) because cuBLASLt
// had no int8 algorithm for the call's row count: process-wide, since the process started; 0 without CUDA. Such a
// call is slower, not wrong. stats_json() and Prometheus (brisk_cuda_int8_fallback_calls_total) report it.
BRISK_API uint64_t cuda_int8_fallback_calls();

}  // namespace brisk::kernels
