// Private: the scalar reference of the int8/bf16 row kernels (cpu_kernels.h), compiled into quantize_rows.cc.
#pragma once

#include <algorithm>
#include <cmath>

#include "brisk/core/half.h"
#include "cpu_kernels.h"

namespace brisk::kernels::cpu {

// x[c], times the channel scale when there is one.
inline float scaled_input(const QuantizeRowsArgs& a, const float* x, int64_t c) {
  return a.channel_scale != nullptr ? x[c] * a.channel_scale[c] : x[c];
}

// x clamped to the codes' range [-127, 127], a NaN to -127 as the vector kernels' max/min give it (std::clamp would
// keep the NaN, and converting that to an integer is undefined).
inline float clamp_to_code(float x) { return std::min(127.0f, std::max(-127.0f, x)); }

inline int8_t quantize_one(float v, float inv) { return static_cast<int8_t>(std::nearbyint(clamp_to_code(v * inv))); }

// One output of the dequantize kernel: y[r, j] (+)= row_scales[r] * col_scales[j] * acc[r, j] + bias[j].
inline void dequantize_one(const DequantizeRowsArgs& a, int64_t r, int64_t j) {
  const float s = a.row_scales[r] * a.col_scales[a.per_tensor_weights ? 0 : j];
  const float v = static_cast<float>(a.acc[r * a.cols + j]) * s + (a.bias != nullptr ? a.bias[j] : 0.0f);
  float& y = a.y[r * a.ldy + j];
  y = a.accumulate ? y + v : v;
}

}  // namespace brisk::kernels::cpu
