// Precisions: the formats a layer's weights can be stored and run in, by name. The formats behind them (int8 per
// channel, int4 groups, bf16) and their arithmetic are brisk/kernels/quant_format.h. They sit below the model, which
// loads them, and the quantizer, which makes them (brisk/quant/scheme.h keeps their quant:: names).
//
//   BRISK_ASSIGN_OR_RETURN(PrecisionSpec p, parse_precision("int4-g64-min"));
//   precision_name(p);   // "int4-g64-min"
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

enum class Precision : uint8_t {
  kF32,
  kBF16,
  kInt8Dynamic,  // int8 weights; activations quantized per token at run time
  kInt8Static,   // int8 weights; activations with one calibrated scale per tensor
  kInt4,         // int4 groups, weight-only (linear layers are computed in f32 from the dequantized weights)
};

struct BRISK_API PrecisionSpec {
  Precision precision = Precision::kF32;
  int64_t group_size = 32;  // int4 only: 32, 64 or 128
  bool with_min = false;    // int4 only: asymmetric groups with an f16 minimum

  bool operator==(const PrecisionSpec&) const = default;
};

// "fp32", "bf16", "int8-dynamic", "int8-static", "int4-g32", "int4-g64-min", ...
BRISK_API std::string precision_name(const PrecisionSpec& spec);
// Parses the names above ("int8" is int8-dynamic, "f32" is fp32); the error lists the valid names.
BRISK_API StatusOr<PrecisionSpec> parse_precision(std::string_view text);

}  // namespace brisk
