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
// runtime's device and in its activation dtype. On the CPU it counts a score matrix per compute thread, for
// `cpu_threads` threads: estimate_cpu_threads(options), resolved once, never the asking thread's num_threads(), so
// that submit() and the batcher's executor thread agree on whether a text fits the memory budget.
size_t estimate_activation_bytes(const ModelInfo& info, const RuntimeOptions& options, const BatchShape& shape,
                                 int cpu_threads);

// The most compute threads one of the runtime's CPU passes may take: RuntimeOptions::num_threads, or for 0 the CPUs
// this process may use (available_cpus(), which reads /proc and /sys: call it once).
int estimate_cpu_threads(const RuntimeOptions& options);

}  // namespace brisk
