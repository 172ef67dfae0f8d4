// Tensor: a typed, shaped, strided view over memory on a device, either owning its storage (64-byte aligned,
// shared between copies) or borrowing memory that the caller keeps alive.
//
//   BRISK_ASSIGN_OR_RETURN(Tensor x, Tensor::empty({batch, seq, hidden}, DType::kF32));
//   float* p = x.data<float>();
//   Tensor w = Tensor::borrow(mapped_ptr, {384, 384}, DType::kF32);   // no copy, caller owns the bytes
//
// Thread safety: a Tensor is a value type. Distinct Tensor objects may be used concurrently even when they share
// storage; writes to shared storage need external synchronisation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk {

enum class DType : uint8_t { kF32, kF16, kBF16, kI8, kU8, kI32, kI64 };
enum class Device : uint8_t { kCPU, kCUDA };

BRISK_API size_t dtype_size(DType dtype);
BRISK_API const char* dtype_name(DType dtype);
BRISK_API const char* device_name(Device device);

// Storage alignment of every owned tensor, in bytes (one cache line, one AVX-512 register).
inline constexpr size_t kTensorAlignment = 64;

class BRISK_API Tensor {
 public:
  Tensor() = default;

  // Allocates uninitialised, contiguous, 64-byte aligned storage. Fails on a negative dimension, on an
  // overflowing size, or on a device this build does not support.
  static StatusOr<Tensor> empty(std::vector<int64_t> shape, DType dtype, Device device = Device::kCPU);
  // Like empty(), filled with zero bytes.
  static StatusOr<Tensor> zeros(std::vector<int64_t> shape, DType dtype, Device device = Device::kCPU);
  // Wraps memory the caller owns and keeps alive for the tensor's lifetime. Empty `strides` means contiguous.
  // The shape is the caller's promise (non-negative, describing that memory); it is not checked.
  static Tensor borrow(void* data, std::vector<int64_t> shape, DType dtype, std::vector<int64_t> strides = {},
                       Device device = Device::kCPU);
  // Wraps memory kept alive by `owner` (e.g. a memory-mapped file) for as long as any copy of the tensor lives.
  static Tensor from_shared(std::shared_ptr<void> owner, void* data, std::vector<int64_t> shape, DType dtype,
                            Device device = Device::kCPU);

  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // Precondition: -rank() <= i < rank().
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;
  bool owns_storage() const { return storage_ != nullptr; }
  bool defined() const { return data_ != nullptr || numel() == 0; }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }

  // A view with a new shape over the same contiguous storage; fails if numel differs or not contiguous.
  StatusOr<Tensor> reshape(std::vector<int64_t> shape) const;
  // A view of rows [begin, end) along dimension 0 (contiguous when this tensor is).
  StatusOr<Tensor> slice_rows(int64_t begin, int64_t end) const;

  std::string shape_string() const;  // "[2, 3]"

 private:
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  DType dtype_ = DType::kF32;
  Device device_ = Device::kCPU;
};

// Contiguous strides (in elements) for a shape.
BRISK_API std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

}  // namespace brisk
