// Row-wise int8 quantization of activations and the dequantizing epilogue of an int8 GEMM, the two ends of an int8
// linear layer with per-token (row) activation scales and per-channel (or per-tensor) weight scales:
//
//   BRISK_RETURN_IF_ERROR(quantize_rows_int8(device, x, rows, cols, q, row_scales));           // x ≈ q * scale
//   ... s8 x s8 -> s32 GEMM: acc[rows, n] = q · Wqᵀ ...
//   BRISK_RETURN_IF_ERROR(dequantize_rows_int8(device, acc, row_scales, weight_scales, n_scales, bias,
//                                              GemmEpilogue::kBiasGeluErf, y, n, rows, n));
//
//   quantize_rows_int8    row_scales[r] = max|x[r, :]| / 127 (1 for an all-zero row);
//                         q[r, c] = saturate(round(x[r, c] / row_scales[r])) into [-127, 127]. x must be
//                         finite: a row with a NaN or an infinity gets unspecified codes (a NaN's is -127).
//   dequantize_rows_int8  v = acc[r, c] * row_scales[r] * col_scales[n_col_scales == 1 ? 0 : c] + bias[c], then
//                         the epilogue: kBias y = v; kBiasGeluErf / kBiasGeluTanh y = gelu(v); kBiasRelu
//                         y = max(v, 0); kBiasAccumulate y += v. y rows are ldy elements apart (ldy >= cols).
// T is float, or on CUDA float16_t / bfloat16_t. bias may be null. Sizes of 0 do nothing.
//
// Dispatch: one switch on `device`. The CPU runs brisk's AVX-512 row kernels (the int8 Linear's own) or the scalar
// reference, float only; CUDA runs one warp per row on the calling thread's stream; a build without CUDA returns
// UNIMPLEMENTED naming BRISK_WITH_CUDA.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>
#include <type_traits>

#include "brisk/core/export.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "brisk/kernels/linear.h"

namespace brisk::kernels {

template <typename T>
BRISK_API Status quantize_rows_int8(Device device, const T* x, int64_t rows, int64_t cols, int8_t* q,
                                    float* row_scales);

template <typename T>
BRISK_API Status dequantize_rows_int8(Device device, const int32_t* acc, const float* row_scales,
                                      const float* col_scales, int64_t n_col_scales,
                                      const std::type_identity_t<T>* bias, GemmEpilogue epilogue, T* y, int64_t ldy,
                                      int64_t rows, int64_t cols);

}  // namespace brisk::kernels
