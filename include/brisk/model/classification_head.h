// ClassificationHead: the layers that turn an encoder's output into one logit per label, and the labels' names.
// Hugging Face's sequence-classification heads read one token's last hidden state: the encoders' the first ([CLS],
// <s>), the decoders' the last:
//   BertForSequenceClassification        pooler dense + tanh, then classifier
//   DistilBertForSequenceClassification  pre_classifier + ReLU, then classifier
//   XLMRobertaForSequenceClassification  classifier.dense + tanh, then classifier.out_proj
//   Qwen2/Qwen3ForSequenceClassification score (no bias), on the last token that is not pad_token_id (the form
//                                        Qwen3-Reranker's yes/no logits take as a one-label cross-encoder)
// A few-shot intent head (`brisk fit-intents`) reads the model's sentence embedding (pooled, normalised as the
// model says) instead, through one softmax-regression layer.
//
//   BRISK_ASSIGN_OR_RETURN(NamedTensors tensors, read_weights_file(dir + "/model.safetensors"));
//   BRISK_ASSIGN_OR_RETURN(std::optional<ClassificationHead> head,
//                          read_sequence_classification_head(tensors, config_json_text, config.family, "model"));
//   std::vector<float> logits(rows * head->num_labels());
//   BRISK_RETURN_IF_ERROR(head->apply(first_token_states, rows, logits.data()));
//   std::vector<float> p = label_probabilities(logits, head->num_labels(), head->multi_label);
//
// The dropout layers of training are the identity at inference and are not represented.
//
// Thread safety: a ClassificationHead is an immutable value after construction; apply() may run concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "brisk/model/config.h"
#include "brisk/model/weights.h"

namespace brisk {

enum class HeadActivation : uint8_t { kNone, kTanh, kRelu };

// y = activation(x W^T + b): W [out, in] f32 (PyTorch Linear layout), b [out] f32.
struct BRISK_API DenseLayer {
  Tensor weight;
  Tensor bias;
  HeadActivation activation = HeadActivation::kNone;
};

struct BRISK_API ClassificationHead {
  enum class Input : uint8_t {
    kFirstToken,         // the last hidden state of each sequence's first token
    kLastToken,          // that of its last token whose id is not pad_token (its last token when pad_token < 0)
    kSentenceEmbedding,  // the model's pooled (and, when it says so, normalised) embedding
  };
  Input input = Input::kFirstToken;
  std::vector<DenseLayer> layers;   // applied in order; the last one's outputs are the logits
  std::vector<std::string> labels;  // by label id; one per output of the last layer
  // Independent labels (problem_type "multi_label_classification"): a sigmoid per label instead of a softmax.
  bool multi_label = false;
  // kLastToken: config.json's pad_token_id, or -1 when it has none.
  int64_t pad_token = -1;

  int64_t input_size() const;
  // The position in a sequence of `ids` of the token whose hidden state the head reads, as transformers picks it:
  // kFirstToken 0; kLastToken the last position whose id is not pad_token (0 when every id is: torch.argmax's
  // answer for an all-zero mask). -1 for kSentenceEmbedding, which reads no single token, or an empty sequence.
  int64_t input_token(std::span<const int32_t> ids) const;
  int64_t num_labels() const { return static_cast<int64_t>(labels.size()); }
  // Every layer f32 with matching shapes, and one label per logit; errors name `source` and the layer.
  Status validate(const std::string& source) const;
  // logits[rows x num_labels()] from in[rows x input_size()], on the calling thread.
  Status apply(const float* in, int64_t rows, float* logits) const;
};

// The head of a Hugging Face *ForSequenceClassification checkpoint (BERT: bert.pooler.dense + classifier;
// DistilBERT: pre_classifier + classifier; XLM-R: classifier.dense + classifier.out_proj; a decoder family: score),
// with its labels from config.json's id2label ("LABEL_<i>" when absent) and problem_type. nullopt when the tensors
// hold no classifier (an embedding model). Errors name `source`.
BRISK_API StatusOr<std::optional<ClassificationHead>> read_sequence_classification_head(const NamedTensors& tensors,
                                                                                        const std::string& config_json,
                                                                                        ModelFamily family,
                                                                                        const std::string& source);

// The tensors of a sequence-classification head among a checkpoint's, under their Hugging Face names
// (bert.pooler.dense.*, pre_classifier.*, classifier.*, score.*): what a file that carries a model (a quantized model
// file) must carry for its head. Empty for an embedding model.
BRISK_API NamedTensors sequence_classification_head_tensors(const NamedTensors& tensors);

// config.json's labels: id2label by id (empty when config.json has none) and whether problem_type is
// "multi_label_classification". Errors name `source`.
struct BRISK_API LabelConfig {
  std::vector<std::string> labels;
  bool multi_label = false;
};
BRISK_API StatusOr<LabelConfig> read_label_config(const std::string& config_json, const std::string& source);

// Whether label scores are independent sigmoids (multi-label heads, and single-logit heads such as cross-encoders,
// as Hugging Face's text-classification pipeline decides) rather than one softmax.
BRISK_API bool uses_sigmoid(bool multi_label, int64_t num_labels);
// Probabilities from rows x num_labels logits: a softmax per row, or a sigmoid per logit (uses_sigmoid).
BRISK_API std::vector<float> label_probabilities(std::span<const float> logits, int64_t num_labels, bool multi_label);

}  // namespace brisk
