// Private: the scalar reference of the int8/bf16 row kernels (cpu_kernels.h), compiled into quantize_rows.cc.
#pragma once

#include <algorithm>
#include <cmath>

#include "brisk/core/half.h"
#include "cpu_kernels.h"

namespace brisk::kernels::cpu {

inline float dynamic_row_scale(const float* x, int64_t cols) {
  float m = 0.0f;
  for (int64_t c = 0; c < cols; ++c) m = std::max(m, std::fabs(x[c]));
  return m > 0.0f ? m / 127.0f : 1.0f;
}

inline int8_t quantize_one(float v, float inv) {
  const float r = std::nearbyint(v * inv);
  return static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
}

}  // namespace brisk::kernels::cpu
