// Private to lib/kernels: the callback by which a GEMM hands each block of output rows to a consumer while the block
// is in cache (Linear::Impl::forward_quantized, cpu::int8_gemm's row-block form).
//
//   const RowsDone then = [&](int64_t begin, int64_t end, const float* rows) { /* rows [begin, end), n apart */ };
//
// Thread safety: a GEMM calls it concurrently on disjoint row ranges, each from the worker that computed them.
#pragma once

#include <cstdint>
#include <functional>

namespace brisk::kernels {

using RowsDone = std::function<void(int64_t begin, int64_t end, const float* rows)>;

}  // namespace brisk::kernels
