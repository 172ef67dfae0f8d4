// Typed fields of the JSON files a model directory holds (config.json, modules.json, the Pooling config,
// sentence_bert_config.json, config_sentence_transformers.json), with errors that name the file, the key, what it is
// and what is expected:
//
//   BRISK_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_object(text, path));
//   BRISK_ASSIGN_OR_RETURN(int64_t layers, json_int_field(j, "num_hidden_layers", path, /*required=*/true));
//   // -> "<path>: key "num_hidden_layers" is "six" (a JSON string); expected an integer"
//
// An absent or null key gives the fallback (json_int_field: an error when `required`).
//
// Thread safety: free functions with no state.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "brisk/core/status.h"

namespace brisk {

// InvalidArgument "<source>: <what>".
Status json_field_error(const std::string& source, const std::string& what);

// `text` parsed within brisk's nesting bound; an error unless it is a JSON object.
StatusOr<nlohmann::json> parse_json_object(const std::string& text, const std::string& source);

// An integer; a float with an integral value (384.0) is taken, anything else is refused.
StatusOr<int64_t> json_int_field(const nlohmann::json& j, const std::string& key, const std::string& source,
                                 bool required, int64_t fallback = 0);
StatusOr<double> json_double_field(const nlohmann::json& j, const std::string& key, const std::string& source,
                                   double fallback);
StatusOr<std::string> json_string_field(const nlohmann::json& j, const std::string& key, const std::string& source,
                                        const std::string& fallback);
StatusOr<bool> json_bool_field(const nlohmann::json& j, const std::string& key, const std::string& source,
                               bool fallback = false);

}  // namespace brisk
