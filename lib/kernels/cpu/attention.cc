// CPU self-attention: for each (sequence, head), S = Q Kᵀ, P = softmax(S / sqrt(d)), O = P V, as two strided sgemm
// calls reading Q, K and V straight out of the fused QKV buffer.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <new>
#include <vector>

#include "brisk/core/parallel.h"
#include "cpu_ops.h"
#include "dnnl_engine.h"
#include "oneapi/dnnl/dnnl.h"

namespace brisk::kernels::cpu {
namespace {

// Zeroes the context rows that belong to no sequence (a padded batch's pad rows).
void zero_uncovered_rows(const AttentionRows& seqs, int64_t rows, int64_t hidden, float* context) {
  std::vector<char> covered(static_cast<size_t>(rows), 0);
  for (int64_t b = 0; b < seqs.batch; ++b) {
    std::fill_n(covered.begin() + seqs.starts[b], seqs.lengths[b], 1);
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (!covered[static_cast<size_t>(r)]) std::fill_n(context + r * hidden, hidden, 0.0f);
  }
}

}  // namespace

Status self_attention(const float* qkv_in, const float* qkv_bias, const AttentionRows& seqs, int64_t rows,
                      int64_t heads, int64_t head_dim, float* context) {
  const int64_t hidden = heads * head_dim;
  const int64_t qkv_ld = 3 * hidden;
  const int64_t batch = seqs.batch;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  // With a separate bias, Q, K and V are read from a biased copy (the GPU fuses this into its head split).
  std::vector<float> biased;
  const float* qkv = qkv_in;
  if (qkv_bias != nullptr) {
    biased.assign(qkv_in, qkv_in + rows * qkv_ld);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < qkv_ld; ++c) biased[static_cast<size_t>(r * qkv_ld + c)] += qkv_bias[c];
    }
    qkv = biased.data();
  }
  zero_uncovered_rows(seqs, rows, hidden, context);
  dnnl_isa_cap_once();  // before dnnl_sgemm generates its first kernel

  std::atomic<int> failures{0};
  auto attend = [&](int64_t b, int64_t h, std::vector<float>& scores) noexcept {
    const int64_t len = seqs.lengths[b];
    if (len <= 0) return;
    const float* q = qkv + int64_t{seqs.starts[b]} * qkv_ld + h * head_dim;
    const float* k = q + hidden;
    const float* v = q + 2 * hidden;
    float* out = context + int64_t{seqs.starts[b]} * hidden + h * head_dim;
    // Row-major S[len, len] = Q[len, d] · K[len, d]ᵀ
    if (dnnl_sgemm('N', 'T', len, len, head_dim, 1.0f, q, qkv_ld, k, qkv_ld, 0.0f, scores.data(), len) !=
        dnnl_success) {
      failures.fetch_add(1);
      return;
    }
    masked_softmax(scores.data(), len, len, len, len, 0, nullptr, scale);
    // Row-major O[len, d] = P[len, len] · V[len, d]
    if (dnnl_sgemm('N', 'N', len, head_dim, len, 1.0f, scores.data(), len, v, qkv_ld, 0.0f, out, hidden) !=
        dnnl_success) {
      failures.fetch_add(1);
    }
  };
  const int64_t max_len = seqs.max_len;
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

}  // namespace brisk::kernels::cpu
