// Private to lib/kernels: the interface behind brisk::kernels::Linear, implemented once per device and weight dtype
// (lib/kernels/cpu/: oneDNN f32/bf16 and int8; lib/kernels/cuda/: cuBLASLt).
#pragma once

#include <cstdint>
#include <string>

#include "brisk/kernels/linear.h"
#include "rows_done.h"

namespace brisk::kernels {

struct Linear::Impl {
  virtual ~Impl() = default;
  // x and y hold the Linear's activation dtype on its device. Arguments are checked by Linear::forward: rows > 0,
  // non-null pointers, ldy >= n, activation epilogues only with ldy == n.
  virtual Status forward(const void* x, int64_t rows, void* y, GemmEpilogue epilogue, int64_t ldy) const = 0;
  // What computes it, for reports: e.g. "avx2 vpmaddwd", "oneDNN brg:avx512_core".
  virtual std::string kernel_name() const = 0;

  // The quantized-input form (CPU int8 only; the others return 0 and are never asked for the rest). Bytes of one
  // quantized row; 0: the Linear takes floats only.
  virtual int64_t quantized_row_bytes() const { return 0; }
  // Quantizes rows [begin, end) of x (in_features floats apart) into codes (quantized_row_bytes() apart) and
  // row_scales, on the calling thread: the same values forward(x) quantizes.
  virtual void quantize_rows(const float*, int64_t, int64_t, uint8_t*, float*) const {}
  // forward() from codes and row_scales that quantize_rows wrote; arguments checked by Linear::forward. With
  // `then`, the GEMM's tasks are whole row blocks, each calling (*then)(begin, end, rows) on its worker for the rows
  // of the output it computed (concurrently, on disjoint ranges); y (ldy == out_features) may then be null: the
  // blocks go to scratch and reach the caller through `then` only.
  virtual Status forward_quantized(const uint8_t*, const float*, int64_t, float*, GemmEpilogue, int64_t,
                                   const RowsDone*) const {
    return absl::UnimplementedError("Linear::forward of a QuantizedInput; expected an int8 Linear on the cpu");
  }
};

// What lib/kernels reads and writes behind Linear's and QuantizedInput's public faces.
struct LinearAccess {
  static const Linear::Impl* impl(const Linear& l) { return l.impl_.get(); }
  // That `consumer` takes a producer's quantized rows of `width` floats: an int8 Linear on the cpu whose in_features
  // is width. The errors start with `op` and call the width `width_name` (linear.cc).
  static Status check_consumer(const char* op, const Linear& consumer, int64_t width, const char* width_name);
  // Makes q hold rows [0, first_row + rows) of consumer's encoding: afresh when first_row is 0, else keeping the
  // rows it holds (the caller checked that q is consumer's and holds first_row rows).
  static void prepare(QuantizedInput& q, const Linear::Impl& consumer, int64_t first_row, int64_t rows) {
    q.owner_ = &consumer;
    q.rows_ = first_row + rows;
    q.row_bytes_ = consumer.quantized_row_bytes();
    const auto bytes = static_cast<size_t>(q.rows_ * q.row_bytes_);
    if (q.codes_.size() < bytes) q.codes_.resize(bytes);
    if (q.row_scales_.size() < static_cast<size_t>(q.rows_)) q.row_scales_.resize(static_cast<size_t>(q.rows_));
  }
  // Quantizes `count` rows at x (consumer.in_features floats apart) into q's rows [row, row + count), q prepared for
  // consumer.
  static void quantize_block(QuantizedInput& q, const Linear::Impl& consumer, const float* x, int64_t row,
                             int64_t count) {
    consumer.quantize_rows(x, 0, count, q.codes_.data() + row * q.row_bytes_, q.row_scales_.data() + row);
  }
  static const void* owner(const QuantizedInput& q) { return q.owner_; }
  static const uint8_t* codes(const QuantizedInput& q, int64_t row) { return q.codes_.data() + row * q.row_bytes_; }
  static const float* row_scales(const QuantizedInput& q, int64_t row) { return q.row_scales_.data() + row; }
};

}  // namespace brisk::kernels
