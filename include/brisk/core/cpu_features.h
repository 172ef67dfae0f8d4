// Run-time CPU feature detection, used by the kernels to pick their AVX-512, AVX2 or scalar implementation.
// BRISK_ISA=scalar|avx2|avx512 in the environment caps the level (for tests and comparisons).
//
//   if (brisk::cpu_isa() >= brisk::CpuIsa::kAvx512) { ... }
//
// Thread safety: detection runs once; all functions may be called concurrently.
#pragma once

#include <string_view>

#include "brisk/core/export.h"

namespace brisk {

enum class CpuIsa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// The best ISA level this CPU supports, capped by BRISK_ISA and by set_cpu_isa_cap().
BRISK_API CpuIsa cpu_isa();
// Caps the ISA level the kernels use from now on; returns the previous cap. For tests and benchmarks.
BRISK_API CpuIsa set_cpu_isa_cap(CpuIsa cap);
BRISK_API CpuIsa detected_cpu_isa();
// Whether the int8 kernels may use AVX-512 VNNI (vpdpbusd): the CPU has avx512_vnni and cpu_isa() is kAvx512
// (so BRISK_ISA and set_cpu_isa_cap() below avx512 turn it off too).
BRISK_API bool cpu_has_avx512_vnni();
BRISK_API const char* cpu_isa_name(CpuIsa isa);

}  // namespace brisk
