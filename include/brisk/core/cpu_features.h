// Run-time CPU feature detection: the one ISA level per process that every CPU op (brisk's kernels and oneDNN's)
// picks its implementation for.
//
// The levels, in order: scalar x86-64 < AVX2+FMA < AVX-VNNI (VEX, 256-bit vpdpbusd) < AVX-512 (F/BW/VL/DQ) <
// AVX-512 VNNI < AVX-512 BF16. A level needs its own features and those of the levels below it, except that the
// AVX-512 levels do not need AVX-VNNI (most AVX-512 CPUs lack it). The level in use is the highest one the CPU has
// at or below the cap: BRISK_ISA=scalar|avx2|avx_vnni|avx512|avx512_vnni|avx512_bf16 in the environment, or
// set_cpu_isa_cap(). An AVX-512 CPU capped at avx_vnni without AVX-VNNI runs avx2.
//
//   if (brisk::cpu_isa() >= brisk::CpuIsa::kAvx512) { ... }          // zmm kernels
//   if (brisk::cpu_isa() == brisk::CpuIsa::kAvxVnni) { ... }          // the one level that is not cumulative
//
// oneDNN is capped to the same level (dnnl::set_max_cpu_isa) when brisk creates its oneDNN engine, i.e. at the
// first oneDNN-backed op; set_cpu_isa_cap() after that caps brisk's own kernels only (oneDNN allows one cap per
// process), which tests use to run brisk's kernels at each level.
//
// Thread safety: detection runs once; all functions may be called concurrently.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "brisk/core/export.h"

namespace brisk {

enum class CpuIsa : int { kScalar = 0, kAvx2 = 1, kAvxVnni = 2, kAvx512 = 3, kAvx512Vnni = 4, kAvx512Bf16 = 5 };
inline constexpr CpuIsa kAllCpuIsas[] = {CpuIsa::kScalar, CpuIsa::kAvx2,       CpuIsa::kAvxVnni,
                                         CpuIsa::kAvx512, CpuIsa::kAvx512Vnni, CpuIsa::kAvx512Bf16};

// The level the kernels use now: the highest level the CPU supports at or below the cap.
BRISK_API CpuIsa cpu_isa();
// Caps the ISA level the kernels use from now on; returns the previous cap. For tests and benchmarks.
BRISK_API CpuIsa set_cpu_isa_cap(CpuIsa cap);
// Whether this CPU (whatever the cap) has everything `isa` needs.
BRISK_API bool cpu_supports(CpuIsa isa);
// The highest level this CPU supports, uncapped.
BRISK_API CpuIsa detected_cpu_isa();
// "scalar", "avx2", "avx_vnni", "avx512", "avx512_vnni", "avx512_bf16": the names BRISK_ISA takes.
BRISK_API const char* cpu_isa_name(CpuIsa isa);
BRISK_API std::optional<CpuIsa> parse_cpu_isa(std::string_view name);
// Empty when BRISK_ISA is unset or names a level; otherwise "BRISK_ISA is 'x'; expected one of ..." (the cap is
// then left at the CPU's best level). Runtime::create refuses to start with such a value.
BRISK_API std::string cpu_isa_env_error();
// The CPU's model name and family/model as /proc/cpuinfo gives them, e.g. "AMD EPYC (family 25, model 17)", for
// reports that must name the machine their figures come from.
BRISK_API std::string cpu_model_description();

}  // namespace brisk
