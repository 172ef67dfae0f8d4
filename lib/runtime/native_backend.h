// The native backend: brisk's own BERT-family encoder (fp32, quantized or pruned; CPU or CUDA) and, for a
// classification model, its head, which runs on the host over the encoder's output.
#pragma once

#include <memory>
#include <optional>

#include "brisk/model/classification_head.h"
#include "brisk/model/encoder.h"
#include "brisk/runtime/backend.h"
#include "brisk/runtime/runtime.h"

namespace brisk {

// `info` and `options` are the runtime's (pooling, normalisation, device and the memory estimate); without a head the
// rows are embeddings, with one its logits.
StatusOr<std::unique_ptr<Backend>> make_native_backend(std::unique_ptr<BertEncoder> encoder,
                                                       std::optional<ClassificationHead> head, const ModelInfo& info,
                                                       const RuntimeOptions& options);

// The native backend's estimate of one forward pass's activation bytes (Backend::estimate_activation_bytes), on the
// runtime's device and in its activation dtype.
size_t estimate_activation_bytes(const ModelInfo& info, const RuntimeOptions& options, const BatchShape& shape);

}  // namespace brisk
