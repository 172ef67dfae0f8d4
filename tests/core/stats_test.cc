// Percentiles against values worked out by hand from the definition (linear interpolation between closest ranks,
// numpy.percentile's default): for sorted x of n values, position p / 100 * (n - 1), and the value between the two
// ranks around it.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "brisk/core/stats.h"

TEST_CASE("percentile interpolates between the closest ranks", "[core][stats]") {
  const std::vector<double> x{1, 2, 3, 4};
  CHECK(brisk::percentile_of_sorted(x, 0) == 1.0);
  CHECK(brisk::percentile_of_sorted(x, 25) == 1.75);  // position 0.75
  CHECK(brisk::percentile_of_sorted(x, 50) == 2.5);   // position 1.5
  CHECK(brisk::percentile_of_sorted(x, 100) == 4.0);
  CHECK(brisk::percentile_of_sorted(x, 99) == Approx(3.97));  // position 2.97
  // Any order: a sorted copy.
  CHECK(brisk::percentile({4, 1, 3, 2}, 50) == 2.5);
  CHECK(brisk::percentile({7}, 90) == 7.0);
}

TEST_CASE("percentile of nothing is NaN and p is clamped to 0..100", "[core][stats]") {
  CHECK(std::isnan(brisk::percentile({}, 50)));
  CHECK(std::isnan(brisk::percentile({1, 2}, NAN)));
  CHECK(brisk::percentile({1, 2}, -5) == 1.0);
  CHECK(brisk::percentile({1, 2}, 250) == 2.0);
}
