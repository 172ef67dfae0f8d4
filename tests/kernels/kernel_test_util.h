// Shared helpers for the CPU kernel tests: run a test once per ISA level the CPU has, random data, and
// element-wise comparison against a double-precision reference.
//
//   TEST_CASE("op matches the reference", "[kernels]") {
//     BRISK_FOR_EACH_CPU_ISA();   // re-runs the test case for scalar, avx2, avx512 (levels the CPU lacks: skipped)
//     ...
//     CHECK_CLOSE(got, want, /*abs_tol=*/1e-6, /*rel_tol=*/1e-6);   // std::vector<float> vs std::vector<double>
//   }
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "brisk/core/cpu_features.h"
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

}  // namespace brisk::testing

// Runs the enclosing TEST_CASE once per ISA level (Catch2 generator) with the kernels capped to it; levels the
// CPU does not have are skipped with a warning. Declares `isa` and a guard that restores the cap.
#define BRISK_FOR_EACH_CPU_ISA()                                                                                    \
  const ::brisk::CpuIsa isa = GENERATE(::brisk::CpuIsa::kScalar, ::brisk::CpuIsa::kAvx2, ::brisk::CpuIsa::kAvx512); \
  if (!::brisk::cpu_supports(isa)) {                                                                                \
    WARN("skipping ISA level " << ::brisk::cpu_isa_name(isa) << ": this CPU does not have it");                     \
    return;                                                                                                         \
  }                                                                                                                 \
  ::brisk::testing::IsaCapGuard brisk_isa_guard_(isa);                                                              \
  INFO("ISA level " << ::brisk::cpu_isa_name(isa))

#define CHECK_CLOSE(got, want, abs_tol, rel_tol)                                                               \
  do {                                                                                                         \
    const ::brisk::testing::Closeness brisk_c_ = ::brisk::testing::compare_close(got, want, abs_tol, rel_tol); \
    INFO(brisk_c_.message);                                                                                    \
    CHECK(brisk_c_.ok);                                                                                        \
  } while (0)
