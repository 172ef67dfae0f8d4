// Shared helpers for the CPU kernel tests: run a test at each ISA level, random data, and element-wise comparison
// against a double-precision reference.
//
//   TEST_CASE("op matches the reference", "[kernels][isa]") {   // [isa]: registered with ctest once per level
//     BRISK_FOR_EACH_CPU_ISA();   // declares `isa`; the kernels run capped at it
//     ...
//     CHECK_CLOSE(got, want, /*abs_tol=*/1e-6, /*rel_tol=*/1e-6);   // std::vector<float> vs std::vector<double>
//   }
//
// ISA levels as ctest sees them. tests/CMakeLists.txt registers every case tagged [isa] once per level of
// brisk::kAllCpuIsas (scalar, avx2, avx_vnni, avx512, avx512_vnni, avx512_bf16) as `kernels.isa_<level>.<case>`,
// with BRISK_ISA=<level> in its environment, and every other case once, as `kernels.<case>`. Under BRISK_ISA,
// BRISK_FOR_EACH_CPU_ISA() runs the case at exactly that level (it checks that cpu_isa() is that level), or skips
// it with the reason when the CPU lacks the level (test_skip.h: ctest reports Skipped). BRISK_ISA also caps oneDNN
// for the whole process, so a oneDNN-backed op (int8/bf16 Linear) really runs oneDNN's kernels for that level.
// Without BRISK_ISA (a developer running brisk_kernels_tests by hand) it loops over the six levels in one process
// (a Catch2 GENERATE) and notes the levels the CPU lacks: a partial skip, reported Passed with "note:" lines.
//
// Every [isa] case is registered at all six levels, including levels at which its op has no kernel of its own
// (today brisk's fp32 kernels differ at scalar, avx2 and avx512; int8 at avx512_vnni; oneDNN at every level): a
// table of which op differs where would go stale silently as kernels are added, and each entry checks that the op
// is right when capped at that level, which is what a machine of that level runs. The cost is a few seconds each.
//
// For a new ISA-dependent test case (int8_gemm_test.cc included): tag it [isa] and start it with
// BRISK_FOR_EACH_CPU_ISA(). An untagged case that uses the macro still runs every level, in one ctest entry.
// A case that needs a level above the one in use (e.g. AVX-512 VNNI for one kernel) skips with
//   if (!brisk::cpu_supports(CpuIsa::kAvx512Vnni)) BRISK_SKIP("this CPU lacks avx512_vnni");
// A skip never hides a failure, and a case that ran at some level is never reported Skipped (test_skip.h).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "brisk/core/cpu_features.h"
#include "test_skip.h"
#include "test_util.h"

namespace brisk::testing {

// Caps the kernels' ISA level for the guard's lifetime, then restores the previous cap.
class IsaCapGuard {
 public:
  explicit IsaCapGuard(CpuIsa cap) : previous_(set_cpu_isa_cap(cap)) {}
  ~IsaCapGuard() { set_cpu_isa_cap(previous_); }
  IsaCapGuard(const IsaCapGuard&) = delete;
  IsaCapGuard& operator=(const IsaCapGuard&) = delete;

 private:
  CpuIsa previous_;
};

// Result of comparing got against want with |got - want| <= abs_tol + rel_tol * |want| per element.
struct Closeness {
  bool ok = true;
  size_t first_bad = 0;
  double max_abs_error = 0.0;
  std::string message;
};

inline Closeness compare_close(const float* got, const double* want, size_t n, double abs_tol, double rel_tol) {
  Closeness c;
  for (size_t i = 0; i < n; ++i) {
    const double g = got[i];
    const double w = want[i];
    double err = std::fabs(g - w);
    if (std::isinf(w) && g == w) err = 0.0;
    if (std::isnan(err)) err = INFINITY;
    if (err > c.max_abs_error) c.max_abs_error = err;
    if (c.ok && !(err <= abs_tol + rel_tol * std::fabs(w))) {
      c.ok = false;
      c.first_bad = i;
      std::ostringstream os;
      os.precision(9);
      os << "element " << i << ": got " << g << ", want " << w << " (error " << err << ", tolerance "
         << abs_tol + rel_tol * std::fabs(w) << ")";
      c.message = os.str();
    }
  }
  return c;
}

inline Closeness compare_close(const std::vector<float>& got, const std::vector<double>& want, double abs_tol,
                               double rel_tol) {
  REQUIRE(got.size() == want.size());
  return compare_close(got.data(), want.data(), got.size(), abs_tol, rel_tol);
}

// The ISA levels BRISK_FOR_EACH_CPU_ISA() runs: the one BRISK_ISA names, else all six. A BRISK_ISA that names no
// level fails the test case (cpu_isa_env_error() says why).
inline std::vector<CpuIsa> isa_levels_under_test() {
  const char* env = std::getenv("BRISK_ISA");
  if (env == nullptr || *env == '\0') return {std::begin(kAllCpuIsas), std::end(kAllCpuIsas)};
  const std::optional<CpuIsa> level = parse_cpu_isa(env);
  if (!level) FAIL(cpu_isa_env_error());
  return {*level};
}

// Why `isa` cannot run here, naming the CPU.
inline std::string missing_isa_reason(CpuIsa isa) {
  return std::string("this CPU (") + cpu_model_description() + ") lacks ISA level " + cpu_isa_name(isa) +
         "; the best it has is " + cpu_isa_name(detected_cpu_isa());
}

}  // namespace brisk::testing

// Runs the enclosing TEST_CASE at each level of isa_levels_under_test() with the kernels capped to it, and checks
// that the kernels then use exactly that level. A level the CPU lacks skips the run (BRISK_SKIP, see the top of this
// file). Declares `isa` and a guard that restores the cap. Call it first in the test case, outside any SECTION.
#define BRISK_FOR_EACH_CPU_ISA()                                                               \
  const ::brisk::CpuIsa isa = GENERATE(from_range(::brisk::testing::isa_levels_under_test())); \
  if (!::brisk::cpu_supports(isa)) BRISK_SKIP(::brisk::testing::missing_isa_reason(isa));      \
  ::brisk::testing::IsaCapGuard brisk_isa_guard_(isa);                                         \
  INFO("ISA level " << ::brisk::cpu_isa_name(isa));                                            \
  REQUIRE(::brisk::cpu_isa_name(::brisk::cpu_isa()) == std::string(::brisk::cpu_isa_name(isa)))

#define CHECK_CLOSE(got, want, abs_tol, rel_tol)                                                               \
  do {                                                                                                         \
    const ::brisk::testing::Closeness brisk_c_ = ::brisk::testing::compare_close(got, want, abs_tol, rel_tol); \
    INFO(brisk_c_.message);                                                                                    \
    CHECK(brisk_c_.ok);                                                                                        \
  } while (0)
