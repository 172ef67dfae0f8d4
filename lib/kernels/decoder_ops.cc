// rms_norm, rotary_qk, causal_attention and silu_mul: argument checks and the one dispatch point on the device.
#include "brisk/kernels/decoder_ops.h"

#include "cpu/cpu_ops.h"
#include "cpu/decoder_ops.h"
#include "dispatch.h"

namespace brisk::kernels {
namespace {

Status not_on_cuda(const char* op) {
  return absl::UnimplementedError(
      absl::StrCat(op, " on cuda is not implemented; expected cpu (decoder models run on the CPU for now)"));
}

Status check_heads(const char* op, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t ld) {
  if (heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0 || head_dim <= 0 || head_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": heads ", heads, ", kv_heads ", kv_heads, ", head_dim ",
                                                   head_dim,
                                                   "; expected kv_heads dividing heads and an even "
                                                   "positive head_dim"));
  }
  const int64_t width = (heads + 2 * kv_heads) * head_dim;
  if (ld < width) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ld is ", ld, "; expected >= (heads + 2 * kv_heads) * ", "head_dim = ", width));
  }
  return absl::OkStatus();
}

}  // namespace

Status rms_norm(Device device, const float* x, const float* gamma, float eps, float* out, int64_t rows, int64_t cols) {
  constexpr const char* kOp = "rms_norm";
  BRISK_RETURN_IF_ERROR(check_sizes(kOp, {{"rows", rows}, {"cols", cols}}));
  if (rows == 0 || cols == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(check_pointers(kOp, {{"x", x}, {"gamma", gamma}, {"out", out}}));
  switch (device) {
    case Device::kCPU: cpu::rms_norm(x, gamma, eps, out, rows, cols); return absl::OkStatus();
    case Device::kCUDA: return not_on_cuda(kOp);
  }
  return unknown_device(kOp, device);
}

Status rotary_qk(Device device, float* qkv, int64_t ld, int64_t rows, const int32_t* positions,
                 const RotaryShape& shape) {
  constexpr const char* kOp = "rotary_qk";
  BRISK_RETURN_IF_ERROR(check_sizes(kOp, {{"rows", rows}}));
  if (rows == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(check_pointers(kOp, {{"qkv", qkv}, {"positions", positions}}));
  BRISK_RETURN_IF_ERROR(check_heads(kOp, shape.heads, shape.kv_heads, shape.head_dim, ld));
  if (!(shape.theta > 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": theta is ", shape.theta, "; expected a base above 1"));
  }
  switch (device) {
    case Device::kCPU: return cpu::rotary_qk(qkv, ld, rows, positions, shape);
    case Device::kCUDA: return not_on_cuda(kOp);
  }
  return unknown_device(kOp, device);
}

Status causal_attention(Device device, const float* qkv, int64_t ld, const AttentionRows& sequences, int64_t rows,
                        const AttentionHeads& shape, float* out) {
  constexpr const char* kOp = "causal_attention";
  BRISK_RETURN_IF_ERROR(check_sizes(kOp, {{"rows", rows}, {"batch", sequences.batch}}));
  if (rows == 0 || sequences.batch == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(check_pointers(kOp, {{"qkv", qkv}, {"out", out}}));
  BRISK_RETURN_IF_ERROR(check_attention_rows(kOp, sequences, rows));
  BRISK_RETURN_IF_ERROR(check_heads(kOp, shape.heads, shape.kv_heads, shape.head_dim, ld));
  switch (device) {
    case Device::kCPU: return cpu::causal_attention(qkv, ld, sequences, shape, out);
    case Device::kCUDA: return not_on_cuda(kOp);
  }
  return unknown_device(kOp, device);
}

Status silu_mul(Device device, const float* gate_up, int64_t rows, int64_t width, float* out) {
  constexpr const char* kOp = "silu_mul";
  BRISK_RETURN_IF_ERROR(check_sizes(kOp, {{"rows", rows}, {"width", width}}));
  if (rows == 0 || width == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(check_pointers(kOp, {{"gate_up", gate_up}, {"out", out}}));
  switch (device) {
    case Device::kCPU: cpu::silu_mul(gate_up, rows, width, out); return absl::OkStatus();
    case Device::kCUDA: return not_on_cuda(kOp);
  }
  return unknown_device(kOp, device);
}

}  // namespace brisk::kernels
