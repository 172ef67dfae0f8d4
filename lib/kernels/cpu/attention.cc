// CPU self-attention over packed sequences: for each (sequence, head), S = Q Kᵀ, P = softmax(S / sqrt(d)),
// O = P V, as two strided sgemm calls reading Q, K and V straight out of the fused QKV buffer.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <new>
#include <vector>

#include "brisk/core/parallel.h"
#include "brisk/kernels/attention.h"
#include "brisk/kernels/softmax.h"
#include "oneapi/dnnl/dnnl.h"

namespace brisk {

template <>
Status self_attention<Device::kCPU>(const float* qkv, const int64_t* offsets, int64_t batch, int64_t heads,
                                    int64_t head_dim, float* context) {
  if (qkv == nullptr || offsets == nullptr || context == nullptr || batch < 0 || heads <= 0 || head_dim <= 0) {
    return absl::InvalidArgumentError("self_attention needs non-null buffers, batch >= 0, heads > 0, head_dim > 0");
  }
  const int64_t hidden = heads * head_dim;
  const int64_t qkv_ld = 3 * hidden;
  int64_t max_len = 0;
  for (int64_t b = 0; b < batch; ++b) max_len = std::max(max_len, offsets[b + 1] - offsets[b]);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));

  std::atomic<int> failures{0};
  auto attend = [&](int64_t b, int64_t h, std::vector<float>& scores) noexcept {
    const int64_t len = offsets[b + 1] - offsets[b];
    if (len <= 0) return;
    const float* q = qkv + offsets[b] * qkv_ld + h * head_dim;
    const float* k = q + hidden;
    const float* v = q + 2 * hidden;
    float* out = context + offsets[b] * hidden + h * head_dim;
    // Row-major S[len, len] = Q[len, d] · K[len, d]ᵀ
    if (dnnl_sgemm('N', 'T', len, len, head_dim, 1.0f, q, qkv_ld, k, qkv_ld, 0.0f, scores.data(), len) !=
        dnnl_success) {
      failures.fetch_add(1);
      return;
    }
    masked_softmax<Device::kCPU>(scores.data(), len, len, len, scale);
    // Row-major O[len, d] = P[len, len] · V[len, d]
    if (dnnl_sgemm('N', 'N', len, head_dim, len, 1.0f, scores.data(), len, v, qkv_ld, 0.0f, out, hidden) !=
        dnnl_success) {
      failures.fetch_add(1);
    }
  };
  const size_t scratch = static_cast<size_t>(max_len * max_len);
  try {
    if (batch >= 4 * num_threads()) {
      // Many sequences: one sequence (all its heads, which share cache lines) per work item, handed out
      // dynamically because an item costs len² and lengths differ.
      parallel_for_dynamic(0, batch, [&](int64_t b) {
        thread_local std::vector<float> scores;
        if (scores.size() < scratch) scores.resize(scratch);  // a bad_alloc is rethrown after the region
        for (int64_t h = 0; h < heads; ++h) attend(b, h, scores);
      });
    } else {
      // Few sequences: split their heads between the workers.
      parallel_for(0, batch * heads, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> scores(scratch);
        for (int64_t i = begin; i < end; ++i) attend(i / heads, i % heads, scores);
      });
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("self_attention: out of memory for the ", max_len, " x ", max_len, " score scratch"));
  }
  if (failures.load() != 0) {
    return absl::InternalError(absl::StrCat("self_attention: oneDNN sgemm failed for ", failures.load(),
                                            " (sequence, head) pairs; longest sequence ", max_len, " tokens"));
  }
  return absl::OkStatus();
}

}  // namespace brisk
