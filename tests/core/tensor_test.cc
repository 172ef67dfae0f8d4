// Tests of Tensor: alignment, sizing by dtype, shared storage, and errors for bad shapes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

#include "brisk/core/allocator.h"
#include "brisk/core/tensor.h"

using brisk::DType;
using brisk::Tensor;

TEST_CASE("owned tensors are 64-byte aligned and sized by dtype", "[core]") {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kU8, DType::kI32, DType::kI64}) {
    auto t = Tensor::empty({3, 5}, dt);
    REQUIRE(t.ok());
    CHECK(reinterpret_cast<uintptr_t>(t->raw_data()) % brisk::kTensorAlignment == 0);
    CHECK(t->numel() == 15);
    CHECK(t->nbytes() == 15 * brisk::dtype_size(dt));
    CHECK(t->owns_storage());
    CHECK(t->is_contiguous());
  }
  CHECK(brisk::dtype_size(DType::kBF16) == 2);
  CHECK(brisk::dtype_size(DType::kI64) == 8);
  CHECK(std::strcmp(brisk::dtype_name(DType::kBF16), "bf16") == 0);
}

TEST_CASE("zeros fills with zero and copies share storage", "[core]") {
  auto t = Tensor::zeros({4, 4}, DType::kF32);
  REQUIRE(t.ok());
  for (int i = 0; i < 16; ++i) CHECK(t->data<float>()[i] == 0.0f);
  Tensor copy = *t;
  copy.data<float>()[5] = 2.5f;
  CHECK(t->data<float>()[5] == 2.5f);
}

TEST_CASE("bad shapes are rejected with a message", "[core]") {
  auto neg = Tensor::empty({2, -1}, DType::kF32);
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.status().message().find("dimension 1 is -1") != std::string::npos);
  auto huge = Tensor::empty({int64_t{1} << 40, int64_t{1} << 40}, DType::kF32);
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().message().find("overflow") != std::string::npos);
}

TEST_CASE("cuda tensors fail cleanly without a GPU", "[core]") {
  auto t = Tensor::empty({2}, DType::kF32, brisk::Device::kCUDA);
  if (brisk::cuda_device_count() == 0) {
    CHECK_FALSE(t.ok());
  } else {
    CHECK(t.ok());
  }
}

TEST_CASE("reshape and slice_rows are views with checked bounds", "[core]") {
  auto t = Tensor::empty({4, 6}, DType::kI32);
  REQUIRE(t.ok());
  for (int i = 0; i < 24; ++i) t->data<int32_t>()[i] = i;
  auto r = t->reshape({2, 12});
  REQUIRE(r.ok());
  CHECK(r->data<int32_t>()[13] == 13);
  CHECK(r->shape_string() == "[2, 12]");
  CHECK_FALSE(t->reshape({5, 5}).ok());
  auto s = t->slice_rows(1, 3);
  REQUIRE(s.ok());
  CHECK(s->dim(0) == 2);
  CHECK(s->data<int32_t>()[0] == 6);
  CHECK_FALSE(t->slice_rows(3, 5).ok());
  CHECK_FALSE(t->slice_rows(2, 1).ok());
}

TEST_CASE("borrowed tensors do not own and see caller memory", "[core]") {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  Tensor b = Tensor::borrow(buf, {2, 3}, DType::kF32);
  CHECK_FALSE(b.owns_storage());
  CHECK(b.data<float>()[4] == 5.0f);
  Tensor strided = Tensor::borrow(buf, {2, 2}, DType::kF32, {3, 1});
  CHECK_FALSE(strided.is_contiguous());
  CHECK_FALSE(strided.reshape({4}).ok());
}
