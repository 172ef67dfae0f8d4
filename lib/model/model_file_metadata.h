// The metadata of a quantized model file (brisk.format, brisk.config, brisk.files, brisk.precisions, ...): writing
// it from a QuantizedModel and parsing it back with every check. Internal to lib/model; see
// include/brisk/model/model_file.h for the layout.
//
// Thread safety: pure functions.
#pragma once

#include <map>
#include <string>

#include "brisk/model/model_file.h"

namespace brisk {

inline constexpr const char* kFormatKey = "brisk.format";

// A layer's precision as brisk.precisions gives it.
struct LayerPrecision {
  PrecisionSpec spec;
  float activation_scale = 0.0f;  // > 0 for int8-static, else 0
};

struct ModelMetadata {
  BertConfig config;
  std::map<std::string, std::string> files;  // brisk.files plus config.json
  std::map<std::string, LayerPrecision> precisions;
  std::string plan, source_sha256, report;
};

// Parses and checks the metadata; errors name `file` and the key.
StatusOr<ModelMetadata> parse_model_metadata(const std::map<std::string, std::string>& metadata,
                                             const std::string& file);
// The metadata save_quantized_model writes for `model`; errors name `path`.
StatusOr<std::map<std::string, std::string>> model_metadata(const std::string& path, const QuantizedModel& model);

// The tensors of a file checked against its metadata and put together (lib/model/model_file.cc).
StatusOr<QuantizedModel> assemble_quantized_model(const NamedTensors& tensors, ModelMetadata meta,
                                                  const std::string& file);

}  // namespace brisk
