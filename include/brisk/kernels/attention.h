// Multi-head self-attention: the fused QKV projection output goes in, the per-head context comes out. Sequences sit
// at any rows of the activations, so the same op serves a packed batch (padding removed: sequences back to back)
// and a padded one ([batch, max_len] rows):
//
//   // qkv: [rows, 3 * hidden] laid out as [Q | K | V], each [heads, head_dim]
//   AttentionRows seqs{starts, lengths, batch, max_len};   // on the op's device
//   BRISK_RETURN_IF_ERROR(self_attention(device, qkv, /*qkv_bias=*/nullptr, seqs, rows, heads, head_dim, context));
//
// context[t] = softmax(q_t Kᵀ / sqrt(head_dim)) V within t's sequence, [rows, heads * head_dim]. Rows that belong
// to no sequence (the pad rows of a padded batch) get zeros. qkv_bias, when not null, is [3 * hidden] and is
// added to Q, K and V first (the projection then runs without its bias).
//
// Dispatch: one switch on `device`.
//   CPU   per (sequence, head), two strided sgemm calls reading Q, K and V straight out of qkv, and the masked
//         softmax; float only.
//   CUDA  EFF-FT's layout: one kernel adds the bias and scatters Q, K and V into zero-padded [batch, heads,
//         max_len, head_dim] (the padding is rebuilt only here), two strided-batched cuBLAS GEMMs around the
//         scaled masked softmax, and one kernel gathers the context back into its rows. float, float16_t,
//         bfloat16_t; scratch comes from the device's caching allocator (OUT_OF_MEMORY past its cap).
//   A build without CUDA returns UNIMPLEMENTED for cuda, naming BRISK_WITH_CUDA.
//
// Thread safety: reentrant; concurrent calls on distinct outputs are safe.
#pragma once

#include <cstdint>
#include <type_traits>

#include "brisk/core/export.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk::kernels {

// Where each sequence sits in the [rows, ...] activations; pointers on the op's device.
struct AttentionRows {
  const int32_t* starts;   // [batch] first row of sequence b
  const int32_t* lengths;  // [batch] its rows, each <= max_len
  int64_t batch = 0;
  int64_t max_len = 0;  // the longest sequence
};

// Checks a sequence table in host memory against `rows` rows: every sequence b has 0 <= lengths[b] <= max_len and
// its rows [starts[b], starts[b] + lengths[b]) lie within [0, rows). INVALID_ARGUMENT names `op`, the sequence and
// the bounds. The CPU dispatch of self_attention and self_attention_int8 runs it on every call. A device's table is
// in device memory, which the dispatch cannot read: whoever uploads one checks its host copy with this first (the
// encoder does), and the device kernels clamp each length to [0, max_len] (one rule for all of them).
BRISK_API Status check_attention_rows(const char* op, const AttentionRows& host_sequences, int64_t rows);

// self_attention<float> with QKᵀ and P·V as exact int8 GEMMs (CPU only), on the int8 GEMM kernel of the ISA level
// in use: per (sequence, head), Q and K quantized per token, V per channel, and the softmax written as 8-bit codes
// per row (round(255 * exp(s - max)), scaled by 1 / their sum). The int8 encoder's attention; on all-MiniLM-L6-v2
// it moves the embeddings by as much as its int8 linears do (benchmarks/RESULTS.md, "int8 attention"). On cuda it
// is UNIMPLEMENTED (the GPU runs attention in the activation dtype).
BRISK_API Status self_attention_int8(Device device, const float* qkv, const AttentionRows& sequences, int64_t rows,
                                     int64_t heads, int64_t head_dim, float* context);

// Whether self_attention_int8 is faster than self_attention<float> on the ISA level in use, as measured: on the
// AVX-512 levels (avx512's zmm vpmaddwd GEMM, avx512_vnni's vpdpbusd) and on avx_vnni (ymm vpdpbusd: 27% faster than
// float at 32x128 on an Intel Xeon with AVX-VNNI, 1 us slower at 1x16). On avx2 its ymm vpmaddwd GEMMs gain less than
// the quantisation passes cost (benchmarks/RESULTS.md, "int8 attention" and "The same on an Intel Xeon"). Never under
// reproducible arithmetic (brisk/core/internal/reproducible.h), which runs the scalar kernels.
BRISK_API bool int8_attention_preferred();

template <typename T>
BRISK_API Status self_attention(Device device, const T* qkv, const std::type_identity_t<T>* qkv_bias,
                                const AttentionRows& sequences, int64_t rows, int64_t heads, int64_t head_dim,
                                T* context);

}  // namespace brisk::kernels
