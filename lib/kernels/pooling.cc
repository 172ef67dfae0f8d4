// mean_pool, cls_pool, l2_normalize and pool_sequences: argument checks and the one dispatch point on the device,
// shared by the pooling entry points.
#include "brisk/kernels/pooling.h"

#include "cpu/cpu_ops.h"
#include "cuda/cuda_kernels.h"
#include "dispatch.h"

namespace brisk::kernels {
namespace {

// starts == nullptr: sequence b starts at row b * seq; lengths == nullptr: every sequence has seq rows.
template <typename T>
Status pool(const char* op, Device device, const T* hidden, const int32_t* starts, const int32_t* lengths,
            int64_t batch, int64_t seq, int64_t dim, SequencePooling mode, bool normalize, float* out) {
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(op, {{"batch", batch}, {"seq", seq}, {"dim", dim}}));
  if (batch == 0 || dim == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(op, {{"out", out}}));
  if (seq > 0 || starts != nullptr) BRISK_RETURN_IF_ERROR(kernels::check_pointers(op, {{"hidden", hidden}}));
  switch (device) {
    case Device::kCPU:
      BRISK_RETURN_IF_ERROR(kernels::cpu_needs_f32<T>(op));
      if constexpr (std::is_same_v<T, float>) {
        kernels::cpu::pool_sequences(hidden, starts, lengths, batch, seq, dim, mode, normalize, out);
      }
      return absl::OkStatus();
    case Device::kCUDA:
      return kernels::cuda::pool_sequences(hidden, starts, lengths, batch, seq, dim, mode, normalize, out);
  }
  return kernels::unknown_device(op, device);
}

}  // namespace

template <typename T>
Status mean_pool(Device device, const T* hidden, const int32_t* lengths, int64_t batch, int64_t seq, int64_t dim,
                 float* out) {
  return pool("mean_pool", device, hidden, nullptr, lengths, batch, seq, dim, SequencePooling::kMean, false, out);
}

template <typename T>
Status cls_pool(Device device, const T* hidden, int64_t batch, int64_t seq, int64_t dim, float* out) {
  if (seq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cls_pool: seq is 0; expected >= 1 (the [CLS] token) for ", batch, " sequences"));
  }
  return pool("cls_pool", device, hidden, nullptr, nullptr, batch, seq, dim, SequencePooling::kCls, false, out);
}

template <typename T>
Status pool_sequences(Device device, const T* hidden, const SequenceRows& sequences, int64_t dim, SequencePooling mode,
                      bool normalize, float* out) {
  constexpr const char* kOp = "pool_sequences";
  if (sequences.batch > 0) {
    BRISK_RETURN_IF_ERROR(kernels::check_pointers(
        kOp, {{"sequences.starts", sequences.starts}, {"sequences.lengths", sequences.lengths}}));
  }
  return pool(kOp, device, hidden, sequences.starts, sequences.lengths, sequences.batch, 0, dim, mode, normalize, out);
}

Status l2_normalize(Device device, float* x, int64_t rows, int64_t cols, float eps) {
  constexpr const char* kOp = "l2_normalize";
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(kOp, {{"rows", rows}, {"cols", cols}}));
  if (rows == 0 || cols == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(kOp, {{"x", x}}));
  switch (device) {
    case Device::kCPU: kernels::cpu::l2_normalize(x, rows, cols, eps); return absl::OkStatus();
    case Device::kCUDA: return kernels::cuda::l2_normalize(x, rows, cols, eps);
  }
  return kernels::unknown_device(kOp, device);
}

#define BRISK_INSTANTIATE(T)                                                                                         \
  template BRISK_API Status mean_pool<T>(Device, const T*, const int32_t*, int64_t, int64_t, int64_t, float*);       \
  template BRISK_API Status cls_pool<T>(Device, const T*, int64_t, int64_t, int64_t, float*);                        \
  template BRISK_API Status pool_sequences<T>(Device, const T*, const SequenceRows&, int64_t, SequencePooling, bool, \
                                              float*);
BRISK_FOR_EACH_FLOAT_TYPE(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels
