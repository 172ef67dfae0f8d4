// Private to lib/kernels: the interface behind brisk::kernels::Linear, implemented once per device and weight dtype
// (lib/kernels/cpu/: oneDNN f32/bf16 and int8; lib/kernels/cuda/: cuBLASLt).
#pragma once

#include <cstdint>
#include <string>

#include "brisk/kernels/linear.h"

namespace brisk::kernels {

struct Linear::Impl {
  virtual ~Impl() = default;
  // x and y hold the Linear's activation dtype on its device. Arguments are checked by Linear::forward: rows > 0,
  // non-null pointers, ldy >= n, activation epilogues only with ldy == n.
  virtual Status forward(const void* x, int64_t rows, void* y, GemmEpilogue epilogue, int64_t ldy) const = 0;
  // What computes it, for reports: e.g. "avx2 vpmaddwd", "oneDNN brg:avx512_core".
  virtual std::string kernel_name() const = 0;
};

}  // namespace brisk::kernels
