// CPU self-attention: for each (sequence, head), S = Q Kᵀ, P = softmax(S / sqrt(d)), O = P V. In float, as two
// strided sgemm calls reading Q, K and V straight out of the fused QKV buffer (float_attention: the encoders'
// self_attention and the decoders' causal, grouped-query causal_attention); in int8, as two int8 GEMMs of
// int8_gemm.h around the per-(sequence, head) kernels of attention_int8.h.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <new>
#include <numeric>
#include <vector>

#include "attention_int8.h"
#include "brisk/core/cpu_features.h"
#include "brisk/core/internal/reproducible.h"
#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "cpu_ops.h"
#include "gemm_fixed_order.h"
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

// Runs attend(b, h, scratch) for every (sequence, head) pair over the workers, each with its own Scratch, after
// prepare(b, scratch) on that worker for each sequence it takes heads of.
template <typename Scratch, typename Prepare, typename Attend>
Status for_each_head(const AttentionRows& seqs, int64_t heads, const Prepare& prepare, const Attend& attend) {
  try {
    if (seqs.batch >= 4 * num_threads()) {
      // Many sequences: one sequence (all its heads, which share cache lines) per work item, handed out
      // dynamically because an item costs len² and lengths differ.
      parallel_for_dynamic(0, seqs.batch, [&](int64_t b) {
        thread_local Scratch scratch;  // a bad_alloc is rethrown after the region
        prepare(b, scratch);
        for (int64_t h = 0; h < heads; ++h) attend(b, h, scratch);
      });
    } else {
      // Few sequences: split their heads between the workers. A worker may get several chunks of one sequence's
      // heads (parallel_for's pieces): it prepares each sequence once per call.
      static std::atomic<uint64_t> calls{0};
      const uint64_t call = calls.fetch_add(1, std::memory_order_relaxed) + 1;
      parallel_for(0, seqs.batch * heads, 1, [&](int64_t begin, int64_t end) {
        thread_local Scratch scratch;
        thread_local uint64_t prepared_call = 0;  // (call, sequence) that scratch holds the preparation of
        thread_local int64_t prepared_sequence = -1;
        for (int64_t i = begin; i < end; ++i) {
          if (prepared_call != call || prepared_sequence != i / heads) {
            prepare(i / heads, scratch);
            prepared_call = call;
            prepared_sequence = i / heads;
          }
          attend(i / heads, i % heads, scratch);
        }
      });
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("self_attention: out of memory for the ", seqs.max_len, " x ", seqs.max_len, " score scratch"));
  }
  return absl::OkStatus();
}

// Float attention as two strided sgemm calls per (sequence, head), reading Q, K and V straight out of the fused
// [rows, ld] buffer (query heads, then shape.kv_heads key heads, then value heads; query head h reads key/value head
// h / (heads / kv_heads)) into context [rows, heads * head_dim]. causal: row i of a sequence attends to keys 0..i
// only, as the softmax's groups of one row (the upper triangle of the scores is computed and given weight 0: one
// blocked GEMM beats skipping it). The sgemm is oneDNN's, or the fixed-order GEMM under reproducible arithmetic.
Status float_attention(const char* op, const float* qkv, int64_t ld, const AttentionRows& seqs,
                       const AttentionHeads& shape, bool causal, float* context) {
  const int64_t d = shape.head_dim, width = shape.heads * d, group = shape.heads / shape.kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  dnnl_isa_cap_once();  // before dnnl_sgemm generates its first kernel
  // Reproducible arithmetic (brisk/core/internal/reproducible.h): the fixed-order GEMM instead of oneDNN's sgemm.
  const bool fixed_order = internal::reproducible_arithmetic();
  std::vector<int32_t> row_lengths;  // causal: row i keeps i + 1 columns
  if (causal) {
    row_lengths.resize(static_cast<size_t>(seqs.max_len));
    std::iota(row_lengths.begin(), row_lengths.end(), 1);
  }
  std::atomic<int> failures{0};
  auto attend = [&](int64_t b, int64_t h, std::vector<float>& scores) {
    const int64_t len = seqs.lengths[b];
    if (len <= 0) return;
    const float* row0 = qkv + int64_t{seqs.starts[b]} * ld;
    const float* q = row0 + h * d;
    const float* k = row0 + (shape.heads + h / group) * d;
    const float* v = row0 + (shape.heads + shape.kv_heads + h / group) * d;
    float* out = context + int64_t{seqs.starts[b]} * width + h * d;
    if (scores.size() < static_cast<size_t>(len * len)) scores.resize(static_cast<size_t>(len * len));
    // Row-major S[len, len] = Q[len, d] · K[len, d]ᵀ
    if (fixed_order) {
      thread_local std::vector<float> keys;  // Kᵀ [d, len]: the fixed-order GEMM takes B row-major
      keys.resize(static_cast<size_t>(d * len));
      for (int64_t j = 0; j < len; ++j) {
        for (int64_t p = 0; p < d; ++p) keys[static_cast<size_t>(p * len + j)] = k[j * ld + p];
      }
      gemm_fixed_order({q, ld, keys.data(), len, nullptr, false, scores.data(), len, len, d}, len);
    } else if (dnnl_sgemm('N', 'T', len, len, d, 1.0f, q, ld, k, ld, 0.0f, scores.data(), len) != dnnl_success) {
      failures.fetch_add(1);
      return;
    }
    masked_softmax(scores.data(), len, len, len, len, causal ? 1 : 0, causal ? row_lengths.data() : nullptr, scale);
    // Row-major O[len, d] = P[len, len] · V[len, d]
    if (fixed_order) {
      gemm_fixed_order({scores.data(), len, v, ld, nullptr, false, out, width, d, len}, len);
    } else if (dnnl_sgemm('N', 'N', len, d, len, 1.0f, scores.data(), len, v, ld, 0.0f, out, width) != dnnl_success) {
      failures.fetch_add(1);
    }
  };
  BRISK_RETURN_IF_ERROR(for_each_head<std::vector<float>>(
      seqs, shape.heads, [](int64_t, std::vector<float>&) {}, attend));
  if (failures.load() != 0) {
    return absl::InternalError(absl::StrCat(op, ": oneDNN sgemm failed for ", failures.load(),
                                            " (sequence, head) pairs; longest sequence ", seqs.max_len, " tokens"));
  }
  return absl::OkStatus();
}

// int32 scores per block of int8 attention's rows: 16 KiB, a third of L1.
constexpr int64_t kScoreBlockInts = 4096;

// One worker's buffers for int8 attention, grown to the longest sequence it has seen.
struct Int8Scratch {
  std::vector<uint8_t> q_codes, p_codes;  // the GEMMs' activations in the kernel's code (u8 or s16)
  std::vector<float> absmax;              // the sequence's column_absmax over its [Q | K | V] columns
  std::vector<float> q_scales, v_scales, v_inverse, p_scales;
  std::vector<int32_t> scores;  // Q Kᵀ's exact dot products
  Int8PackedWeights keys, values;
};

}  // namespace

Status self_attention(const float* qkv_in, const float* qkv_bias, const AttentionRows& seqs, int64_t rows,
                      int64_t heads, int64_t head_dim, float* context) {
  const int64_t hidden = heads * head_dim;
  const int64_t qkv_ld = 3 * hidden;
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
  return float_attention("self_attention", qkv, qkv_ld, seqs, AttentionHeads{heads, heads, head_dim}, false, context);
}

Status causal_attention(const float* qkv, int64_t ld, const AttentionRows& seqs, const AttentionHeads& shape,
                        float* context) {
  return float_attention("causal_attention", qkv, ld, seqs, shape, true, context);
}

Status self_attention_int8(const float* qkv, const AttentionRows& seqs, int64_t rows, int64_t heads, int64_t head_dim,
                           float* context) {
  const int64_t hidden = heads * head_dim;
  const int64_t qkv_ld = 3 * hidden;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const Int8Kernel kernel = int8_kernel_for(kernel_isa());
  const Int8RowKernels gemm = int8_row_kernels(kernel);
  const AttentionInt8Kernels ops = attention_int8_kernels(kernel);
  const int64_t code_bytes = int8_activation_bytes(kernel);
  zero_uncovered_rows(seqs, rows, hidden, context);

  auto prepare = [&](int64_t b, Int8Scratch& s) {
    s.absmax.resize(static_cast<size_t>(qkv_ld));
    ops.column_absmax(qkv + int64_t{seqs.starts[b]} * qkv_ld, qkv_ld, seqs.lengths[b], qkv_ld, s.absmax.data());
  };
  auto attend = [&](int64_t b, int64_t h, Int8Scratch& s) {
    const int64_t len = seqs.lengths[b];
    if (len <= 0) return;
    const float* q = qkv + int64_t{seqs.starts[b]} * qkv_ld + h * head_dim;
    const float* k = q + hidden;
    const float* v = q + 2 * hidden;
    const auto n = static_cast<size_t>(len);
    const float* head_absmax = s.absmax.data() + h * head_dim;
    const float q_max = *std::max_element(head_absmax, head_absmax + head_dim);
    const float k_max = *std::max_element(head_absmax + hidden, head_absmax + hidden + head_dim);
    // Q and K with one scale each, which the scores' row and column scales carry. Q is the GEMM's activations,
    // quantized by the GEMM's own row kernel with that one (static) scale.
    const int64_t ldq = round_up(head_dim, 4);  // the packed keys' k_padded
    s.q_codes.resize(n * static_cast<size_t>(ldq * code_bytes));
    s.q_scales.resize(n);
    const QuantizeActivationsArgs qa{q,   qkv_ld,           nullptr,           head_dim,
                                     ldq, s.q_codes.data(), s.q_scales.data(), s8_scale(q_max)};
    gemm.quantize(qa, 0, len);
    ops.pack_keys(k, qkv_ld, len, head_dim, s8_inverse(k_max), s.keys);
    // P as codes, at the row stride of the packed values, from the scores as exact int32 dot products (the kDots
    // epilogue writes their bits; they carry the Q and K scales), a block of rows at a time so that the block's
    // scores stay in L1 from the GEMM's stores to the softmax's loads.
    const int64_t ldp = round_up(len, 4);
    s.p_codes.resize(n * static_cast<size_t>(ldp * code_bytes));
    s.p_scales.resize(n);
    const int64_t block = std::max<int64_t>(6, kScoreBlockInts / len / 6 * 6);  // whole 6-row tiles
    s.scores.resize(static_cast<size_t>(std::min(block, len) * len));
    for (int64_t i = 0; i < len; i += block) {
      const int64_t rows_here = std::min(block, len - i);
      const Int8GemmArgs qk{s.q_codes.data() + i * ldq * code_bytes,
                            ldq,
                            s.q_scales.data() + i,
                            &s.keys,
                            nullptr,
                            nullptr,
                            Int8Epilogue::kDots,
                            reinterpret_cast<float*>(s.scores.data()),
                            len};
      gemm.gemm(qk, 0, rows_here, 0, panel_count(s.keys));
      ops.softmax_codes(s.scores.data(), len, rows_here, len, scale * s8_scale(q_max) * s8_scale(k_max),
                        s.p_codes.data() + i * ldp * code_bytes, ldp, code_bytes == 2, s.p_scales.data() + i);
    }
    // V per channel.
    s.v_scales.resize(static_cast<size_t>(head_dim));
    s.v_inverse.assign(static_cast<size_t>(round_up(head_dim, 16)), 0.0f);
    for (int64_t c = 0; c < head_dim; ++c) {
      s.v_scales[c] = s8_scale(head_absmax[2 * hidden + c]);
      s.v_inverse[c] = s8_inverse(head_absmax[2 * hidden + c]);
    }
    ops.pack_values(v, qkv_ld, len, head_dim, s.v_inverse.data(), s.values);
    float* out = context + int64_t{seqs.starts[b]} * hidden + h * head_dim;
    const Int8GemmArgs pv{s.p_codes.data(),
                          ldp,
                          s.p_scales.data(),
                          &s.values,
                          s.v_scales.data(),
                          nullptr,
                          Int8Epilogue::kBias,
                          out,
                          hidden};
    gemm.gemm(pv, 0, len, 0, panel_count(s.values));
  };
  return for_each_head<Int8Scratch>(seqs, heads, prepare, attend);
}

}  // namespace brisk::kernels::cpu
