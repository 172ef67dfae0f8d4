// The Catch2 main shared by brisk's test programs: Catch2's own session, plus the skip report of test_skip.h.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "test_skip.h"

namespace {

// Counts the runs of each test case (one per entry into its body) and whether each was skipped.
class SkipListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void sectionStarting(Catch::SectionInfo const& info) override {
    if (depth_++ == 0) brisk::testing::skip_state().current_run_skipped = false;
    TestEventListenerBase::sectionStarting(info);
  }

  void sectionEnded(Catch::SectionStats const& stats) override {
    if (--depth_ == 0) {
      brisk::testing::SkipState& s = brisk::testing::skip_state();
      (s.current_run_skipped ? s.runs_skipped : s.runs_completed) += 1;
      s.current_run_skipped = false;
    }
    TestEventListenerBase::sectionEnded(stats);
  }

 private:
  int depth_ = 0;  // 1 inside the test case's own (root) section
};

}  // namespace

CATCH_REGISTER_LISTENER(SkipListener)

int main(int argc, char* argv[]) {
  const int result = Catch::Session().run(argc, argv);
  const brisk::testing::SkipState& s = brisk::testing::skip_state();
  if (s.reasons.empty()) return result;
  // The marker that ctest's SKIP_REGULAR_EXPRESSION matches: only when nothing failed and nothing ran.
  const bool skipped = result == 0 && s.runs_completed == 0 && s.runs_skipped > 0;
  for (const std::string& reason : s.reasons)
    std::printf("%s%s\n", skipped ? "BRISK_SKIPPED: " : "note: skipped a part: ", reason.c_str());
  if (!skipped)
    std::printf("note: %d run(s) completed, %d skipped%s\n", s.runs_completed, s.runs_skipped,
                result == 0 ? "" : "; the failures above count, whatever was skipped");
  std::fflush(stdout);
  return result;
}
