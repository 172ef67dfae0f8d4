// What a Runtime owns, shared by runtime.cc (loading, embed) and runtime_submit.cc (the batched path).
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "brisk/batch/batcher.h"
#include "brisk/metrics/counter.h"
#include "brisk/metrics/histogram.h"
#include "brisk/model/encoder.h"
#include "brisk/model/tokenizer.h"
#include "brisk/runtime/runtime.h"
#include "runtime_cache.h"

namespace brisk {

// One submitted text, tokenized at submit().
struct EmbedRequest {
  std::vector<int32_t> ids;
  std::vector<std::string> cache_tags;
};

using EmbedBatcher = batch::Batcher<EmbedRequest, std::vector<float>>;

struct Runtime::Impl {
  RuntimeOptions options;
  ModelInfo info;
  std::unique_ptr<WordPieceTokenizer> tokenizer;
  std::unique_ptr<BertEncoder> encoder;
  metrics::Histogram tokenize_ns;           // per text, both paths, token-cache hits excluded
  mutable metrics::Counter forward_passes;  // encode() is const
  std::unique_ptr<RuntimeCaches> caches;
  std::atomic<uint64_t> next_cached_request_id{0};
  // Declared last: destroyed first, so its threads stop before the encoder they call goes away.
  std::unique_ptr<EmbedBatcher> batcher;

  // Tokenizes one text with the runtime's truncation through the token cache, recording the tokenizer's time.
  StatusOr<std::vector<int32_t>> tokenize(std::string_view text);
  // One forward pass over packed sequences on the calling thread: ids.size() x hidden_size floats into out.
  // The results go into the result cache, tagged with cache_tags[i] when given.
  Status encode(std::span<const std::vector<int32_t>> ids, float* out,
                std::span<const std::vector<std::string>> cache_tags = {}) const;
  // Embeds tokenized texts for embed(), ids[i] into the dim floats at rows[i]: through the batcher's thread, so
  // that every forward pass runs on one thread (one OpenMP pool) and joins concurrent submit() traffic. The texts
  // enter the queue in groups of batching.max_batch_size, each one unit (Batcher::submit_all), at most two groups
  // queued at a time. On the calling thread when the batcher has no executor, is the caller, or refuses a group
  // while none of this call's groups is pending (a queue full of other work).
  Status embed_ids(std::span<const std::vector<int32_t>> ids, std::span<float* const> rows);
  // Runs ids on the calling thread in passes of at most batching.max_batch_size texts.
  Status encode_here(std::span<const std::vector<int32_t>> ids, std::span<float* const> rows);
};

// Builds impl.batcher from impl.options.batching around impl.encoder; on CUDA with a device_memory_limit, with the
// memory budget device_memory_budget() gives.
Status start_batcher(Runtime::Impl& impl);

// Exported for their unit tests (tests/runtime/device_memory_budget_test.cc).
//
// The activations' dtype: options.activation_dtype, else f16 on CUDA and f32 on the CPU.
BRISK_API DType runtime_activation_dtype(const RuntimeOptions& options);
// The batcher's estimate of one forward pass's activation bytes (BatchFunctions::estimate_bytes), on the
// runtime's device and in its activation dtype.
BRISK_API size_t estimate_activation_bytes(const ModelInfo& info, const RuntimeOptions& options,
                                           const batch::BatchShape& shape);
// The batcher's memory budget under a device memory cap: what `limit` leaves after `weight_bytes`, at least
// limit / 8, and at most policy_budget when that is nonzero. limit 0 (no cap): policy_budget unchanged.
BRISK_API size_t device_memory_budget(size_t limit, size_t weight_bytes, size_t policy_budget);

}  // namespace brisk
