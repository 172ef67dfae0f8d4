// Percentiles. See include/brisk/core/stats.h.
#include "brisk/core/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace brisk {

double percentile_of_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty() || std::isnan(p)) return std::numeric_limits<double>::quiet_NaN();
  const double pos = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return percentile_of_sorted(values, p);
}

}  // namespace brisk
