// What a Runtime owns, shared by the files of its stages: runtime.cc (create and validate, embed), runtime_tasks.cc
// (classify, rerank), runtime_sync.cc (the synchronous path), runtime_submit.cc (the batcher, submit, single flight),
// degradation.cc (the fallback model and stale answers) and runtime_stats.cc (stats and metrics).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "brisk/batch/batcher.h"
#include "brisk/metrics/counter.h"
#include "brisk/metrics/histogram.h"
#include "brisk/model/encoder.h"
#include "brisk/model/text_tokenizer.h"
#include "brisk/runtime/backend.h"
#include "brisk/runtime/runtime.h"
#include "request_trace.h"
#include "runtime_cache.h"
#include "single_flight.h"

namespace brisk {

// One text, or one (query, passage) pair, as token ids.
struct TokenizedInput {
  std::vector<int32_t> ids;
  int32_t second_start = 0;  // a pair: where the second text begins (token type 1 from there); 0: one text
};

// The result cache's key: the ids, and for a pair also where its second text begins (as -1 - second_start, which no
// token id can be), so that a pair never shares an entry with a single text of the same ids.
std::vector<int32_t> result_cache_key(const TokenizedInput& input);
// The input a result_cache_key was made from (a follower rerun from its flight's key).
TokenizedInput input_of_cache_key(std::span<const int32_t> key);

// One submitted input, tokenized at submit().
struct TaskRequest {
  TokenizedInput input;
  std::vector<std::string> cache_tags;
  std::shared_ptr<RequestTrace> trace = nullptr;  // set when the submit is traced: its batch records spans into it
};

using TaskBatcher = batch::Batcher<TaskRequest, std::vector<float>>;
// Completes one submitted input with its output row (embedding or logits) and the path that answered.
using AnswerCallback = absl::AnyInvocable<void(uint64_t, StatusOr<std::vector<float>>, AnswerPath)>;
inline constexpr size_t kAnswerPaths = 4;
// What a single-flight follower keeps to be answered on its own when its leader cannot answer it (the leader was
// cancelled, expired or refused): its request, and its answer as submit_input made it.
struct FollowerRequest {
  EmbedRequestOptions request;
  std::shared_ptr<AnswerCallback> answer;
};
using Flights = SingleFlight<std::vector<int32_t>, std::vector<float>, FollowerRequest>;

namespace internal {

struct RuntimeImpl {
  RuntimeOptions options;
  ModelInfo info;
  std::unique_ptr<TextTokenizer> tokenizer;
  // A pair's second text gets token type 1 (BERT); false for a model with one token type or none (RoBERTa,
  // XLM-R, DistilBERT), whose pairs keep type 0 throughout.
  bool pair_token_types = true;
  std::unique_ptr<Backend> backend;
  size_t output_dim = 0;                               // backend->info().output_dim: floats per row
  metrics::Histogram tokenize_ns;                      // per text, both paths, token-cache hits excluded
  mutable metrics::Counter forward_passes;             // compute() is const
  mutable metrics::Counter nonfinite_outputs;          // rows compute() refused: a NaN or an infinity
  metrics::Counter callback_exceptions;                // thrown by single-flight callbacks (the batcher counts its own)
  std::array<metrics::Counter, kAnswerPaths> answers;  // submitted inputs answered, by AnswerPath
  std::unique_ptr<RuntimeCaches> caches;
  std::string embedding_model_id;                   // Runtime::embedding_model_id()
  std::atomic<uint64_t> next_cached_request_id{0};  // see local_answer_id()
  // Concurrent submits of one uncached input, keyed by result_cache_key: one forward pass answers them all.
  Flights flights;
  // RuntimeOptions::fallback; its request ids carry kFallbackIdBit. Destroyed after the batcher and before the
  // caches its requests' stale answers read.
  std::unique_ptr<Runtime> fallback;
  static constexpr uint64_t kFallbackIdBit = uint64_t{1} << 61;
  // Declared last: destroyed first, so its threads stop before the backend they call goes away.
  std::unique_ptr<TaskBatcher> batcher;

  // Tokenizes one text with the runtime's truncation through the token cache, recording the tokenizer's time.
  StatusOr<std::vector<int32_t>> tokenize(std::string_view text);
  // One (query, passage) pair for a cross-encoder: [CLS] query [SEP] passage [SEP] with the runtime's longest-first
  // truncation (TextTokenizer::encode_pair), recording the tokenizer's time; not through the token cache.
  StatusOr<TokenizedInput> tokenize_pair(std::string_view query, std::string_view passage);
  // Each text through tokenize(); an error names the text's index.
  StatusOr<std::vector<TokenizedInput>> tokenize_texts(std::span<const std::string_view> texts);
  // One forward pass of the backend over inputs on the calling thread: inputs.size() x output_dim floats into out.
  // The results go into the result cache, tagged with cache_tags[i] when given. Every row is checked first: a row
  // holding a NaN or an infinity (a corrupt model file, a faulty host backend) is neither cached nor served; it is
  // counted, and its error goes to row_errors[i] when given (the other rows are served), else it fails the call.
  Status compute(std::span<const TokenizedInput> inputs, float* out,
                 std::span<const std::vector<std::string>> cache_tags = {},
                 std::vector<Status>* row_errors = nullptr) const;
  // The rows of tokenized inputs for the synchronous calls (embed, classify, rerank): from the result cache, else
  // computed into rows[i] (output_dim floats each) through the batcher's thread, so that every forward pass runs on
  // one thread (one OpenMP pool) and joins concurrent submit() traffic. The misses enter the queue in groups of
  // batching.max_batch_size, each one unit (Batcher::submit_all), at most two groups queued at a time. On the
  // calling thread when the batcher has no executor, is the caller, or refuses a group while none of this call's
  // groups is pending (a queue full of other work).
  Status rows_for(std::span<TokenizedInput> inputs, std::span<float* const> rows);
  // The misses' forward passes of rows_for.
  Status compute_rows(std::span<const TokenizedInput> inputs, std::span<float* const> rows);
  // Runs inputs on the calling thread in passes of at most batching.max_batch_size.
  Status compute_here(std::span<const TokenizedInput> inputs, std::span<float* const> rows);
  // Queues one tokenized input (submit, submit_classify): a result-cache hit calls done at once; an input already
  // in flight (and not yet cached) joins that request (SingleFlight), unless it has cache tags of its own. One the
  // model's queue refuses for overload goes to the fallback model; with options.allow_stale, one the model cannot
  // answer is answered from the stale copies. A traced submit (trace set) records its cache lookup, carries the trace
  // to its batch and calls back through traced_callback.
  StatusOr<uint64_t> submit_input(TokenizedInput input, const EmbedRequestOptions& options, AnswerCallback done,
                                  std::shared_ptr<RequestTrace> trace = nullptr);
  // The model's part of submit_input: single flight and the batcher; `answer` completes the request unless the
  // batcher refuses it. `key` is result_cache_key(input). Followers of a leader the batcher refuses are answered
  // through answer_refused, as the leader is.
  StatusOr<uint64_t> submit_to_model(TokenizedInput input, const std::vector<int32_t>& key,
                                     const EmbedRequestOptions& options, const std::shared_ptr<AnswerCallback>& answer,
                                     std::shared_ptr<RequestTrace> trace);
  // The id of an answer that never reaches a batcher (a cache hit, a stale answer at submit): the top bit set, so it
  // never names a batcher request.
  uint64_t local_answer_id() {
    return (uint64_t{1} << 63) | next_cached_request_id.fetch_add(1, std::memory_order_relaxed);
  }
  // What answers a request of `key` that the model refused with `refused`, in degradation.h's order: the fallback
  // model for overload, then a stale copy when the request allows one. Returns the id that answers (`answer` is
  // called with it), or `refused` when neither can (`answer` is not called).
  StatusOr<uint64_t> answer_refused(const std::vector<int32_t>& key, const EmbedRequestOptions& request,
                                    const std::shared_ptr<AnswerCallback>& answer, Status refused);
  // Calls a callback of a single-flight request; an exception from it is counted (callback_exceptions), not
  // propagated, so that the other followers are still answered.
  template <typename Callback, typename... Args>
  void call_guarded(Callback& callback, Args&&... args) {
    try {
      callback(std::forward<Args>(args)...);
    } catch (...) {
      callback_exceptions.add(1);
    }
  }
  // Answers a follower with its leader's result, or, when the leader was cancelled or expired, submits it alone.
  void answer_follower(Flights::Follower& follower, const std::vector<int32_t>& key,
                       const StatusOr<std::vector<float>>& leader);
  // Answers a follower that the model refused (its leader's submit, or its own when run alone) through
  // answer_refused, under its follower id; with `refused` when nothing else can answer it.
  void follower_refused(Flights::Follower& follower, const std::vector<int32_t>& key, Status refused);
  // FAILED_PRECONDITION naming `call` unless the backend's output is `output`.
  Status require_output(BackendOutput output, std::string_view call) const;
  // FAILED_PRECONDITION naming `call` unless the model is a cross-encoder: logits with one label.
  Status require_cross_encoder(std::string_view call) const;
};

}  // namespace internal

using internal::RuntimeImpl;

// Completes a Runtime once impl.backend, tokenizer, options and info are set: checks the backend's info, records the
// task in info, creates the caches and starts the batcher.
Status finish_create(RuntimeImpl& impl);

// Creates impl.fallback from impl.options.fallback and checks that it serves the same task and output.
Status create_fallback(RuntimeImpl& impl);

// Builds impl.batcher from impl.options.batching around impl.backend; on CUDA with a device_memory_limit, with the
// memory budget device_memory_budget() gives.
Status start_batcher(RuntimeImpl& impl);

// The model's name in messages and metric labels: the last component of its path (runtime_stats.cc).
std::string model_label(const ModelInfo& info);

// The activations' dtype: options.activation_dtype, else f16 on CUDA and f32 on the CPU (runtime.cc).
DType runtime_activation_dtype(const RuntimeOptions& options);
// The batcher's memory budget under a device memory cap: what `limit` leaves after `weight_bytes`, at least
// limit / 8, and at most policy_budget when that is nonzero. limit 0 (no cap): policy_budget unchanged.
size_t device_memory_budget(size_t limit, size_t weight_bytes, size_t policy_budget);

}  // namespace brisk
