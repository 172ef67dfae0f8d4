// The quantized model file under its quant:: names. The file's reader and writer live in brisk/model/model_file.h,
// below the quantizer that writes it and beside the loader (brisk/model/loader.h) that reads it.
//
//   BRISK_ASSIGN_OR_RETURN(quant::QuantizedModel q, quant::load_quantized_model("minilm.int8.safetensors"));
//
// Thread safety: as brisk/model/model_file.h.
#pragma once

#include "brisk/model/config.h"
#include "brisk/model/model_file.h"
#include "brisk/model/weights.h"
#include "brisk/quant/scheme.h"

namespace brisk::quant {

using ::brisk::check_quantized_model_file;
using ::brisk::file_sha256_hex;
using ::brisk::is_quantized_model_file;
using ::brisk::kQuantizedFormat;
using ::brisk::load_quantized_model;
using ::brisk::QuantizedModel;
using ::brisk::read_model_files;
using ::brisk::save_quantized_model;

}  // namespace brisk::quant
