// Runtime: the one object a host service holds. It owns a model, its tokenizer and the options, and turns texts
// into pooled embeddings.
//
//   brisk::RuntimeOptions opts;
//   opts.model_dir = "/models/all-MiniLM-L6-v2";
//   BRISK_ASSIGN_OR_RETURN(std::unique_ptr<brisk::Runtime> rt, brisk::Runtime::create(opts));
//   std::vector<std::string_view> texts = {"how do I reset my card PIN?"};
//   BRISK_ASSIGN_OR_RETURN(std::vector<float> emb, rt->embed(texts));   // texts.size() x rt->embedding_dim()
//
// Thread safety: a Runtime may be shared; embed() may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

enum class Pooling : uint8_t { kModelDefault, kMean, kCls };

struct RuntimeOptions {
  std::string model_dir;      // a Hugging Face directory: config.json, model.safetensors or pytorch_model.bin,
                              // vocab.txt or tokenizer.json
  int num_threads = 0;        // compute threads for this runtime's calls; 0: one per core
  int max_seq_len = 0;        // tokens per text after truncation, [CLS]/[SEP] included; 0: the model's default,
                              // sentence_bert_config.json's max_seq_length (as sentence-transformers), else
                              // max_position_embeddings
  Pooling pooling = Pooling::kModelDefault;  // kModelDefault reads 1_Pooling/config.json, else mean
  bool normalize = true;      // L2-normalise each embedding
  Device device = Device::kCPU;
  int max_batch_size = 64;    // texts per forward pass; embed() splits larger inputs
};

struct ModelInfo {
  std::string model_dir;
  std::string model_type;     // "bert"
  std::string weights_file;   // the file the weights were read from
  int64_t num_parameters = 0;
  int hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int intermediate_size = 0;
  int vocab_size = 0;
  int max_seq_len = 0;        // effective, after RuntimeOptions::max_seq_len
  Pooling pooling = Pooling::kMean;
  bool normalize = true;
  Device device = Device::kCPU;
};

// Where scripts/setup installs the default model: $BRISK_MODEL_DIR when set, else
// $HOME/.cache/brisk/models/all-MiniLM-L6-v2.
BRISK_API std::string default_model_dir();

class BRISK_API Runtime {
 public:
  static StatusOr<std::unique_ptr<Runtime>> create(const RuntimeOptions& options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int embedding_dim() const;
  const ModelInfo& info() const;

  // Embeds texts (UTF-8; invalid UTF-8 is an error naming the text index) into a row-major
  // texts.size() x embedding_dim() matrix.
  StatusOr<std::vector<float>> embed(std::span<const std::string_view> texts) const;
  // The same, writing into `out`, which must hold texts.size() * embedding_dim() floats.
  Status embed(std::span<const std::string_view> texts, std::span<float> out) const;

 private:
  struct Impl;
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisk
