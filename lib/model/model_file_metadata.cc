// The metadata of a quantized model file. See model_file_metadata.h and include/brisk/model/model_file.h.
#include "model_file_metadata.h"
#include "brisk/core/internal/bounded_input.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace brisk {
namespace {

using nlohmann::json;

constexpr const char* kConfigKey = "brisk.config";
constexpr const char* kFilesKey = "brisk.files";
constexpr const char* kPrecisionsKey = "brisk.precisions";
constexpr const char* kPlanKey = "brisk.plan";
constexpr const char* kSha256Key = "brisk.source_sha256";
constexpr const char* kReportKey = "brisk.report";
constexpr const char* kKnownKeys[] = {kFormatKey, kConfigKey, kFilesKey, kPrecisionsKey,
                                      kPlanKey,   kSha256Key, kReportKey};

Status bad(const std::string& file, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", what));
}

// A metadata value quoted for a message, cut short.
std::string quoted(const std::string& text) {
  return absl::StrCat("\"", text.size() > 60 ? text.substr(0, 57) + "..." : text, "\"");
}

StatusOr<json> parse_json_object(const std::string& text, const std::string& key, const std::string& file) {
  StatusOr<json> parsed = parse_json_bounded(text, absl::StrCat("metadata ", key));
  if (!parsed.ok()) return bad(file, absl::StrCat(parsed.status().message(), "; expected a JSON object"));
  json j = std::move(*parsed);
  if (!j.is_object()) {
    return bad(file, absl::StrCat("metadata ", key, " is a JSON ", j.type_name(), "; expected a JSON object"));
  }
  return j;
}

// A relative path inside the model directory, in normal form ("1_Pooling/config.json").
bool is_normal_relative_path(const std::string& rel) {
  const std::filesystem::path p(rel);
  return !rel.empty() && !p.has_root_path() && *p.begin() != ".." && *p.begin() != "." &&
         p.lexically_normal().generic_string() == rel && rel.back() != '/';
}

StatusOr<LayerPrecision> parse_layer(const std::string& layer, const json& entry, const std::string& file) {
  const std::string where = absl::StrCat("metadata ", kPrecisionsKey, " layer '", layer, "'");
  if (!entry.is_object()) {
    return bad(file, absl::StrCat(where, " is a JSON ", entry.type_name(),
                                  "; expected an object {\"precision\": ..., \"activation_scale\": ...}"));
  }
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    if (it.key() != "precision" && it.key() != "activation_scale") {
      return bad(file, absl::StrCat(where, " has key \"", it.key().substr(0, 60),
                                    "\"; expected only \"precision\" and \"activation_scale\""));
    }
  }
  auto p = entry.find("precision");
  if (p == entry.end() || !p->is_string()) {
    return bad(file, absl::StrCat(where, " has ", p == entry.end() ? "no" : "a non-string",
                                  " \"precision\"; expected a precision name such as \"int8-dynamic\""));
  }
  LayerPrecision lp;
  StatusOr<PrecisionSpec> spec = parse_precision(p->get<std::string>());
  if (!spec.ok()) return bad(file, absl::StrCat(where, ": ", spec.status().message()));
  lp.spec = *spec;
  auto a = entry.find("activation_scale");
  const bool is_static = lp.spec.precision == Precision::kInt8Static;
  if (a == entry.end()) {
    if (is_static) {
      return bad(file, absl::StrCat(where, " is int8-static without \"activation_scale\"; expected a finite ",
                                    "positive activation scale"));
    }
    return lp;
  }
  if (!is_static) {
    return bad(file, absl::StrCat(where, " is ", precision_name(lp.spec),
                                  " with an \"activation_scale\"; expected one only for int8-static"));
  }
  const double v = a->is_number() ? a->get<double>() : NAN;
  if (!a->is_number() || !std::isfinite(v) || !(v > 0.0) || !std::isfinite(static_cast<float>(v)) ||
      !(static_cast<float>(v) > 0.0f)) {
    return bad(file, absl::StrCat(where, " has activation_scale ", a->is_number() ? absl::StrCat(v) : a->type_name(),
                                  "; expected a finite positive number"));
  }
  lp.activation_scale = static_cast<float>(v);
  return lp;
}

bool is_hex_sha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (char ch : s) {
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return false;
  }
  return true;
}

bool same_config(const BertConfig& a, const BertConfig& b) {
  return a.model_type == b.model_type && a.family == b.family && a.vocab_size == b.vocab_size &&
         a.hidden_size == b.hidden_size && a.num_hidden_layers == b.num_hidden_layers &&
         a.num_attention_heads == b.num_attention_heads && a.intermediate_size == b.intermediate_size &&
         a.max_position_embeddings == b.max_position_embeddings && a.type_vocab_size == b.type_vocab_size &&
         a.layer_norm_eps == b.layer_norm_eps && a.hidden_act == b.hidden_act &&
         a.hidden_act_name == b.hidden_act_name && a.pad_token_id == b.pad_token_id &&
         a.pruned_heads == b.pruned_heads && a.intermediate_sizes == b.intermediate_sizes &&
         a.num_key_value_heads == b.num_key_value_heads && a.attention_head_dim == b.attention_head_dim &&
         a.rope_theta == b.rope_theta && a.attention_bias == b.attention_bias;
}

}  // namespace

StatusOr<ModelMetadata> parse_model_metadata(const std::map<std::string, std::string>& md, const std::string& file) {
  auto format = md.find(kFormatKey);
  if (format == md.end()) {
    return bad(file, absl::StrCat("metadata key ", kFormatKey, " is missing; expected \"", kQuantizedFormat,
                                  "\" (this is not a brisk quantized model file)"));
  }
  if (format->second != kQuantizedFormat) {
    return bad(file, absl::StrCat("metadata ", kFormatKey, " is ", quoted(format->second), "; expected \"",
                                  kQuantizedFormat, "\" (a file from another version of brisk?)"));
  }
  for (const auto& [key, value] : md) {
    if (key.rfind("brisk.", 0) != 0) continue;  // foreign metadata is allowed
    bool known = false;
    for (const char* k : kKnownKeys) known = known || key == k;
    if (!known) {
      return bad(file, absl::StrCat("metadata key ", quoted(key), " is unknown; expected only brisk.format, ",
                                    "brisk.config, brisk.files, brisk.precisions, brisk.plan, brisk.source_sha256 ",
                                    "and brisk.report in format ", kQuantizedFormat));
    }
  }
  for (const char* key : {kConfigKey, kFilesKey, kPrecisionsKey}) {
    if (md.count(key) == 0) {
      return bad(file,
                 absl::StrCat("metadata key ", key, " is missing; expected it in every ", kQuantizedFormat, " file"));
    }
  }
  ModelMetadata out;
  const std::string& config_text = md.at(kConfigKey);
  BRISK_ASSIGN_OR_RETURN(out.config,
                         BertConfig::from_json_string(config_text, absl::StrCat(file, ": metadata ", kConfigKey)));

  BRISK_ASSIGN_OR_RETURN(json files, parse_json_object(md.at(kFilesKey), kFilesKey, file));
  for (auto it = files.begin(); it != files.end(); ++it) {
    const std::string where = absl::StrCat("metadata ", kFilesKey, " entry ", quoted(it.key()));
    if (!is_normal_relative_path(it.key()) || it.key() == "config.json") {
      return bad(file, absl::StrCat(where, " is not a valid name; expected a normalised relative path inside the ",
                                    "model directory, other than config.json (which is ", kConfigKey, ")"));
    }
    if (!it->is_string()) {
      return bad(file, absl::StrCat(where, " is a JSON ", it->type_name(), "; expected the file's text as a string"));
    }
    out.files[it.key()] = it->get<std::string>();
  }
  out.files["config.json"] = config_text;

  BRISK_ASSIGN_OR_RETURN(json precisions, parse_json_object(md.at(kPrecisionsKey), kPrecisionsKey, file));
  for (auto it = precisions.begin(); it != precisions.end(); ++it) {
    BRISK_ASSIGN_OR_RETURN(out.precisions[it.key()], parse_layer(it.key(), *it, file));
  }

  if (auto it = md.find(kPlanKey); it != md.end()) out.plan = it->second;
  if (auto it = md.find(kSha256Key); it != md.end()) {
    if (!it->second.empty() && !is_hex_sha256(it->second)) {
      return bad(file, absl::StrCat("metadata ", kSha256Key, " is ", quoted(it->second),
                                    "; expected 64 lowercase hex digits or nothing"));
    }
    out.source_sha256 = it->second;
  }
  if (auto it = md.find(kReportKey); it != md.end()) {
    if (!it->second.empty() && !json::accept(it->second)) {
      return bad(file, absl::StrCat("metadata ", kReportKey, " is not valid JSON; expected JSON text or nothing"));
    }
    out.report = it->second;
  }
  return out;
}

StatusOr<std::map<std::string, std::string>> model_metadata(const std::string& path, const QuantizedModel& model) {
  auto config = model.model_files.find("config.json");
  if (config == model.model_files.end()) {
    return bad(path, "model_files has no config.json; expected the source model's config.json text");
  }
  BRISK_ASSIGN_OR_RETURN(BertConfig parsed, BertConfig::from_json_string(config->second, "model_files config.json"));
  if (!same_config(parsed, model.config)) {
    return bad(path, absl::StrCat("model_files config.json describes ", parsed.summary(), "; expected the model's ",
                                  "config (", model.config.summary(), ")"));
  }
  std::map<std::string, std::string> md;
  md[kFormatKey] = kQuantizedFormat;
  md[kConfigKey] = config->second;
  json files = json::object();
  for (const auto& [name, text] : model.model_files) {
    if (name != "config.json") files[name] = text;
  }
  json precisions = json::object();
  EncoderWeights w = model.weights;
  std::map<std::string, float> activation_scales;
  for (const LinearSlot& s : linear_slots(w, model.config)) activation_scales[s.name] = s.scales->activation_scale;
  for (const auto& [layer, spec] : model.precisions) {
    json entry = {{"precision", precision_name(spec)}};
    if (spec.precision == Precision::kInt8Static) {
      auto it = activation_scales.find(layer);
      entry["activation_scale"] = it == activation_scales.end() ? 0.0 : double(it->second);
    }
    precisions[layer] = std::move(entry);
  }
  try {
    md[kFilesKey] = files.dump();
    md[kPrecisionsKey] = precisions.dump();
  } catch (const json::exception& e) {
    return bad(path, absl::StrCat("model_files cannot be written as JSON (", e.what(), "); expected UTF-8 text"));
  }
  md[kPlanKey] = model.plan;
  md[kSha256Key] = model.source_sha256;
  md[kReportKey] = model.report_json;
  return md;
}

}  // namespace brisk
