// Private to lib/kernels: what every op's dispatch point (lib/kernels/<op>.cc) shares: argument checks that name
// the op and the argument, and the rule that the CPU ops take f32 only.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>

#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk::kernels {

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kF32;
  if constexpr (std::is_same_v<T, float16_t>) return DType::kF16;
  if constexpr (std::is_same_v<T, bfloat16_t>) return DType::kBF16;
  if constexpr (std::is_same_v<T, int8_t>) return DType::kI8;
  if constexpr (std::is_same_v<T, int32_t>) return DType::kI32;
}

// The CPU kernels compute in f32: f16 / bf16 data are a CUDA-only form.
template <typename T>
Status cpu_needs_f32(const char* op) {
  if constexpr (std::is_same_v<T, float>) {
    return absl::OkStatus();
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " on cpu got ", dtype_name(dtype_of<T>()), " data; expected f32 (f16 and bf16 run on cuda)"));
  }
}

// The element-wise functions of vector_math.h, for their CPU and CUDA twins.
enum class UnaryOp : uint8_t { kExp, kErf, kTanh };

// Every size must be >= 0.
inline Status check_sizes(const char* op, std::initializer_list<std::pair<const char*, int64_t>> sizes) {
  for (const auto& [name, value] : sizes) {
    if (value < 0) return absl::InvalidArgumentError(absl::StrCat(op, ": ", name, " is ", value, "; expected >= 0"));
  }
  return absl::OkStatus();
}

// Every pointer must be non-null.
inline Status check_pointers(const char* op, std::initializer_list<std::pair<const char*, const void*>> ptrs) {
  for (const auto& [name, p] : ptrs) {
    if (p == nullptr) return absl::InvalidArgumentError(absl::StrCat(op, ": ", name, " is null; expected a buffer"));
  }
  return absl::OkStatus();
}

inline Status unknown_device(const char* op, Device device) {
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": device ", static_cast<int>(device), " is not a device; expected cpu or cuda"));
}

}  // namespace brisk::kernels

// Explicit instantiations of an op template for each activation element type, and for each conversion between them.
#define BRISK_FOR_EACH_FLOAT_TYPE(X) X(float) X(::brisk::float16_t) X(::brisk::bfloat16_t)
#define BRISK_FOR_EACH_CONVERSION(X) \
  X(float, ::brisk::float16_t)       \
  X(float, ::brisk::bfloat16_t)      \
  X(::brisk::float16_t, float)       \
  X(::brisk::bfloat16_t, float) X(::brisk::float16_t, ::brisk::bfloat16_t) X(::brisk::bfloat16_t, ::brisk::float16_t)
