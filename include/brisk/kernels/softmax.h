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
//   BRISK_RETURN_IF_ERROR(masked_softmax(Device::kCPU, scores, heads * seq, seq, len, 0.125f));
//   // scores [batch, heads, seq, ld] with per-sequence lengths, in one call
//   BRISK_RETURN_IF_ERROR(masked_softmax_batched(device, scores, batch, heads * seq, seq, ld, lengths, 0.125f));
//
// Three entry points, one kernel:
//   masked_softmax          contiguous rows (row stride == cols), one valid_cols for all rows.
//   masked_softmax_strided  row r starts at x + r * ld (ld >= cols); columns [cols, ld) are not touched.
//   masked_softmax_batched  `batch` groups of rows_per_group rows each, row stride ld; the rows of group g use
//                           valid_cols = lengths[g]. This is [batch, heads, q, k] attention with a key-padding
//                           mask given as sequence lengths.
// T is float, or on CUDA float16_t / bfloat16_t (fp32 arithmetic). On the CPU exp is vectorised (relative error
// <= 2e-7; inputs below -87.3 give exactly 0, never denormals).
//
// Dispatch: one switch on `device`. The CPU picks AVX-512, AVX2+FMA or the scalar reference (std::exp) at run time
// and splits rows over brisk::parallel_for; CUDA runs one warp per row (a block for long rows) on the calling
// thread's stream; a build without CUDA returns UNIMPLEMENTED naming BRISK_WITH_CUDA.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>

#include "brisk/core/export.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk::kernels {

template <typename T>
BRISK_API Status masked_softmax(Device device, T* x, int64_t rows, int64_t cols, int64_t valid_cols, float scale);

template <typename T>
BRISK_API Status masked_softmax_strided(Device device, T* x, int64_t rows, int64_t cols, int64_t ld, int64_t valid_cols,
                                        float scale);

template <typename T>
BRISK_API Status masked_softmax_batched(Device device, T* x, int64_t batch, int64_t rows_per_group, int64_t cols,
                                        int64_t ld, const int32_t* lengths, float scale);

}  // namespace brisk::kernels
