// Percentiles of samples, computed one way everywhere brisk reports them (the CLI, capacity planning, the examples,
// the benchmarks): linear interpolation between the closest ranks, numpy.percentile's default ("linear"), with p in
// [0, 100]. p = 50 of {1, 2, 3, 4} is 2.5; p = 25 is 1.75.
//
//   std::sort(ms.begin(), ms.end());
//   double p99 = brisk::percentile_of_sorted(ms, 99);
//   double p50 = brisk::percentile(latencies_ms, 50);   // any order: sorts a copy
//
// No samples, or p NaN, give NaN; p outside [0, 100] is clamped to it.
//
// Thread safety: pure functions.
#pragma once

#include <span>
#include <vector>

#include "brisk/core/export.h"

namespace brisk {

// `sorted` in ascending order.
BRISK_API double percentile_of_sorted(std::span<const double> sorted, double p);
BRISK_API double percentile(std::vector<double> values, double p);

}  // namespace brisk
