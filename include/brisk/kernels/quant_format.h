// Quantized formats: the storage and arithmetic of quantized weights, at the base of the library (below the model,
// which reads them, and the quantizer, which writes them).
//
//   int8    symmetric, one f32 scale per output channel (row of a [out, in] weight) or one per tensor:
//           q = clamp(round(w / s), -127, 127), s = absmax / 127. An all-zero row gets s = 1 (q all zero).
//   int4-gN groups of N (32, 64 or 128) consecutive values of a row, one f16 scale per group (and optionally an f16
//           minimum): symmetric q = clamp(round(w / s), -8, 7), s = absmax / 7, stored as q + 8; with a minimum,
//           q = round((w - min) / s) in [0, 15], s = (max - min) / 15. Two values a byte, low nibble first.
//   bf16    bfloat16, round to nearest even.
//
//   BRISK_ASSIGN_OR_RETURN(Int8Matrix q, quantize_int8(weight, "encoder.layer.0.output.dense", true));
//   BRISK_ASSIGN_OR_RETURN(Tensor back, dequantize_int8(q));   // |back - weight| <= scale / 2 per row
//
// Every function rejects NaN and Inf with an error that names the tensor and the position of the first one. How a
// Linear computes with int8 weights is brisk/kernels/linear.h (QuantScales); which precision each layer gets is
// brisk/quant/ (plans, calibration, the quantized model file).
//
// Thread safety: pure functions; the value types may be shared once built.
#pragma once

#include <cstdint>
#include <string_view>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

// Checks that a float tensor holds no NaN or Inf; the error names `name` and the first bad element.
BRISK_API Status check_finite(const float* data, int64_t n, std::string_view name);

struct BRISK_API Int8Matrix {
  Tensor values;  // i8 [rows, cols]
  Tensor scales;  // f32 [rows] (per channel) or [1] (per tensor)
};

// `weight` is a contiguous f32 [rows, cols] tensor.
BRISK_API StatusOr<Int8Matrix> quantize_int8(const Tensor& weight, std::string_view name, bool per_channel = true);
BRISK_API StatusOr<Tensor> dequantize_int8(const Int8Matrix& q);

struct BRISK_API Int4Matrix {
  Tensor packed;  // u8 [rows, cols / 2]: value 2j in the low nibble, 2j + 1 in the high one
  Tensor scales;  // f16 [rows, cols / group]
  Tensor mins;    // f16 [rows, cols / group]; undefined for symmetric groups
  int64_t group_size = 32;
  int64_t cols() const { return packed.defined() ? packed.dim(1) * 2 : 0; }
};

// `weight` is a contiguous f32 [rows, cols] tensor with cols a multiple of `group_size` (32, 64 or 128).
BRISK_API StatusOr<Int4Matrix> quantize_int4(const Tensor& weight, int64_t group_size, bool with_min,
                                             std::string_view name);
// Dequantizes one row into out[cols]. Preconditions: row < rows, the matrix came from quantize_int4 or passed
// check_int4_matrix.
BRISK_API void dequantize_int4_row(const Int4Matrix& q, int64_t row, float* out);
BRISK_API StatusOr<Tensor> dequantize_int4(const Int4Matrix& q);
// Checks dtypes and shapes agree (for matrices read from a file); the error names `name`.
BRISK_API Status check_int4_matrix(const Int4Matrix& q, std::string_view name);

// A bf16 copy of a contiguous f32 tensor, and back.
BRISK_API StatusOr<Tensor> to_bfloat16(const Tensor& weight, std::string_view name);

}  // namespace brisk
