// Masked softmax over the rows of an attention-score matrix, in place: per row,
//
//   x[c] = exp(scale * x[c] - m) / sum_{c' < valid_cols} exp(scale * x[c'] - m)   for c <  valid_cols
//   x[c] = 0                                                                       for c >= valid_cols
//
// with m the row maximum of scale * x[0:valid_cols]. This is the key-padding mask: keys at and past a sequence's
// real length get no weight. valid_cols is clamped to [0, cols]; valid_cols == 0 gives a row of zeros, and so
// does a row whose valid scores are all -inf.
//
//   // scores [heads * seq, seq] of one sequence with `len` real tokens, scaled by 1/sqrt(head_dim)
//   masked_softmax<Device::kCPU>(scores, heads * seq, seq, len, 0.125f);
//   // scores [batch, heads, seq, ld] with per-sequence lengths, in one call
//   masked_softmax_batched<Device::kCPU>(scores, batch, heads * seq, seq, ld, lengths, 0.125f);
//
// Three entry points, one kernel:
//   masked_softmax          contiguous rows (row stride == cols), one valid_cols for all rows.
//   masked_softmax_strided  row r starts at x + r * ld (ld >= cols); columns [cols, ld) are not touched.
//   masked_softmax_batched  `batch` groups of rows_per_group rows each, row stride ld; the rows of group g use
//                           valid_cols = lengths[g]. This is [batch, heads, q, k] attention with a key-padding
//                           mask given as sequence lengths.
// exp is vectorised (relative error <= 2e-7; inputs below -87.3 give exactly 0, never denormals).
//
// Dispatch: one template per device; the CPU specialisation picks AVX-512, AVX2+FMA or the scalar reference
// (std::exp) at run time and splits rows over brisk::parallel_for.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>

#include "brisk/core/export.h"
#include "brisk/core/tensor.h"

namespace brisk {

template <Device D>
BRISK_API void masked_softmax(float* x, int64_t rows, int64_t cols, int64_t valid_cols, float scale);

template <Device D>
BRISK_API void masked_softmax_strided(float* x, int64_t rows, int64_t cols, int64_t ld, int64_t valid_cols,
                                      float scale);

template <Device D>
BRISK_API void masked_softmax_batched(float* x, int64_t batch, int64_t rows_per_group, int64_t cols, int64_t ld,
                                      const int32_t* lengths, float scale);

template <>
BRISK_API void masked_softmax<Device::kCPU>(float* x, int64_t rows, int64_t cols, int64_t valid_cols, float scale);
template <>
BRISK_API void masked_softmax_strided<Device::kCPU>(float* x, int64_t rows, int64_t cols, int64_t ld,
                                                    int64_t valid_cols, float scale);
template <>
BRISK_API void masked_softmax_batched<Device::kCPU>(float* x, int64_t batch, int64_t rows_per_group, int64_t cols,
                                                    int64_t ld, const int32_t* lengths, float scale);

}  // namespace brisk
