// Skipping a Catch2 test case that cannot run on this machine (no CUDA device, no libtorch in the build, an ISA level
// the CPU lacks, no default model), so that ctest reports it as Skipped rather than Passed.
//
//   TEST_CASE("on cuda:0 ...", "[cuda]") {
//     BRISK_SKIP_WITHOUT_CUDA();                     // or: if (...) BRISK_SKIP("why, and what would make it run");
//     ...
//   }
//   bool have_torch() { ...; brisk::testing::skip_test_case("brisk was built without libtorch"); return false; }
//
// Catch2 v2 has no skip. BRISK_SKIP records the reason and returns from the test case; skip_test_case() only records
// it (for helpers that return a sentinel to the test case, which then returns). The shared main (tests/main.cc)
// prints one line "BRISK_SKIPPED: <reason>" per reason after the run, and only when
//   - no assertion failed (a skip never hides a failure: a case that failed and then skipped is Failed), and
//   - every run of every test case that ran was skipped: a case that checked something at one ISA level or in one
//     generator branch and skipped another is a partial skip, stays Passed and prints the reasons as "note:" lines.
// tests/CMakeLists.txt registers every Catch test with SKIP_REGULAR_EXPRESSION "BRISK_SKIPPED: ", so ctest counts
// such an entry (one test case per entry) as Skipped and `ctest -V` shows the reason.
//
// A run is one pass through the test case's body from its start (Catch2 re-enters the body once per SECTION leaf and
// per GENERATE value); tests/main.cc's listener tracks them.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace brisk::testing {

// The skips of this process and whether the current run of the current test case was skipped.
struct SkipState {
  std::vector<std::string> reasons;  // in order, duplicates dropped
  bool current_run_skipped = false;
  int runs_completed = 0;  // runs of any test case that were not skipped
  int runs_skipped = 0;
};

inline SkipState& skip_state() {
  static SkipState state;
  return state;
}

// Marks the current run of the current test case skipped for `reason`; the caller returns from the test case.
inline void skip_test_case(const std::string& reason) {
  SkipState& s = skip_state();
  s.current_run_skipped = true;
  for (const std::string& r : s.reasons)
    if (r == reason) return;
  s.reasons.push_back(reason);
}

}  // namespace brisk::testing

// Skips the rest of the enclosing TEST_CASE (see above). `reason` is streamed: BRISK_SKIP("no " << what).
#define BRISK_SKIP(reason)                                      \
  do {                                                          \
    std::ostringstream brisk_skip_reason_;                      \
    brisk_skip_reason_ << reason;                               \
    ::brisk::testing::skip_test_case(brisk_skip_reason_.str()); \
    return;                                                     \
  } while (0)
