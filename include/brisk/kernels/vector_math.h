// Element-wise transcendental functions over fp32 arrays, with the same exp, erf and tanh that the GeLU and
// softmax kernels use (so their accuracy can be checked and reused on their own):
//
//   BRISK_RETURN_IF_ERROR(vector_erf(Device::kCPU, x, y, n));   // y[i] = erf(x[i])
//
//   vector_exp   relative error <= 2e-7 for x in [-87.3, 88.37]; exactly 0 below -87.3 (no denormals), +inf above
//                88.72, saturating at ~2.4e38 in between.
//   vector_erf   absolute error <= 1e-6 over the whole float range.
//   vector_tanh  absolute error <= 2e-7.
// (These bounds are the CPU's vectorised forms; CUDA uses the device's expf, erff and tanhf.) NaN inputs give
// unspecified results. out may equal x (in place); other overlaps are not allowed. n == 0 does nothing.
//
// Dispatch: one switch on `device`. The CPU picks AVX-512, AVX2+FMA or the scalar reference (std::exp, std::erf,
// std::tanh) at run time and splits the array over brisk::parallel_for; CUDA runs a grid-stride kernel on the
// calling thread's stream; a build without CUDA returns UNIMPLEMENTED naming BRISK_WITH_CUDA.
//
// Thread safety: reentrant; concurrent calls may run when they write disjoint memory.
#pragma once

#include <cstdint>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk::kernels {

BRISK_API Status vector_exp(Device device, const float* x, float* out, int64_t n);
BRISK_API Status vector_erf(Device device, const float* x, float* out, int64_t n);
BRISK_API Status vector_tanh(Device device, const float* x, float* out, int64_t n);

// The dot product a[0..n) . b[0..n) of two host arrays, on the calling thread (no parallel_for, no device: its
// callers, such as the semantic cache's ANN index, call it per pair). n <= 0 gives 0. The summation order differs
// per ISA level, so results differ in the last bits between levels.
BRISK_API float dot(const float* a, const float* b, int64_t n);

}  // namespace brisk::kernels
