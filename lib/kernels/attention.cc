// self_attention: argument checks and the one dispatch point on the device.
#include "brisk/kernels/attention.h"

#include "brisk/core/cpu_features.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_ops.h"
#include "cuda/cuda_kernels.h"
#include "dispatch.h"

namespace brisk::kernels {
namespace {

// The checks both ops share.
Status check_attention(const char* op, const void* qkv, const AttentionRows& sequences, int64_t rows, int64_t heads,
                       int64_t head_dim, const void* context) {
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(
      op, {{"rows", rows}, {"sequences.batch", sequences.batch}, {"sequences.max_len", sequences.max_len}}));
  if (heads <= 0 || head_dim <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": heads is ", heads, " and head_dim ", head_dim, "; expected both > 0"));
  }
  if (rows == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(op, {{"qkv", qkv}, {"context", context}}));
  if (sequences.batch > 0) {
    BRISK_RETURN_IF_ERROR(kernels::check_pointers(
        op, {{"sequences.starts", sequences.starts}, {"sequences.lengths", sequences.lengths}}));
  }
  return absl::OkStatus();
}

}  // namespace

Status check_attention_rows(const char* op, const AttentionRows& s, int64_t rows) {
  if (s.batch > 0 && (s.starts == nullptr || s.lengths == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": the sequence table of ", s.batch,
                                                   " sequences has a null starts or lengths; expected both"));
  }
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t start = s.starts[b], len = s.lengths[b];
    if (start < 0 || len < 0 || len > s.max_len || start + len > rows) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": sequence ", b, " is rows [", start, ", ", start + len,
                                                     "); expected within [0, ", rows,
                                                     ") and at most max_len = ", s.max_len, " rows"));
    }
  }
  return absl::OkStatus();
}

template <typename T>
Status self_attention(Device device, const T* qkv, const std::type_identity_t<T>* qkv_bias,
                      const AttentionRows& sequences, int64_t rows, int64_t heads, int64_t head_dim, T* context) {
  constexpr const char* kOp = "self_attention";
  BRISK_RETURN_IF_ERROR(check_attention(kOp, qkv, sequences, rows, heads, head_dim, context));
  if (rows == 0) return absl::OkStatus();
  switch (device) {
    case Device::kCPU:
      BRISK_RETURN_IF_ERROR(kernels::cpu_needs_f32<T>(kOp));
      BRISK_RETURN_IF_ERROR(check_attention_rows(kOp, sequences, rows));
      if constexpr (std::is_same_v<T, float>) {
        return kernels::cpu::self_attention(qkv, qkv_bias, sequences, rows, heads, head_dim, context);
      }
      return absl::OkStatus();
    case Device::kCUDA: return kernels::cuda::self_attention(qkv, qkv_bias, sequences, rows, heads, head_dim, context);
  }
  return kernels::unknown_device(kOp, device);
}

bool int8_attention_preferred() {
  const CpuIsa isa = kernels::cpu::kernel_isa();
  return isa >= CpuIsa::kAvxVnni;
}

Status self_attention_int8(Device device, const float* qkv, const AttentionRows& sequences, int64_t rows, int64_t heads,
                           int64_t head_dim, float* context) {
  constexpr const char* kOp = "self_attention_int8";
  BRISK_RETURN_IF_ERROR(check_attention(kOp, qkv, sequences, rows, heads, head_dim, context));
  if (rows == 0) return absl::OkStatus();
  switch (device) {
    case Device::kCPU:
      BRISK_RETURN_IF_ERROR(check_attention_rows(kOp, sequences, rows));
      return kernels::cpu::self_attention_int8(qkv, sequences, rows, heads, head_dim, context);
    case Device::kCUDA:
      return absl::UnimplementedError(
          "self_attention_int8 on cuda; expected cpu (the GPU runs attention in the activation dtype)");
  }
  return kernels::unknown_device(kOp, device);
}

#define BRISK_INSTANTIATE(T)                                                                                      \
  template BRISK_API Status self_attention<T>(Device, const T*, const T*, const AttentionRows&, int64_t, int64_t, \
                                              int64_t, T*);
BRISK_FOR_EACH_FLOAT_TYPE(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels
