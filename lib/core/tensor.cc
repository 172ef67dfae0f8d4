// Tensor: dtype and device names, shape and size checks, owned, borrowed and shared storage.
#include "brisk/core/tensor.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_join.h"
#include "brisk/core/allocator.h"

namespace brisk {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI8: return 1;
    case DType::kU8: return 1;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
  }
  return "unknown";
}

const char* device_name(Device device) { return device == Device::kCPU ? "cpu" : "cuda"; }

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

namespace {

StatusOr<int64_t> checked_numel(const std::vector<int64_t>& shape, DType dtype) {
  int64_t n = 1;
  const int64_t limit = std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dtype_size(dtype));
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor dimension ", i, " is ", shape[i], "; expected a non-negative size"));
    }
    if (shape[i] != 0 && n > limit / shape[i]) {
      return absl::InvalidArgumentError("tensor shape overflows the addressable size; expected a smaller shape");
    }
    n *= shape[i];
  }
  return n;
}

}  // namespace

StatusOr<Tensor> Tensor::empty(std::vector<int64_t> shape, DType dtype, Device device) {
  BRISK_ASSIGN_OR_RETURN(int64_t n, checked_numel(shape, dtype));
  const size_t bytes = static_cast<size_t>(n) * dtype_size(dtype);
  BRISK_ASSIGN_OR_RETURN(void* ptr, allocate(device, bytes));
  Tensor t;
  t.storage_ = std::shared_ptr<void>(ptr, [device](void* p) { deallocate(device, p); });
  t.data_ = ptr;
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

StatusOr<Tensor> Tensor::zeros(std::vector<int64_t> shape, DType dtype, Device device) {
  if (device != Device::kCPU) {
    return absl::UnimplementedError("Tensor::zeros supports only cpu tensors; expected device cpu");
  }
  BRISK_ASSIGN_OR_RETURN(Tensor t, empty(std::move(shape), dtype, device));
  if (t.nbytes() > 0) std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::borrow(void* data, std::vector<int64_t> shape, DType dtype, std::vector<int64_t> strides,
                      Device device) {
  Tensor t;
  t.data_ = data;
  t.strides_ = strides.empty() ? contiguous_strides(shape) : std::move(strides);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

Tensor Tensor::from_shared(std::shared_ptr<void> owner, void* data, std::vector<int64_t> shape, DType dtype,
                           Device device) {
  Tensor t = borrow(data, std::move(shape), dtype, {}, device);
  t.storage_ = std::move(owner);
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

bool Tensor::is_contiguous() const { return strides_ == contiguous_strides(shape_); }

StatusOr<Tensor> Tensor::reshape(std::vector<int64_t> shape) const {
  if (!is_contiguous()) {
    return absl::FailedPreconditionError("reshape needs a contiguous tensor; got strided " + shape_string());
  }
  BRISK_ASSIGN_OR_RETURN(int64_t n, checked_numel(shape, dtype_));
  if (n != numel()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reshape ", shape_string(), " (", numel(), " elements) to a shape with ", n, " elements"));
  }
  Tensor t = *this;
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  return t;
}

StatusOr<Tensor> Tensor::slice_rows(int64_t begin, int64_t end) const {
  if (rank() == 0 || begin < 0 || end < begin || end > shape_[0]) {
    return absl::OutOfRangeError(absl::StrCat("row slice [", begin, ", ", end, ") is outside tensor ", shape_string(),
                                              "; expected 0 <= begin <= end <= dim 0"));
  }
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.data_ = static_cast<char*>(data_) + begin * strides_[0] * static_cast<int64_t>(dtype_size(dtype_));
  return t;
}

std::string Tensor::shape_string() const { return absl::StrCat("[", absl::StrJoin(shape_, ", "), "]"); }

}  // namespace brisk
