// sentence-transformers' files of a model directory: modules.json, the Pooling module's config.json,
// sentence_bert_config.json and config_sentence_transformers.json's prompts; and read_model_files, which gathers
// every small file a quantized model file carries. See include/brisk/model/config.h.
#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "brisk/core/internal/bounded_input.h"
#include "brisk/model/config.h"
#include "json_describe.h"
#include "json_fields.h"
#include "model_file_source.h"
#include "nlohmann/json.hpp"

namespace brisk {

using nlohmann::json;

StatusOr<PoolingConfig> PoolingConfig::from_json_string(const std::string& text, const std::string& source) {
  BRISK_ASSIGN_OR_RETURN(json j, parse_json_object(text, source));
  PoolingConfig p;
  BRISK_ASSIGN_OR_RETURN(p.word_embedding_dimension, json_int_field(j, "word_embedding_dimension", source, false, 0));
  BRISK_ASSIGN_OR_RETURN(bool mean, json_bool_field(j, "pooling_mode_mean_tokens", source));
  BRISK_ASSIGN_OR_RETURN(bool cls, json_bool_field(j, "pooling_mode_cls_token", source));
  BRISK_ASSIGN_OR_RETURN(bool max, json_bool_field(j, "pooling_mode_max_tokens", source));
  BRISK_ASSIGN_OR_RETURN(bool last, json_bool_field(j, "pooling_mode_lasttoken", source));
  for (const char* key : {"pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"}) {
    BRISK_ASSIGN_OR_RETURN(bool other, json_bool_field(j, key, source));
    if (other) {
      return json_field_error(
          source, absl::StrCat("key \"", key, "\" is true; brisk supports mean, cls, max and lasttoken pooling only"));
    }
  }
  const int count = int(mean) + int(cls) + int(max) + int(last);
  constexpr const char* kModes =
      "pooling_mode_mean_tokens, pooling_mode_cls_token, pooling_mode_max_tokens, pooling_mode_lasttoken";
  if (count > 1) {
    return json_field_error(source,
                            absl::StrCat("more than one of ", kModes,
                                         " is true; expected exactly one (concatenated poolings are not supported)"));
  }
  if (count == 0) return json_field_error(source, absl::StrCat("none of ", kModes, " is true; expected exactly one"));
  p.mode = mean ? Pooling::kMean : cls ? Pooling::kCls : max ? Pooling::kMax : Pooling::kLastToken;
  BRISK_ASSIGN_OR_RETURN(bool include_prompt, json_bool_field(j, "include_prompt", source, true));
  if (!include_prompt && !last) {
    return json_field_error(source,
                            absl::StrCat("key \"include_prompt\" is false with ", std::string(pooling_name(p.mode)),
                                         " pooling; brisk pools over the prompt's tokens too (expected true, or "
                                         "lasttoken pooling, which the prompt does not change)"));
  }
  if (p.word_embedding_dimension < 0) {
    return json_field_error(source, absl::StrCat("key \"word_embedding_dimension\" is ", p.word_embedding_dimension,
                                                 "; expected a positive integer"));
  }
  return p;
}

namespace {

constexpr char kModulePrefix[] = "sentence_transformers.models.";

// A module's "path" relative to the model directory, lexically normalised. Checked after normalisation, so that
// "a/../../etc" is caught as well as "/etc" and "../etc"; symlinks inside the directory are the model author's choice.
StatusOr<std::filesystem::path> module_dir(const std::string& rel, const std::string& module,
                                           const std::string& source) {
  const std::filesystem::path norm = std::filesystem::path(rel).lexically_normal();
  if (norm.has_root_path() || (!norm.empty() && *norm.begin() == "..")) {
    return json_field_error(source, absl::StrCat("module ", module, " has path ", json(rel).dump(),
                                                 "; expected a path inside ", "the model directory"));
  }
  return norm;
}

// modules.json: the sentence-transformers pipeline. brisk runs Transformer, Pooling and Normalize; any other
// module changes the embeddings, so a model that lists one is refused rather than embedded without it.
// `pooling_dir` receives the Pooling module's path relative to the model directory.
Status read_modules(const ModelFileSource& src, const std::string& source, const std::string& text,
                    std::filesystem::path& pooling_dir, bool& normalize) {
  BRISK_ASSIGN_OR_RETURN(json modules, parse_json_bounded(text, source));
  if (!modules.is_array()) {
    return json_field_error(source, "is not a JSON array; expected sentence-transformers' list of modules");
  }
  int poolings = 0;
  for (size_t i = 0; i < modules.size(); ++i) {
    const json& m = modules[i];
    const std::string entry = absl::StrCat("entry ", i);
    if (!m.is_object()) {
      return json_field_error(source, absl::StrCat(entry, " is ", describe_json(m), " (a JSON ", m.type_name(),
                                                   "); expected an object with \"type\" and \"path\""));
    }
    const std::string where = absl::StrCat(source, " ", entry);
    BRISK_ASSIGN_OR_RETURN(std::string type, json_string_field(m, "type", where, ""));
    BRISK_ASSIGN_OR_RETURN(std::string path, json_string_field(m, "path", where, ""));
    BRISK_ASSIGN_OR_RETURN(std::string name, json_string_field(m, "name", where, std::to_string(i)));
    BRISK_RETURN_IF_ERROR(json_int_field(m, "idx", where, false).status());
    const std::string module = absl::StrCat(json(name).dump(), " (", json(type).dump(), ")");
    BRISK_ASSIGN_OR_RETURN(std::filesystem::path module_path, module_dir(path, module, source));
    const std::string_view kind = std::string_view(type).starts_with(kModulePrefix)
                                      ? std::string_view(type).substr(sizeof(kModulePrefix) - 1)
                                      : std::string_view();
    if (kind == "Transformer") continue;
    if (kind == "Pooling") {
      pooling_dir = module_path;
      ++poolings;
    } else if (kind == "Normalize") {
      normalize = true;
    } else if (kind == "Dense") {
      return json_field_error(source,
                              absl::StrCat("module ", module, " at ", src.path(module_path.string()),
                                           " is a Dense layer, which brisk does not run (the embeddings would be wrong "
                                           "without it); expected only Transformer, Pooling and Normalize modules"));
    } else {
      return json_field_error(source, absl::StrCat("module ", module, " has an unsupported type; expected ",
                                                   kModulePrefix, "Transformer, Pooling or Normalize"));
    }
  }
  if (poolings != 1) {
    return json_field_error(source, absl::StrCat("lists ", poolings, " Pooling modules; expected exactly one"));
  }
  return absl::OkStatus();
}

// config_sentence_transformers.json's prompts by name (none when the file or its "prompts" is absent); each must be a
// string.
StatusOr<std::map<std::string, std::string>> read_prompts(const ModelFileSource& src) {
  constexpr const char* kFile = "config_sentence_transformers.json";
  std::map<std::string, std::string> out;
  StatusOr<std::string> text = src.read(kFile);
  if (!text.ok())
    return absl::IsNotFound(text.status()) ? StatusOr<std::map<std::string, std::string>>(out) : text.status();
  const std::string path = src.path(kFile);
  BRISK_ASSIGN_OR_RETURN(json st, parse_json_object(*text, path));
  auto prompts = st.find("prompts");
  if (prompts == st.end() || prompts->is_null()) return out;
  if (!prompts->is_object()) {
    return json_field_error(path, absl::StrCat("key \"prompts\" is ", describe_json(*prompts),
                                               "; expected an object of prompt names to strings"));
  }
  for (const auto& [name, value] : prompts->items()) {
    BRISK_ASSIGN_OR_RETURN(out[name], json_string_field(*prompts, name, path + " prompts", ""));
  }
  return out;
}

}  // namespace

StatusOr<std::string> ModelFileSource::read(const std::string& rel) const {
  if (!in_memory()) return read_text_file(path(rel));
  auto it = files_->find(normal_key(rel));
  if (it == files_->end()) return absl::NotFoundError(absl::StrCat(path(rel), ": file not found"));
  return it->second;
}

StatusOr<PoolingConfig> read_pooling_config_from(const ModelFileSource& src, std::string* pooling_config_rel) {
  PoolingConfig pooling;
  std::filesystem::path pooling_dir = "1_Pooling";  // where sentence-transformers puts it without modules.json
  const std::string modules_path = src.path("modules.json");
  StatusOr<std::string> modules_text = src.read("modules.json");
  if (modules_text.ok()) {
    BRISK_RETURN_IF_ERROR(read_modules(src, modules_path, *modules_text, pooling_dir, pooling.normalize));
  } else if (!absl::IsNotFound(modules_text.status())) {
    return modules_text.status();
  }

  const std::string pooling_rel = (pooling_dir / "config.json").string();
  const std::string pooling_path = src.path(pooling_rel);
  if (pooling_config_rel != nullptr) pooling_config_rel->clear();
  StatusOr<std::string> text = src.read(pooling_rel);
  if (text.ok()) {
    const bool normalize = pooling.normalize;
    BRISK_ASSIGN_OR_RETURN(pooling, PoolingConfig::from_json_string(*text, pooling_path));
    pooling.normalize = normalize;
    pooling.config_path = pooling_path;
    if (pooling_config_rel != nullptr) *pooling_config_rel = ModelFileSource::normal_key(pooling_rel);
  } else if (!absl::IsNotFound(text.status())) {
    return text.status();
  }

  const std::string st_path = src.path("sentence_bert_config.json");
  StatusOr<std::string> st_text = src.read("sentence_bert_config.json");
  if (st_text.ok()) {
    BRISK_ASSIGN_OR_RETURN(json st, parse_json_object(*st_text, st_path));
    BRISK_ASSIGN_OR_RETURN(pooling.max_seq_length, json_int_field(st, "max_seq_length", st_path, false, 0));
    if (pooling.max_seq_length < 0) {
      return json_field_error(
          st_path, absl::StrCat("key \"max_seq_length\" is ", pooling.max_seq_length, "; expected a positive integer"));
    }
  } else if (!absl::IsNotFound(st_text.status())) {
    return st_text.status();
  }
  BRISK_ASSIGN_OR_RETURN(pooling.prompts, read_prompts(src));
  return pooling;
}

StatusOr<PoolingConfig> read_pooling_config(const std::string& model_dir) {
  return read_pooling_config_from(ModelFileSource::directory(model_dir));
}

StatusOr<PoolingConfig> read_pooling_config_from_files(const std::map<std::string, std::string>& files,
                                                       std::string_view source) {
  return read_pooling_config_from(ModelFileSource::memory(files, source));
}

StatusOr<std::map<std::string, std::string>> read_model_files(const std::string& model_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(model_dir, ec)) {
    return absl::NotFoundError(absl::StrCat("model directory \"", model_dir,
                                            "\" is not a directory; expected a Hugging Face model directory"));
  }
  const ModelFileSource src = ModelFileSource::directory(model_dir);
  std::map<std::string, std::string> files;
  BRISK_ASSIGN_OR_RETURN(files["config.json"], read_text_file(src.path("config.json")));
  for (const char* name : {"tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
                           "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"}) {
    if (src.exists(name)) {
      BRISK_ASSIGN_OR_RETURN(files[name], src.read(name));
    }
  }
  if (files.count("tokenizer.json") == 0 && files.count("vocab.txt") == 0) {
    return absl::NotFoundError(absl::StrCat(src.description(),
                                            " has neither tokenizer.json nor vocab.txt; expected one of them (the "
                                            "quantized model file carries the tokenizer)"));
  }
  std::string pooling_rel;
  BRISK_RETURN_IF_ERROR(read_pooling_config_from(src, &pooling_rel).status());
  if (!pooling_rel.empty()) {
    BRISK_ASSIGN_OR_RETURN(files[pooling_rel], src.read(pooling_rel));
  }
  return files;
}

}  // namespace brisk
