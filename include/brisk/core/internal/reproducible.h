// Reproducible arithmetic: while a ReproducibleScope is open on a thread, the CPU ops that thread runs, and the
// parallel_for workers it starts, give the same bits on every x86-64 CPU and at any thread count.
//
// How: every op takes its scalar kernel (select_kernel, the int8 GEMM's kernel, float attention rather than int8),
// whose float operations are fixed in number and order, compiled without FMA contraction; and the f32 GEMMs (the
// Linear layers, attention's Q·Kᵀ and P·V) run brisk's fixed-order GEMM (lib/kernels/cpu/gemm_fixed_order.h) in
// place of oneDNN, whose blocking follows the ISA, the cache sizes and the threads. The fixed-order GEMM still uses
// the CPU's widest vectors: each lane sums its products in the same order, one rounding per multiply and per add.
// What is left to the CPU: libm's expf and powf take an FMA path on CPUs with FMA (every AVX2 CPU) and another
// without, which may differ in the last bit of a few calls in a billion.
//
// The quantizer calibrates on it (EncoderOptions::reproducible), so that `brisk quantize` writes the same file on
// every CPU. It is slower than the CPU's best path: an op's kernel is the scalar one.
//
//   {
//     internal::ReproducibleScope scope;   // this thread, until the scope closes
//     BRISK_ASSIGN_OR_RETURN(auto fc, kernels::Linear::create(w, b, Device::kCPU));   // the fixed-order GEMM
//     BRISK_RETURN_IF_ERROR(kernels::layer_norm(...));                                // the scalar kernel
//   }
//
// Kernels that are picked once, at create() (Linear), keep the choice after the scope closes; the per-call ones
// (row kernels, attention) follow the scope of the thread that calls them.
//
// Thread safety: the flag is per thread; parallel_for and parallel_for_dynamic hand it to their workers.
#pragma once

#include "brisk/core/export.h"

namespace brisk::internal {

// Whether a ReproducibleScope is open on this thread (or on the thread whose parallel region this one works in).
BRISK_API bool reproducible_arithmetic();

class BRISK_API ReproducibleScope {
 public:
  explicit ReproducibleScope(bool on = true);
  ~ReproducibleScope();
  ReproducibleScope(const ReproducibleScope&) = delete;
  ReproducibleScope& operator=(const ReproducibleScope&) = delete;

 private:
  bool previous_;
};

}  // namespace brisk::internal
