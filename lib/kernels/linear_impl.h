// Private to lib/kernels: the interface behind brisk::Linear, implemented once per device and weight dtype.
#pragma once

#include <cstdint>

#include "brisk/kernels/gemm.h"

namespace brisk {

struct Linear::Impl {
  virtual ~Impl() = default;
  virtual Status forward(const void* x, int64_t rows, void* y, GemmEpilogue epilogue, int64_t ldy) const = 0;
};

}  // namespace brisk
