// Multi-head self-attention over packed (padding-free) sequences: the fused QKV projection output goes in, the
// per-head context comes out. Sequences are stored back to back, so padded positions cost nothing.
//
//   // qkv: [total_tokens, 3 * hidden] laid out as [Q | K | V], each [heads, head_dim]
//   BRISK_RETURN_IF_ERROR(self_attention<Device::kCPU>(qkv, offsets, batch, heads, head_dim, context));
//
// Thread safety: reentrant; concurrent calls on distinct outputs are safe.
#pragma once

#include <cstdint>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

// offsets: [batch + 1] token offsets, sequence b is rows [offsets[b], offsets[b + 1]).
// context: [total_tokens, heads * head_dim]; context[t] = softmax(q_t Kᵀ / sqrt(head_dim)) V within t's sequence.
template <Device D>
BRISK_API Status self_attention(const float* qkv, const int64_t* offsets, int64_t batch, int64_t heads,
                                int64_t head_dim, float* context);

template <>
BRISK_API Status self_attention<Device::kCPU>(const float* qkv, const int64_t* offsets, int64_t batch, int64_t heads,
                                              int64_t head_dim, float* context);

}  // namespace brisk
