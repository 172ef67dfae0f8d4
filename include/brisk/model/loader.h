// The one model loader: what every tool needs from a model, from any of its forms.
//   - a Hugging Face model directory: config.json, model.safetensors or pytorch_model.bin, vocab.txt or
//     tokenizer.json, and sentence-transformers' modules.json / 1_Pooling / sentence_bert_config.json when present;
//   - a pruned model directory (`brisk prune`'s output): the same files, with the pruned shapes in config.json;
//   - brisk's model file (`brisk quantize`'s output, brisk/model/model_file.h), which carries those small files.
// It also resolves the maximum sequence length the way sentence-transformers does.
//
//   BRISK_ASSIGN_OR_RETURN(LoadedModel m, load_model("minilm.int8.safetensors"));
//   BRISK_ASSIGN_OR_RETURN(auto encoder, BertEncoder::create(m.config, std::move(m.weights), Device::kCPU));
//   BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, m.tokenizer.encode("hello", m.max_seq_len));
//
// Errors name the path and say what was expected there.
//
// Thread safety: the functions may run concurrently; a LoadedModel is a value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/classification_head.h"
#include "brisk/model/config.h"
#include "brisk/model/text_tokenizer.h"
#include "brisk/model/weights.h"

namespace brisk {

struct BRISK_API ModelLoadOptions {
  bool replace_invalid_utf8 = false;  // the tokenizer's: replace invalid UTF-8 with U+FFFD instead of refusing it
  int max_seq_len = 0;                // 0: the model's default; else at least 2, capped at the model's positions
  // Refuse a model file: for the tools that start from the f32 weights (quantizing, pruning, sensitivity).
  bool fp32_directory_only = false;
};

enum class ModelSource : uint8_t { kDirectory, kModelFile };

struct BRISK_API LoadedModel {
  ModelSource source = ModelSource::kDirectory;
  BertConfig config;
  PoolingConfig pooling;
  TextTokenizer tokenizer;    // WordPiece, or tokenizer.json's Unigram / BPE
  EncoderWeights weights;     // f32 from a directory; as quantized from a model file
  NamedTensors head_tensors;  // a sequence-classification head's tensors under their Hugging Face names, or empty
  std::optional<ClassificationHead> head;  // the same head, read (nullopt for an embedding model)
  std::string quantization;                // the model file's plan ("quantized" when it names none); "" for a directory
  int max_seq_len = 0;                     // resolved by resolve_max_seq_len
};

// Whether `path` is a directory or a model file (checked: its header, offsets, dtypes and brisk.format); NotFound or
// InvalidArgument naming the path and what was expected there otherwise.
BRISK_API StatusOr<ModelSource> model_source(const std::string& path);

// Loads the model at `path` (a directory or a model file; see above). Refuses a tokenizer with more tokens than
// config.json's vocab_size.
BRISK_API StatusOr<LoadedModel> load_model(const std::string& path, const ModelLoadOptions& options = {});

// The tokenizer alone, from a model directory or a model file.
BRISK_API StatusOr<TextTokenizer> load_model_tokenizer(const std::string& path, bool replace_invalid_utf8 = false);

// The maximum sequence length: `requested` capped at config.max_position_embeddings; for 0, the Pooling module's
// max_seq_length (sentence_bert_config.json) when the model has one, else max_position_embeddings.
BRISK_API int resolve_max_seq_len(const BertConfig& config, const PoolingConfig& pooling, int requested = 0);

}  // namespace brisk
