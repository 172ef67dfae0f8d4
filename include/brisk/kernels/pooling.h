// Sentence-embedding pooling over the encoder's last hidden state, and L2 normalisation, matching
// sentence-transformers (Pooling + Normalize modules):
//
//   mean_pool<Device::kCPU>(hidden, lengths, batch, seq, dim, emb);   // emb [batch, dim]
//   l2_normalize<Device::kCPU>(emb, batch, dim);                        // all-MiniLM-L6-v2's embeddings
//
//   mean_pool     out[b, :] = sum_{t < lengths[b]} hidden[b, t, :] / max(lengths[b], 1e-9). The first lengths[b]
//                 positions of sequence b are its real tokens (lengths clamped to [0, seq]); lengths[b] == 0
//                 gives a row of zeros, never a division by zero. lengths == nullptr: every sequence has seq.
//   cls_pool      out[b, :] = hidden[b, 0, :] (the [CLS] token).
//   l2_normalize  in place x[r, :] /= max(||x[r, :]||_2, eps), torch.nn.functional.normalize(x, p=2, dim=1).
//                 The sum of squares is fp32: values must stay below ~1e19 in magnitude.
// hidden is fp32 [batch, seq, dim], out [batch, dim], both row-major and contiguous, and must not overlap.
// Non-positive sizes do nothing.
//
// Dispatch: one template per device; the CPU specialisations pick AVX-512, AVX2+FMA or the scalar reference at
// run time and split the batch over brisk::parallel_for.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>

#include "brisk/core/export.h"
#include "brisk/core/tensor.h"

namespace brisk {

template <Device D>
BRISK_API void mean_pool(const float* hidden, const int32_t* lengths, int64_t batch, int64_t seq, int64_t dim,
                         float* out);

template <Device D>
BRISK_API void cls_pool(const float* hidden, int64_t batch, int64_t seq, int64_t dim, float* out);

template <Device D>
BRISK_API void l2_normalize(float* x, int64_t rows, int64_t cols, float eps = 1e-12f);

template <>
BRISK_API void mean_pool<Device::kCPU>(const float* hidden, const int32_t* lengths, int64_t batch, int64_t seq,
                                       int64_t dim, float* out);
template <>
BRISK_API void cls_pool<Device::kCPU>(const float* hidden, int64_t batch, int64_t seq, int64_t dim, float* out);
template <>
BRISK_API void l2_normalize<Device::kCPU>(float* x, int64_t rows, int64_t cols, float eps);

}  // namespace brisk
