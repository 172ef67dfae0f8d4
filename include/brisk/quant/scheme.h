// Quantization schemes under their quant:: names. The precisions (Precision, PrecisionSpec, precision_name,
// parse_precision) live in brisk/kernels/precision.h and the formats behind them (Int8Matrix, Int4Matrix and their
// arithmetic) in brisk/kernels/quant_format.h, below the model that loads them.
//
//   BRISK_ASSIGN_OR_RETURN(quant::PrecisionSpec p, quant::parse_precision("int4-g64-min"));
//
// Thread safety: pure functions.
#pragma once

#include "brisk/kernels/precision.h"
#include "brisk/kernels/quant_format.h"

namespace brisk::quant {

using ::brisk::check_finite;
using ::brisk::check_int4_matrix;
using ::brisk::dequantize_int4;
using ::brisk::dequantize_int4_row;
using ::brisk::dequantize_int8;
using ::brisk::Int4Matrix;
using ::brisk::Int8Matrix;
using ::brisk::parse_precision;
using ::brisk::Precision;
using ::brisk::precision_name;
using ::brisk::PrecisionSpec;
using ::brisk::quantize_int4;
using ::brisk::quantize_int8;
using ::brisk::to_bfloat16;

}  // namespace brisk::quant
