// Run-time CPU ISA detection (scalar, AVX2, AVX-512) with the BRISK_ISA and set_cpu_isa_cap() caps.
#include "brisk/core/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace brisk {
namespace {

CpuIsa detect() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    return CpuIsa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::kAvx2;
  return CpuIsa::kScalar;
}

CpuIsa env_cap() {
  const char* env = std::getenv("BRISK_ISA");
  if (env == nullptr) return CpuIsa::kAvx512;
  if (std::strcmp(env, "scalar") == 0) return CpuIsa::kScalar;
  if (std::strcmp(env, "avx2") == 0) return CpuIsa::kAvx2;
  return CpuIsa::kAvx512;
}

std::atomic<int> g_cap{static_cast<int>(env_cap())};

}  // namespace

CpuIsa detected_cpu_isa() {
  static const CpuIsa isa = detect();
  return isa;
}

bool cpu_has_avx512_vnni() {
  static const bool vnni = [] {
    __builtin_cpu_init();
    return detected_cpu_isa() == CpuIsa::kAvx512 && __builtin_cpu_supports("avx512vnni");
  }();
  return vnni && cpu_isa() == CpuIsa::kAvx512;
}

CpuIsa cpu_isa() {
  const int cap = g_cap.load(std::memory_order_relaxed);
  const int detected = static_cast<int>(detected_cpu_isa());
  return static_cast<CpuIsa>(cap < detected ? cap : detected);
}

CpuIsa set_cpu_isa_cap(CpuIsa cap) { return static_cast<CpuIsa>(g_cap.exchange(static_cast<int>(cap))); }

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512: return "avx512";
  }
  return "unknown";
}

}  // namespace brisk
