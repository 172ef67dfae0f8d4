// masked_softmax, masked_softmax_strided and masked_softmax_batched: argument checks and the one dispatch point on
// the device, shared by the three entry points.
#include "brisk/kernels/softmax.h"

#include <algorithm>

#include "cpu/cpu_ops.h"
#include "cuda/cuda_kernels.h"
#include "dispatch.h"

namespace brisk::kernels {
namespace {

// rows_per_group == 0: every row uses valid_cols.
template <typename T>
Status softmax(const char* op, Device device, T* x, int64_t rows, int64_t cols, int64_t ld, int64_t valid_cols,
               int64_t rows_per_group, const int32_t* lengths, float scale) {
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(op, {{"rows", rows}, {"cols", cols}}));
  if (rows == 0 || cols == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(op, {{"x", x}}));
  if (ld < cols) return absl::InvalidArgumentError(absl::StrCat(op, ": ld is ", ld, "; expected >= cols = ", cols));
  if (rows_per_group > 0) BRISK_RETURN_IF_ERROR(kernels::check_pointers(op, {{"lengths", lengths}}));
  valid_cols = std::clamp<int64_t>(valid_cols, 0, cols);
  switch (device) {
    case Device::kCPU:
      BRISK_RETURN_IF_ERROR(kernels::cpu_needs_f32<T>(op));
      if constexpr (std::is_same_v<T, float>) {
        kernels::cpu::masked_softmax(x, rows, cols, ld, valid_cols, rows_per_group, lengths, scale);
      }
      return absl::OkStatus();
    case Device::kCUDA:
      return kernels::cuda::masked_softmax(x, rows, cols, ld, valid_cols, rows_per_group, lengths, scale);
  }
  return kernels::unknown_device(op, device);
}

}  // namespace

template <typename T>
Status masked_softmax(Device device, T* x, int64_t rows, int64_t cols, int64_t valid_cols, float scale) {
  return softmax("masked_softmax", device, x, rows, cols, cols, valid_cols, 0, nullptr, scale);
}

template <typename T>
Status masked_softmax_strided(Device device, T* x, int64_t rows, int64_t cols, int64_t ld, int64_t valid_cols,
                              float scale) {
  return softmax("masked_softmax_strided", device, x, rows, cols, ld, valid_cols, 0, nullptr, scale);
}

template <typename T>
Status masked_softmax_batched(Device device, T* x, int64_t batch, int64_t rows_per_group, int64_t cols, int64_t ld,
                              const int32_t* lengths, float scale) {
  constexpr const char* kOp = "masked_softmax_batched";
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(kOp, {{"batch", batch}, {"rows_per_group", rows_per_group}}));
  if (batch == 0 || rows_per_group == 0) return absl::OkStatus();
  // Each group's length is clamped to [0, cols].
  return softmax(kOp, device, x, batch * rows_per_group, cols, ld, cols, rows_per_group, lengths, scale);
}

#define BRISK_INSTANTIATE(T)                                                                                          \
  template BRISK_API Status masked_softmax<T>(Device, T*, int64_t, int64_t, int64_t, float);                          \
  template BRISK_API Status masked_softmax_strided<T>(Device, T*, int64_t, int64_t, int64_t, int64_t, float);         \
  template BRISK_API Status masked_softmax_batched<T>(Device, T*, int64_t, int64_t, int64_t, int64_t, const int32_t*, \
                                                      float);
BRISK_FOR_EACH_FLOAT_TYPE(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels
