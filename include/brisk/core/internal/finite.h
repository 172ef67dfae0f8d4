// first_non_finite(): the one scan for NaN and infinities in float data that came from outside (a model file, a
// head file, a tensor to quantize); each loader then names the tensor and the element in its own words.
//
//   if (const int64_t i = first_non_finite(v, n); i >= 0)
//     return absl::InvalidArgumentError(absl::StrCat(name, " element ", i, " is ", v[i], "; expected finite values"));
//
// Thread safety: stateless.
#pragma once

#include <cmath>
#include <cstdint>

namespace brisk {

// The index of the first NaN or infinity in data[0, n), or -1 when every value is finite.
inline int64_t first_non_finite(const float* data, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(data[i])) return i;
  }
  return -1;
}

}  // namespace brisk
