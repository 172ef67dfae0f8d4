// Private to lib/kernels/cpu: the process-wide oneDNN CPU engine shared by every oneDNN-backed kernel, and
// oneDNN's ISA cap.
//
// oneDNN takes one ISA cap per process, before it generates any code: dnnl_isa_cap_once() sets it from brisk's
// level (cpu_isa(), i.e. BRISK_ISA) on first use, unless the user set DNNL_MAX_CPU_ISA themselves. Every entry into
// oneDNN (cpu_engine(), dnnl_sgemm) goes through it.
//
// Thread safety: every function may be called concurrently.
#pragma once

#include "oneapi/dnnl/dnnl.hpp"

namespace brisk {

void dnnl_isa_cap_once();
const dnnl::engine& cpu_engine();

namespace kernels::cpu {
// Whether oneDNN's level runs bf16 matmuls natively (avx512_core_bf16 or above).
bool dnnl_runs_bf16();
}  // namespace kernels::cpu

}  // namespace brisk
