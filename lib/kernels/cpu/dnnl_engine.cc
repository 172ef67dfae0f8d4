// The oneDNN engine and ISA cap. See dnnl_engine.h.
#include "dnnl_engine.h"

#include <cstdlib>
#include <mutex>

#include "brisk/core/cpu_features.h"

namespace brisk {
namespace {

dnnl::cpu_isa dnnl_isa_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return dnnl::cpu_isa::sse41;  // oneDNN's lowest level: it has no scalar-only mode
    case CpuIsa::kAvx2: return dnnl::cpu_isa::avx2;
    case CpuIsa::kAvxVnni: return dnnl::cpu_isa::avx2_vnni;
    case CpuIsa::kAvx512: return dnnl::cpu_isa::avx512_core;
    case CpuIsa::kAvx512Vnni: return dnnl::cpu_isa::avx512_core_vnni;
    case CpuIsa::kAvx512Bf16: break;
  }
  return dnnl::cpu_isa::all;
}

}  // namespace

void dnnl_isa_cap_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("DNNL_MAX_CPU_ISA") != nullptr) return;  // the user's own cap wins
    try {
      dnnl::set_max_cpu_isa(dnnl_isa_for(cpu_isa()));
    } catch (const dnnl::error&) {
      // oneDNN already generated code (someone else used it first): it keeps its own best level.
    }
  });
}

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine = [] {
    dnnl_isa_cap_once();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

namespace kernels::cpu {

bool dnnl_runs_bf16() {
  dnnl_isa_cap_once();
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;  // oneDNN's ISA values are bit sets, each level containing those below it
}

}  // namespace kernels::cpu
}  // namespace brisk
