// The native backend over BertEncoder: embeddings from encoder->embed(), logits from a ClassificationHead over the
// first tokens' hidden states or over the embeddings.
#include "native_backend.h"

#include <algorithm>
#include <optional>
#include <span>

#include "absl/strings/str_cat.h"
#include "brisk/core/device.h"
#include "brisk/core/parallel.h"
#include "runtime_impl.h"

namespace brisk {

// CPU: from the encoder's buffers, per token the hidden state, QKV, attention output and residual copies (about
// 8 x hidden floats) and the FFN's intermediate activations (run in chunks of 512 tokens); per sequence one
// length x length score matrix per compute thread (cpu_threads).
// CUDA: in the activation dtype's elements; per token the same 8 x hidden plus the whole FFN intermediate (no
// chunking on the GPU); with padding removal the attention's padded Q, K, V and context (4 x hidden per padded
// token), without it every per-token buffer padded to the longest text; and the scores of every text and head at
// once. An estimate for the batcher's budget, not a count of allocations.
size_t estimate_activation_bytes(const ModelInfo& info, const RuntimeOptions& options, const BatchShape& shape,
                                 int cpu_threads) {
  const size_t hidden = static_cast<size_t>(info.hidden_size);
  const size_t intermediate = static_cast<size_t>(info.intermediate_size);
  if (options.device != Device::kCUDA) {
    const size_t floats = shape.total_cost * 8 * hidden + std::min<size_t>(shape.total_cost, 512) * intermediate +
                          static_cast<size_t>(std::max(cpu_threads, 1)) * shape.max_cost * shape.max_cost;
    return floats * sizeof(float);
  }
  const size_t heads = static_cast<size_t>(std::max(info.num_heads, 1));
  const size_t padded = shape.size * shape.max_cost;
  const size_t tokens = options.remove_padding ? shape.total_cost : padded;
  const size_t elements = tokens * (8 * hidden + intermediate) + (options.remove_padding ? padded * 4 * hidden : 0) +
                          shape.size * heads * shape.max_cost * shape.max_cost;
  return elements * dtype_size(runtime_activation_dtype(options));
}

int estimate_cpu_threads(const RuntimeOptions& options) { return threads_or_available(options.num_threads); }

namespace {

class NativeBackend final : public Backend {
 public:
  NativeBackend(std::unique_ptr<BertEncoder> encoder, std::optional<ClassificationHead> head, const ModelInfo& info,
                const RuntimeOptions& options)
      : encoder_(std::move(encoder)),
        head_(std::move(head)),
        model_(info),
        options_(options),
        estimate_threads_(estimate_cpu_threads(options)) {
    info_.name = "native";
    info_.device = info.device;
    info_.activation_dtype = info.activation_dtype;
    const BertConfig& c = encoder_->config();
    info_.description =
        absl::StrCat(c.summary(), "; ", info.quantization.empty() ? "f32 weights" : info.quantization, " on ",
                     device_string({info.device, 0}), " in ", dtype_name(info.activation_dtype));
    if (head_) {
      info_.output = BackendOutput::kLogits;
      info_.output_dim = head_->num_labels();
      info_.labels = head_->labels;
      info_.multi_label = head_->multi_label;
      absl::StrAppend(&info_.description, "; classification head, ", head_->num_labels(), " labels");
    } else {
      info_.output = BackendOutput::kEmbedding;
      info_.output_dim = encoder_->hidden_size();
    }
  }

  const BackendInfo& info() const override { return info_; }

  Status run(const PackedSequences& batch, std::span<float> out) const override {
    const size_t rows = static_cast<size_t>(batch.size());
    if (out.size() != rows * static_cast<size_t>(info_.output_dim)) {
      return absl::InvalidArgumentError(absl::StrCat("native backend: output holds ", out.size(), " floats; expected ",
                                                     rows, " x ", info_.output_dim));
    }
    // A model without token types (DistilBERT) ignores a pair's segments, as Hugging Face's does.
    if (!batch.token_type_ids.empty() && encoder_->config().type_vocab_size < 2) {
      PackedSequences untyped = batch;
      untyped.token_type_ids.clear();
      return run(untyped, out);
    }
    // The CPU's threads come from the process's compute budget, shared with every other runtime's passes (a GPU
    // pass needs none). Only the native backend takes them: a custom backend may wait on anything while it runs.
    std::optional<ComputeShare> threads;
    if (info_.device == Device::kCPU) threads.emplace(options_.num_threads);
    const int64_t hidden = encoder_->hidden_size();
    if (!head_) return encoder_->embed(batch, model_.pooling, model_.normalize, out.data());
    std::vector<float> head_input(rows * static_cast<size_t>(hidden));
    if (head_->input == ClassificationHead::Input::kSentenceEmbedding) {
      BRISK_RETURN_IF_ERROR(encoder_->embed(batch, model_.pooling, model_.normalize, head_input.data()));
    } else {
      std::vector<float> states(static_cast<size_t>(batch.total_tokens() * hidden));
      BRISK_RETURN_IF_ERROR(encoder_->forward(batch, states.data()));
      for (size_t i = 0; i < rows; ++i) {
        const int64_t begin = batch.offsets[i];
        const std::span<const int32_t> ids(batch.input_ids.data() + begin, static_cast<size_t>(batch.length(i)));
        const int64_t t = head_->input_token(ids);
        if (t < 0) continue;  // an empty sequence: the head reads zeros, as pooling gives it
        const float* token = states.data() + (begin + t) * hidden;
        std::copy(token, token + hidden, head_input.begin() + static_cast<ptrdiff_t>(i * hidden));
      }
    }
    return head_->apply(head_input.data(), static_cast<int64_t>(rows), out.data());
  }

  size_t estimate_activation_bytes(const BatchShape& shape) const override {
    return brisk::estimate_activation_bytes(model_, options_, shape, estimate_threads_);
  }

 private:
  std::unique_ptr<BertEncoder> encoder_;
  std::optional<ClassificationHead> head_;
  ModelInfo model_;
  RuntimeOptions options_;
  const int estimate_threads_;  // the memory estimate's compute threads, the same whichever thread asks
  BackendInfo info_;
};

}  // namespace

StatusOr<std::unique_ptr<Backend>> make_native_backend(std::unique_ptr<BertEncoder> encoder,
                                                       std::optional<ClassificationHead> head, const ModelInfo& info,
                                                       const RuntimeOptions& options) {
  if (encoder == nullptr) return absl::InvalidArgumentError("native backend: the encoder is null");
  if (head && head->input_size() != encoder->hidden_size()) {
    return absl::InvalidArgumentError(absl::StrCat("the classification head takes ", head->input_size(),
                                                   " inputs but the encoder's hidden size is ", encoder->hidden_size(),
                                                   "; expected them equal"));
  }
  return std::unique_ptr<Backend>(new NativeBackend(std::move(encoder), std::move(head), info, options));
}

}  // namespace brisk
