// quantize_rows_int8 and dequantize_rows_int8: argument checks and the one dispatch point on the device.
#include "brisk/kernels/quantize.h"

#include "cpu/cpu_ops.h"
#include "cuda/cuda_kernels.h"
#include "dispatch.h"

namespace brisk::kernels {

template <typename T>
Status quantize_rows_int8(Device device, const T* x, int64_t rows, int64_t cols, int8_t* q, float* row_scales) {
  constexpr const char* kOp = "quantize_rows_int8";
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(kOp, {{"rows", rows}, {"cols", cols}}));
  if (rows == 0 || cols == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(kOp, {{"x", x}, {"q", q}, {"row_scales", row_scales}}));
  switch (device) {
    case Device::kCPU:
      BRISK_RETURN_IF_ERROR(kernels::cpu_needs_f32<T>(kOp));
      if constexpr (std::is_same_v<T, float>) kernels::cpu::quantize_rows_int8(x, rows, cols, q, row_scales);
      return absl::OkStatus();
    case Device::kCUDA: return kernels::cuda::quantize_rows_int8(x, rows, cols, {}, q, row_scales);
  }
  return kernels::unknown_device(kOp, device);
}

template <typename T>
Status dequantize_rows_int8(Device device, const int32_t* acc, const float* row_scales, const float* col_scales,
                            int64_t n_col_scales, const std::type_identity_t<T>* bias, GemmEpilogue epilogue, T* y,
                            int64_t ldy, int64_t rows, int64_t cols) {
  constexpr const char* kOp = "dequantize_rows_int8";
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(kOp, {{"rows", rows}, {"cols", cols}}));
  if (rows == 0 || cols == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(
      kernels::check_pointers(kOp, {{"acc", acc}, {"row_scales", row_scales}, {"col_scales", col_scales}, {"y", y}}));
  if (n_col_scales != 1 && n_col_scales != cols) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": n_col_scales is ", n_col_scales, "; expected 1 (per tensor) or cols = ", cols));
  }
  if (ldy < cols) return absl::InvalidArgumentError(absl::StrCat(kOp, ": ldy is ", ldy, "; expected >= cols = ", cols));
  switch (device) {
    case Device::kCPU:
      BRISK_RETURN_IF_ERROR(kernels::cpu_needs_f32<T>(kOp));
      if constexpr (std::is_same_v<T, float>) {
        kernels::cpu::dequantize_rows_int8(acc, row_scales, col_scales, n_col_scales, bias, epilogue, y, ldy, rows,
                                           cols);
      }
      return absl::OkStatus();
    case Device::kCUDA:
      return kernels::cuda::dequantize_rows_int8(acc, row_scales, col_scales, n_col_scales, bias, epilogue, y, ldy,
                                                 rows, cols);
  }
  return kernels::unknown_device(kOp, device);
}

#define BRISK_INSTANTIATE(T)                                                                                     \
  template BRISK_API Status quantize_rows_int8<T>(Device, const T*, int64_t, int64_t, int8_t*, float*);          \
  template BRISK_API Status dequantize_rows_int8<T>(Device, const int32_t*, const float*, const float*, int64_t, \
                                                    const T*, GemmEpilogue, T*, int64_t, int64_t, int64_t);
BRISK_FOR_EACH_FLOAT_TYPE(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels
