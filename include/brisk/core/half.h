// Scalar conversions between float and the 16-bit float formats brisk stores: IEEE half (f16, used for int4 group
// scales) and bfloat16 (bf16 weights). Rounding is to nearest, ties to even; NaN stays NaN.
//
//   uint16_t b = brisk::float_to_bf16(1.5f);   // 0x3fc0
//   float f = brisk::bf16_to_float(b);         // 1.5f
//
// float16_t and bfloat16_t are the element types of f16 and bf16 activations in the kernels' typed entry points
// (brisk/kernels/): two bytes holding the format's bits, layout-compatible with CUDA's __half and __nv_bfloat16.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace brisk {

struct float16_t {
  uint16_t bits;
};
struct bfloat16_t {
  uint16_t bits;
};
static_assert(sizeof(float16_t) == 2 && sizeof(bfloat16_t) == 2);

inline float bf16_to_float(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// Values beyond the f16 range become infinity; callers that need finite scales check the input range first.
inline uint16_t float_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow (>= 65520) and inf
  if (abs < 0x38800000u) {                                               // subnormal or zero in f16
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);           // below half the smallest subnormal
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    uint32_t v = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (v & 1u))) ++v;
    return static_cast<uint16_t>(sign | v);
  }
  uint32_t v = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;
  return static_cast<uint16_t>(sign | v);
}

// Generic forms over the element types float, float16_t and bfloat16_t.
template <typename T>
float to_float(T v) {
  if constexpr (std::is_same_v<T, float16_t>) {
    return f16_to_float(v.bits);
  } else if constexpr (std::is_same_v<T, bfloat16_t>) {
    return bf16_to_float(v.bits);
  } else {
    return v;
  }
}

template <typename T>
T from_float(float f) {
  if constexpr (std::is_same_v<T, float16_t>) {
    return float16_t{float_to_f16(f)};
  } else if constexpr (std::is_same_v<T, bfloat16_t>) {
    return bfloat16_t{float_to_bf16(f)};
  } else {
    return f;
  }
}

}  // namespace brisk
