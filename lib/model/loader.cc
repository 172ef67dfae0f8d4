// The one model loader. See include/brisk/model/loader.h.
#include "brisk/model/loader.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "brisk/model/model_file.h"

namespace brisk {
namespace {

constexpr const char* kExpectedModel =
    "a directory with config.json, model.safetensors or pytorch_model.bin, and vocab.txt or tokenizer.json";

}  // namespace

StatusOr<ModelSource> model_source(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return ModelSource::kDirectory;
  if (!fs::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat("model directory '", path, "' does not exist; expected ", kExpectedModel));
  }
  // Why it is not one, precisely (a header, an offset, a dtype, a file cut short), not only that it is not.
  if (Status s = check_quantized_model_file(path); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("model path '", path,
                                                   "' is a file but not a quantized model file (brisk quantize's "
                                                   "output): ",
                                                   s.message(), "; expected that, or ", kExpectedModel));
  }
  return ModelSource::kModelFile;
}

namespace {

StatusOr<LoadedModel> load_directory(const std::string& dir, bool replace_invalid_utf8) {
  BRISK_ASSIGN_OR_RETURN(const std::string config_text, read_text_file(dir + "/config.json"));
  BRISK_ASSIGN_OR_RETURN(BertConfig config, BertConfig::from_json_string(config_text, dir + "/config.json"));
  BRISK_ASSIGN_OR_RETURN(PoolingConfig pooling, read_pooling_config(dir));
  BRISK_ASSIGN_OR_RETURN(TextTokenizer tokenizer, TextTokenizer::from_model_dir(dir, replace_invalid_utf8));
  BRISK_ASSIGN_OR_RETURN(WeightsWithTensors loaded, load_weights_with_tensors(dir, config));
  NamedTensors head_tensors = sequence_classification_head_tensors(loaded.tensors);
  BRISK_ASSIGN_OR_RETURN(
      std::optional<ClassificationHead> head,
      read_sequence_classification_head(head_tensors, config_text, config.family, loaded.weights.weights_file));
  return LoadedModel{ModelSource::kDirectory,
                     std::move(config),
                     std::move(pooling),
                     std::move(tokenizer),
                     std::move(loaded.weights),
                     std::move(head_tensors),
                     std::move(head),
                     "",
                     0};
}

StatusOr<LoadedModel> load_file(const std::string& path, bool replace_invalid_utf8) {
  BRISK_ASSIGN_OR_RETURN(QuantizedModel q, load_quantized_model(path));
  BRISK_ASSIGN_OR_RETURN(PoolingConfig pooling, read_pooling_config_from_files(q.model_files, path));
  BRISK_ASSIGN_OR_RETURN(TextTokenizer tokenizer,
                         TextTokenizer::from_model_files(q.model_files, replace_invalid_utf8, path));
  BRISK_ASSIGN_OR_RETURN(
      std::optional<ClassificationHead> head,
      read_sequence_classification_head(q.head_tensors, q.model_files.at("config.json"), q.config.family, path));
  q.weights.weights_file = path;
  return LoadedModel{ModelSource::kModelFile,
                     std::move(q.config),
                     std::move(pooling),
                     std::move(tokenizer),
                     std::move(q.weights),
                     std::move(q.head_tensors),
                     std::move(head),
                     q.plan.empty() ? std::string("quantized") : q.plan,
                     0};
}

}  // namespace

int resolve_max_seq_len(const BertConfig& config, const PoolingConfig& pooling, int requested) {
  const int model_max = static_cast<int>(config.max_position_embeddings - config.position_offset());
  if (requested > 0) return std::min(requested, model_max);
  return pooling.max_seq_length > 0 ? static_cast<int>(std::min<int64_t>(pooling.max_seq_length, model_max))
                                    : model_max;
}

StatusOr<LoadedModel> load_model(const std::string& path, const ModelLoadOptions& options) {
  if (options.max_seq_len < 0 || options.max_seq_len == 1) {
    return absl::InvalidArgumentError(absl::StrCat("ModelLoadOptions::max_seq_len is ", options.max_seq_len,
                                                   "; expected 0 (the model's default) or at least 2"));
  }
  BRISK_ASSIGN_OR_RETURN(const ModelSource source, model_source(path));
  if (source == ModelSource::kModelFile && options.fp32_directory_only) {
    return absl::InvalidArgumentError(absl::StrCat("model path '", path,
                                                   "' is a quantized model file; expected the fp32 model directory it "
                                                   "was made from (",
                                                   kExpectedModel, ")"));
  }
  BRISK_ASSIGN_OR_RETURN(LoadedModel m, source == ModelSource::kModelFile
                                            ? load_file(path, options.replace_invalid_utf8)
                                            : load_directory(path, options.replace_invalid_utf8));
  if (m.tokenizer.vocab_size() > m.config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the tokenizer has ", m.tokenizer.vocab_size(),
                                                   " tokens but config.json has vocab_size = ", m.config.vocab_size));
  }
  m.max_seq_len = resolve_max_seq_len(m.config, m.pooling, options.max_seq_len);
  return m;
}

StatusOr<TextTokenizer> load_model_tokenizer(const std::string& path, bool replace_invalid_utf8) {
  BRISK_ASSIGN_OR_RETURN(const ModelSource source, model_source(path));
  if (source == ModelSource::kDirectory) return TextTokenizer::from_model_dir(path, replace_invalid_utf8);
  BRISK_ASSIGN_OR_RETURN(QuantizedModel q, load_quantized_model(path));
  return TextTokenizer::from_model_files(q.model_files, replace_invalid_utf8, path);
}

}  // namespace brisk
