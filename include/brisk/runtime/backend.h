// Backend: what computes a batch for a Runtime. The runtime tokenizes, caches and batches; a backend turns one
// batch of packed token ids into one row of floats per sequence: a pooled sentence embedding, or one logit per
// label. Three ship with brisk, picked by Runtime::create from the options and the model files:
//   native       brisk's BERT-family encoder (fp32, quantized or pruned; CPU or CUDA) with its task head
//   torchscript  a traced or scripted PyTorch module through libtorch (RuntimeOptions::torchscript)
//   callback     the host's own function (C API brisk_runtime_create_with_backend)
// A C++ host may implement Backend itself and hand it to Runtime::create(options, backend):
//
//   class MyBackend : public brisk::Backend {
//    public:
//     const brisk::BackendInfo& info() const override { return info_; }   // e.g. output_dim 384, kEmbedding
//     brisk::Status run(const brisk::PackedSequences& batch, std::span<float> out) const override {
//       // sequence i is batch.input_ids[offsets[i], offsets[i + 1]); write out[i * 384, (i + 1) * 384)
//     }
//     size_t estimate_activation_bytes(const brisk::BatchShape& s) const override { return 0; }
//   };
//   auto rt = brisk::Runtime::create(opts, std::make_unique<MyBackend>());   // model_dir gives the tokenizer
//
// It needs nothing from the model or the batcher: this header uses only brisk/core/ (PackedSequences and
// BatchShape are brisk/core/sequences.h's).
//
// Thread safety: run() and estimate_activation_bytes() may be called from several threads at once (the batcher's
// executor and callers of embed() that compute on their own thread); info() is immutable after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/sequences.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

// What a backend's row per sequence is.
enum class BackendOutput : uint8_t {
  kEmbedding,  // a sentence embedding, pooled and normalised as the model says (Runtime::embed)
  kLogits,     // one logit per label (Runtime::classify; Runtime::rerank when there is one label)
};

BRISK_API std::string_view backend_output_name(BackendOutput output);  // "embedding", "logits"

struct BRISK_API BackendInfo {
  std::string name;         // "native", "torchscript", "callback", or the host's
  std::string description;  // one line for logs and `brisk info`
  BackendOutput output = BackendOutput::kEmbedding;
  int64_t output_dim = 0;           // floats per sequence: the embedding width, or the number of labels
  std::vector<std::string> labels;  // kLogits: one name per logit, by label id
  bool multi_label = false;         // kLogits: a sigmoid per label instead of a softmax over them
  Device device = Device::kCPU;
  DType activation_dtype = DType::kF32;
};

class BRISK_API Backend {
 public:
  virtual ~Backend() = default;
  virtual const BackendInfo& info() const = 0;
  // Computes batch.size() rows of info().output_dim floats into `out` (exactly that many). Sequences are packed:
  // sequence i is input_ids[offsets[i], offsets[i + 1]) with its token_type_ids (empty: all zero), [CLS] and
  // [SEP] included. A row must not depend on the other sequences of its batch.
  virtual Status run(const PackedSequences& batch, std::span<float> out) const = 0;
  // The activation memory one batch of this shape (costs in tokens) needs, for the batcher's memory budget.
  virtual size_t estimate_activation_bytes(const BatchShape& shape) const = 0;
};

// Checks what Runtime::create relies on: a known output, output_dim > 0 and, for logits, one non-empty label per
// logit. Errors name the backend.
BRISK_API Status validate_backend_info(const BackendInfo& info);

}  // namespace brisk
