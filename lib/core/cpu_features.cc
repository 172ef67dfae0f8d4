// Run-time CPU ISA detection with the BRISK_ISA and set_cpu_isa_cap() caps. See cpu_features.h.
#include "brisk/core/cpu_features.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>

namespace brisk {
namespace {

// AVX-VNNI (CPUID leaf 7 subleaf 1, EAX bit 4), read directly: clang 14's __builtin_cpu_supports does not know it.
// It runs on the AVX registers, whose OS support the avx2 check already covers.
bool has_avx_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (eax >> 4) & 1u;
}

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

bool detect(CpuIsa isa) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  switch (isa) {
    case CpuIsa::kScalar: return true;
    case CpuIsa::kAvx2: return avx2;
    case CpuIsa::kAvxVnni: return avx2 && has_avx_vnni();
    case CpuIsa::kAvx512: return avx2 && has_avx512();
    case CpuIsa::kAvx512Vnni: return avx2 && has_avx512() && __builtin_cpu_supports("avx512vnni");
    case CpuIsa::kAvx512Bf16:
      return avx2 && has_avx512() && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16");
  }
  return false;
}

// Bit i: the CPU supports level i.
int supported_mask() {
  static const int mask = [] {
    int m = 0;
    for (CpuIsa isa : kAllCpuIsas) m |= detect(isa) ? 1 << static_cast<int>(isa) : 0;
    return m;
  }();
  return mask;
}

const char* env_value() { return std::getenv("BRISK_ISA"); }

CpuIsa env_cap() {
  const char* env = env_value();
  const std::optional<CpuIsa> cap = env != nullptr ? parse_cpu_isa(env) : std::nullopt;
  return cap.value_or(CpuIsa::kAvx512Bf16);
}

std::atomic<int> g_cap{static_cast<int>(env_cap())};

}  // namespace

bool cpu_supports(CpuIsa isa) { return (supported_mask() >> static_cast<int>(isa)) & 1; }

CpuIsa detected_cpu_isa() {
  static const CpuIsa best = [] {
    CpuIsa b = CpuIsa::kScalar;
    for (CpuIsa isa : kAllCpuIsas) b = cpu_supports(isa) ? isa : b;
    return b;
  }();
  return best;
}

CpuIsa cpu_isa() {
  for (int level = g_cap.load(std::memory_order_relaxed); level > 0; --level) {
    if (cpu_supports(static_cast<CpuIsa>(level))) return static_cast<CpuIsa>(level);
  }
  return CpuIsa::kScalar;
}

CpuIsa set_cpu_isa_cap(CpuIsa cap) { return static_cast<CpuIsa>(g_cap.exchange(static_cast<int>(cap))); }

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvxVnni: return "avx_vnni";
    case CpuIsa::kAvx512: return "avx512";
    case CpuIsa::kAvx512Vnni: return "avx512_vnni";
    case CpuIsa::kAvx512Bf16: return "avx512_bf16";
  }
  return "unknown";
}

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) {
  for (CpuIsa isa : kAllCpuIsas) {
    if (name == cpu_isa_name(isa)) return isa;
  }
  return std::nullopt;
}

std::string cpu_isa_env_error() {
  const char* env = env_value();
  if (env == nullptr || parse_cpu_isa(env).has_value()) return {};
  std::string names;
  for (CpuIsa isa : kAllCpuIsas) names += std::string(names.empty() ? "" : ", ") + cpu_isa_name(isa);
  return "BRISK_ISA is '" + std::string(env).substr(0, 40) + "'; expected one of " + names;
}

std::string cpu_model_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, family, number;
  auto value = [](const std::string& l) {
    const size_t start = l.find_first_not_of(" \t", l.find(':') == std::string::npos ? l.size() : l.find(':') + 1);
    return start == std::string::npos ? std::string() : l.substr(start);
  };
  for (int i = 0; i < 64 && std::getline(in, line); ++i) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = value(line);
    if (family.empty() && line.rfind("cpu family", 0) == 0) family = value(line);
    if (number.empty() && line.rfind("model", 0) == 0 && line.rfind("model name", 0) != 0) number = value(line);
  }
  if (model.empty()) return "unknown CPU";
  return model + " (family " + family + ", model " + number + ")";
}

}  // namespace brisk
