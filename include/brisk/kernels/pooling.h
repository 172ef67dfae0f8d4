// Sentence-embedding pooling over the encoder's last hidden state, and L2 normalisation, matching
// sentence-transformers (Pooling + Normalize modules):
//
//   BRISK_RETURN_IF_ERROR(mean_pool(Device::kCPU, hidden, lengths, batch, seq, dim, emb));   // emb [batch, dim]
//   BRISK_RETURN_IF_ERROR(l2_normalize(Device::kCPU, emb, batch, dim));   // all-MiniLM-L6-v2's embeddings
//   // the encoder's fused form: sequences at any rows of [rows, dim], pooled and normalised in one pass
//   BRISK_RETURN_IF_ERROR(pool_sequences(device, hidden, {starts, lengths, batch}, dim, SequencePooling::kMean,
//                                        /*normalize=*/true, emb));
//
//   mean_pool       out[b, :] = sum_{t < lengths[b]} hidden[b, t, :] / max(lengths[b], 1e-9). The first lengths[b]
//                   positions of sequence b are its real tokens (lengths clamped to [0, seq]); lengths[b] == 0
//                   gives a row of zeros, never a division by zero. lengths == nullptr: every sequence has seq.
//   cls_pool        out[b, :] = hidden[b, 0, :] (the [CLS] token).
//   l2_normalize    in place x[r, :] /= max(||x[r, :]||_2, eps), torch.nn.functional.normalize(x, p=2, dim=1).
//                   The sum of squares is fp32: values must stay below ~1e19 in magnitude.
//   pool_sequences  sequence b is rows [starts[b], starts[b] + lengths[b]) of hidden [rows, dim] (packed or
//                   padded); mean, first-row or last-row pooling, then optionally l2_normalize, in one pass.
// hidden is [batch, seq, dim] (T: float, or on CUDA float16_t / bfloat16_t), out is fp32 [batch, dim]; both
// row-major and contiguous, and must not overlap. Sizes of 0 do nothing.
//
// Dispatch: one switch on `device`. The CPU picks AVX-512, AVX2+FMA or the scalar reference at run time and splits
// the batch over brisk::parallel_for; CUDA runs a block per sequence on the calling thread's stream (device
// pointers, lengths and starts included); a build without CUDA returns UNIMPLEMENTED naming BRISK_WITH_CUDA.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>

#include "brisk/core/export.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk::kernels {

// kMean: over each sequence's rows; kCls: its first row; kLast: its last row (decoder embedders).
enum class SequencePooling : uint8_t { kMean, kCls, kLast };

// Where each sequence of a batch sits in a [rows, dim] activation: on the op's device.
struct SequenceRows {
  const int32_t* starts;   // [batch] first row of sequence b
  const int32_t* lengths;  // [batch] its rows
  int64_t batch;
};

template <typename T>
BRISK_API Status mean_pool(Device device, const T* hidden, const int32_t* lengths, int64_t batch, int64_t seq,
                           int64_t dim, float* out);

template <typename T>
BRISK_API Status cls_pool(Device device, const T* hidden, int64_t batch, int64_t seq, int64_t dim, float* out);

BRISK_API Status l2_normalize(Device device, float* x, int64_t rows, int64_t cols, float eps = 1e-12f);

template <typename T>
BRISK_API Status pool_sequences(Device device, const T* hidden, const SequenceRows& sequences, int64_t dim,
                                SequencePooling mode, bool normalize, float* out);

}  // namespace brisk::kernels
