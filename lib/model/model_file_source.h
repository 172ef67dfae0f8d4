// ModelFileSource: where the loaders of a model's small files (tokenizer.json, vocab.txt, tokenizer_config.json,
// modules.json, the Pooling config.json, sentence_bert_config.json) read them from: a model directory on disk, or a
// map of relative path to text already in memory (a quantized model file carries the files of its source model).
// The tokenizer and pooling loaders run the same parsing code over either.
//
//   const ModelFileSource src = ModelFileSource::directory("/models/minilm");
//   if (src.exists("tokenizer.json")) BRISK_ASSIGN_OR_RETURN(std::string text, src.read("tokenizer.json"));
//
// Relative paths are looked up after lexical normalisation ("1_Pooling/./config.json" is "1_Pooling/config.json").
// Messages name a file as path(rel): "<dir>/<rel>" (exactly the path the directory loaders always printed) or
// "<source>:<rel>" for files in memory.
//
// Thread safety: immutable; a memory source refers to the caller's map, which must outlive it.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "brisk/core/status.h"

namespace brisk {

class ModelFileSource {
 public:
  static ModelFileSource directory(const std::string& dir) {
    ModelFileSource s;
    s.dir_ = std::filesystem::path(dir);
    s.description_ = "model directory \"" + dir + "\"";
    return s;
  }
  static ModelFileSource memory(const std::map<std::string, std::string>& files, std::string_view source) {
    ModelFileSource s;
    s.files_ = &files;
    s.source_ = std::string(source);
    s.description_ = std::string(source);
    return s;
  }

  bool in_memory() const { return files_ != nullptr; }
  const std::filesystem::path& dir() const { return dir_; }

  // The key a relative path has in a memory source: lexically normal, '/'-separated.
  static std::string normal_key(const std::string& rel) {
    return std::filesystem::path(rel).lexically_normal().generic_string();
  }

  bool exists(const std::string& rel) const {
    if (in_memory()) return files_->count(normal_key(rel)) != 0;
    std::error_code ec;
    return std::filesystem::exists(dir_ / rel, ec);
  }

  // The file's text; NotFound naming path(rel) when absent. A directory source reads with read_text_file.
  StatusOr<std::string> read(const std::string& rel) const;

  // How messages name the file.
  std::string path(const std::string& rel) const {
    return in_memory() ? source_ + ":" + normal_key(rel) : (dir_ / rel).string();
  }
  // How messages name the whole source: model directory "<dir>", or the memory source's name.
  const std::string& description() const { return description_; }

 private:
  ModelFileSource() = default;
  std::filesystem::path dir_;
  const std::map<std::string, std::string>* files_ = nullptr;
  std::string source_;
  std::string description_;
};

struct PoolingConfig;

// read_pooling_config over any source; `pooling_config_rel` (optional) receives the relative path of the Pooling
// config.json that was read ("" when none).
StatusOr<PoolingConfig> read_pooling_config_from(const ModelFileSource& src, std::string* pooling_config_rel = nullptr);

}  // namespace brisk
