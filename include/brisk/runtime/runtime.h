// Runtime: the one object a host service holds. It owns a model (behind a Backend, brisk/runtime/backend.h), its
// tokenizer and the options, and serves the model's task: sentence embeddings (embed), sequence classification
// (classify: intents) or cross-encoder reranking (rerank). Calls run synchronously, or one request at a time with
// submit() / submit_classify() / submit_rerank(), which go through the dynamic batcher (brisk/batch/batcher.h) so that
// concurrent requests share forward passes, each with its own deadline, priority and cancel(). Every task shares the
// same caches, batching and metrics.
//
//   brisk::RuntimeOptions opts;
//   opts.model_dir = "/models/all-MiniLM-L6-v2";
//   BRISK_ASSIGN_OR_RETURN(std::unique_ptr<brisk::Runtime> rt, brisk::Runtime::create(opts));
//   std::vector<std::string_view> texts = {"how do I reset my card PIN?"};
//   BRISK_ASSIGN_OR_RETURN(std::vector<float> emb, rt->embed(texts));   // texts.size() x rt->embedding_dim()
//
//   rt->submit("lost card", {.priority = 0, .timeout = std::chrono::milliseconds(200)},
//              [](uint64_t id, brisk::StatusOr<std::vector<float>> e) { /* on a batcher thread */ });
//
// A sequence-classification model (a Hugging Face *ForSequenceClassification directory, or model_dir plus a
// classification_head file from `brisk fit-intents`) classifies; one with a single label (a cross-encoder) reranks:
//   BRISK_ASSIGN_OR_RETURN(auto labels, rt->classify(texts, /*top_k=*/3));      // per text, best first
//   BRISK_ASSIGN_OR_RETURN(auto ranked, rt->rerank("reset my PIN", passages));  // sorted by score, with indices
//
// Thread safety: a Runtime may be shared; embed(), the submit calls, cancel() and the stats calls may run from several
// threads at once. Destroying the Runtime completes every pending submit call (queued ones with UNAVAILABLE) before it
// returns; no callback runs afterwards.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "brisk/batch/batcher_metrics.h"
#include "brisk/batch/policy.h"
#include "brisk/cache/redis_tier.h"
#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "brisk/model/config.h"
#include "brisk/runtime/backend.h"
#include "brisk/runtime/torchscript_backend.h"
#include "brisk/runtime/tracing.h"

namespace brisk {

// The batcher policy embed() and submit() use by default. One executor: a forward pass already uses every core,
// and batches fill while it runs, so no queue delay is needed (0: a free executor takes what is queued at once).
// max_batch_size is the one limit on texts per forward pass: an embed() call enters the queue as one unit and
// runs as ceil(texts / max_batch_size) passes when nothing else is queued (more when max_batch_tokens or the
// memory budget splits it).
// Cost is tokens per text; no length bucketing (the packed encoder pads nothing); 8192 padded tokens and ~1 GiB of
// estimated activations per batch at most. A request with a deadline the queue ahead cannot meet is refused at submit
// (reject_predicted_late).
inline batch::BatchPolicy default_runtime_batching() {
  batch::BatchPolicy p;
  p.max_batch_size = 32;
  p.max_queue_delay = brisk::Duration::zero();
  p.preferred_batch_multiple = 8;
  p.max_batch_tokens = 8192;
  p.length_bucketing = false;  // the encoder packs sequences without padding: any mix of lengths is free
  p.memory_budget_bytes = size_t{1} << 30;
  p.executor_threads = 1;
  p.reject_predicted_late = true;
  return p;
}

// The caches in front of the model. A text is tokenized through the token cache (raw text -> token ids), and its
// token ids, the normal form of the text for this model, key the result cache (ids -> embedding): texts that
// differ only in case, accents or spacing share one entry, because the model cannot tell them apart either.
struct RuntimeCacheOptions {
  uint64_t result_cache_bytes = uint64_t{64} << 20;               // in-process result cache (L1); 0: no result cache
  std::chrono::nanoseconds result_ttl = std::chrono::minutes(5);  // a cached embedding is served this long at most
  size_t token_cache_entries = 16384;        // texts of up to 1 KiB; 0: no token cache; at most kMaxTokenCacheEntries
  std::optional<cache::RedisOptions> redis;  // the shared L2 tier; none by default
  // Stale-if-error: how long past result_ttl a result is kept (in process, up to result_cache_bytes more) to answer
  // a request that allows it (EmbedRequestOptions::allow_stale) when the model cannot: overload, an expired deadline,
  // a failed forward pass. 0: nothing is kept.
  std::chrono::nanoseconds stale_ttl{0};
};

// A second, lighter model that answers what the primary's queue cannot answer in time: a request refused at
// submit for overload (the queue is full, or it predicts the request late: BatchPolicy::reject_predicted_late) goes
// to the fallback instead, when the fallback's own queue accepts it. A rate-limited request is not rerouted. The
// fallback must tokenize as the primary does and give the same output (width, labels); its results are never cached.
struct FallbackOptions {
  // A quantized model file (`brisk quantize`), a pruned model directory (`brisk prune`) or any model directory.
  std::string model_dir;
  std::string classification_head;  // as RuntimeOptions::classification_head; empty: the primary's
  int num_threads = 0;              // 0: the primary's num_threads
  // The fallback's batcher; its priority levels are the primary's, and a rerouted request keeps its deadline (its own,
  // else its level's default_timeout).
  batch::BatchPolicy batching = default_runtime_batching();
};

// Upper bounds of the count options: past them a value is refused at create(), so that no option can make the
// library take its host's memory or threads.
inline constexpr int kMaxThreads = 1024;  // num_threads
// Compute threads of one runtime in all: batching.executor_threads x num_threads (0: the process's cores), plus the
// fallback's. 8 executors x 32 threads made 277 threads on 2 cores; 256 x 1024 would have made 262,144.
inline constexpr int kMaxComputeThreads = 1024;
// batching.max_queue_delay (and a policy file's max_queue_delay_ms, C's batch_max_delay_us): the longest a request
// may wait for its batch to fill.
inline constexpr Duration kMaxQueueDelay = std::chrono::seconds(60);
// cache.result_ttl and cache.stale_ttl: past it a TTL means "never" in all but name, and now + it could overflow the
// clock. (The other durations' bounds: kMaxQueueDelay above, cache::kMaxRedisTimeout, batch::kMaxLatencyTarget.)
inline constexpr Duration kMaxCacheTtl = std::chrono::hours(24 * 366);
inline constexpr size_t kMaxBatchSize = 4096;                     // batching.max_batch_size
inline constexpr size_t kMaxQueueSize = size_t{1} << 20;          // batching.max_queue_size
inline constexpr size_t kMaxTokenCacheEntries = size_t{1} << 22;  // cache.token_cache_entries

struct RuntimeOptions {
  // A Hugging Face directory (config.json, model.safetensors or pytorch_model.bin, vocab.txt or tokenizer.json),
  // or a quantized model file written by `brisk quantize` (brisk/model/model_file.h).
  std::string model_dir;
  // Compute threads for this runtime's calls, at most kMaxThreads; 0: the CPUs this process may use
  // (brisk::available_cpus(): the affinity mask and the cgroup CPU quota).
  int num_threads = 0;
  int max_seq_len = 0;  // tokens per text after truncation, [CLS]/[SEP] included; 0: the model's default,
                        // sentence_bert_config.json's max_seq_length (as sentence-transformers), else
                        // max_position_embeddings
  Pooling pooling = Pooling::kModelDefault;  // kModelDefault: the model's Pooling module config, else mean
  // L2-normalise each embedding; nullopt: as the model says (modules.json lists a Normalize module, as
  // sentence-transformers decides).
  std::optional<bool> normalize;
  // Invalid UTF-8 in a text: false, an InvalidArgument error naming the byte offset; true, each ill-formed
  // sequence becomes one U+FFFD, as Python's errors="replace" decodes it, which BERT's WordPiece then drops,
  // XLM-R's normalizer turns into a space and byte-level BPE encodes as tokens (as Hugging Face does).
  bool replace_invalid_utf8 = false;
  // Where the encoder runs: Device::kCPU, or Device::kCUDA with device_index 0 ("cuda:0"; brisk/core/device.h
  // parses the string form). A build without CUDA fails create() with UNIMPLEMENTED naming BRISK_WITH_CUDA, a
  // machine without the GPU with NOT_FOUND naming the device.
  Device device = Device::kCPU;
  int device_index = 0;
  // The activations' dtype: kF32 on the CPU (its only choice); kF16 (the default on CUDA), kBF16 or kF32 on CUDA.
  // Weights stored as f32 or bf16 are converted to it when the model loads; i8 layers stay int8.
  std::optional<DType> activation_dtype;
  // Run the dense layers on the batch's real tokens only, rebuilding the padding for attention alone (EFF-FT's
  // padding removal); false pads every text to the batch's longest, to measure what the removal saves.
  bool remove_padding = true;
  // CPU, int8 model files: int8 self-attention on the int8 layers where the CPU prefers it (avx_vnni, AVX-512;
  // EncoderOptions::int8_attention); false keeps it in float everywhere.
  bool int8_attention = true;
  // CUDA: the most device memory brisk's caching allocator may hold (weights, activations and its cache), in
  // bytes; 0: no cap. Past it a batch fails with OUT_OF_MEMORY instead of crashing, and the batcher's memory
  // budget shrinks to what the cap leaves after the weights, so a surge is queued or refused. The cap is
  // per process and device (the last Runtime created with a nonzero value sets it).
  size_t device_memory_limit = 0;
  // A few-shot intent head written by `brisk fit-intents`: the runtime then classifies with it over model_dir's
  // sentence embeddings. It must have been fitted on this model (its recorded model id is checked).
  std::string classification_head;
  // Run this TorchScript module (brisk/runtime/torchscript_backend.h) instead of brisk's encoder; model_dir then gives
  // the tokenizer, and config.json (optional) the labels (id2label, problem_type) and pad_token_id, the pooling files
  // the pooling of a hidden-state output.
  std::optional<TorchScriptOptions> torchscript;
  // For embed() and submit(); batching.max_batch_size (at most kMaxBatchSize) is the texts per forward pass.
  batch::BatchPolicy batching = default_runtime_batching();
  RuntimeCacheOptions cache;
  // Degradation under overload: the lighter model submit() and submit_classify() reroute to (see FallbackOptions).
  // The same device, pooling, normalisation, sequence length and UTF-8 handling as this model.
  std::optional<FallbackOptions> fallback;
  // A serving policy file (brisk/runtime/serving_policy.h, written by `brisk tune`): create() reads it and its values
  // override batching's max_batch_size, preferred_batch_multiple, max_queue_delay, executor_threads,
  // max_inflight_batches, max_batch_tokens, reject_predicted_late and num_threads. Errors name the file. "": none.
  std::string policy_path;
  // Receives the spans of submit() and submit_classify() requests that carry a sampled trace_parent
  // (brisk/runtime/tracing.h); null (the default): nothing is traced and tracing costs nothing.
  std::shared_ptr<SpanSink> span_sink;
};

struct EmbedRequestOptions {
  int priority = 0;  // an index into RuntimeOptions::batching.levels; 0 is the most urgent
  // From the submit() call; 0: the level's default_timeout (none by default). Saturates: a timeout past the
  // clock's range (nanoseconds::max()) means no deadline.
  std::chrono::nanoseconds timeout{0};
  std::vector<std::string> cache_tags = {};  // the result is cached with these tags (cache_invalidate_tag drops it)
  // When the model cannot answer (overload, an expired deadline, a failed forward pass), answer with a result
  // that expired at most RuntimeCacheOptions::stale_ttl ago instead of the error, when this process has one.
  bool allow_stale = false;
  // A W3C traceparent (brisk/runtime/tracing.h); empty: not traced. Malformed: submit() fails with INVALID_ARGUMENT
  // naming traceparent. With RuntimeOptions::span_sink and the sampled flag set, the request's spans go to the sink,
  // under a "brisk.request" span that is a child of this traceparent's span.
  std::string trace_parent = {};
  // When set and trace_parent parses: receives, before submit() returns, the context to propagate downstream
  // (format_traceparent() of it): the "brisk.request" span's when spans are recorded, else trace_parent's own.
  TraceContext* trace_context_out = nullptr;
};

// Which path answered a request.
enum class AnswerPath : uint8_t {
  kModel,       // a forward pass of the model (this request's, or one it joined: single flight)
  kCache,       // the result cache
  kFallback,    // RuntimeOptions::fallback, because the model's queue could not take the request in time
  kStaleCache,  // an expired cached result, because the model failed (EmbedRequestOptions::allow_stale)
};
// "model", "cache", "fallback" or "stale".
BRISK_API std::string_view answer_path_name(AnswerPath path);

// Receives a submitted request's embedding (embedding_dim() floats) or why it has none.
using EmbeddingCallback = absl::AnyInvocable<void(uint64_t request_id, StatusOr<std::vector<float>> embedding)>;
// The same, also told which path answered (meaningless when there is no embedding).
using EmbeddingAnswerCallback =
    absl::AnyInvocable<void(uint64_t request_id, StatusOr<std::vector<float>> embedding, AnswerPath path)>;

// One label of classify(): its id (the model's id2label order), its name and its probability: a softmax over the
// labels, or a sigmoid per label for multi-label and single-logit models (as Hugging Face's text-classification
// pipeline decides).
struct LabelScore {
  int64_t id = 0;
  std::string label;
  float score = 0.0f;
};

struct ClassifyRequestOptions : EmbedRequestOptions {
  int top_k = 1;  // labels returned, best first; 1 to the number of labels
  // Each label's score is the model's raw logit (logits() of the text; TEI's raw_scores) instead of its probability;
  // the labels are ordered by it, best first.
  bool raw_scores = false;
};

// Receives a submitted text's top_k labels, best first, or why it has none.
using ClassifyCallback = absl::AnyInvocable<void(uint64_t request_id, StatusOr<std::vector<LabelScore>> labels)>;
using ClassifyAnswerCallback =
    absl::AnyInvocable<void(uint64_t request_id, StatusOr<std::vector<LabelScore>> labels, AnswerPath path)>;

struct RerankOptions {
  // The model's logits as they are; false: a sigmoid of them, in [0, 1] (sentence-transformers' CrossEncoder default
  // for a one-label model, and TEI's raw_scores=false).
  bool raw_scores = false;
  size_t top_k = 0;  // the best top_k passages only; 0: all of them
};

// submit_rerank()'s options: a submitted request's, and RerankOptions::raw_scores.
struct RerankRequestOptions : EmbedRequestOptions {
  bool raw_scores = false;  // the pair's logit as it is; false: its sigmoid, in [0, 1]
};

// Receives a submitted (query, passage) pair's score, or why it has none.
using RerankCallback = absl::AnyInvocable<void(uint64_t request_id, StatusOr<float> score)>;
using RerankAnswerCallback = absl::AnyInvocable<void(uint64_t request_id, StatusOr<float> score, AnswerPath path)>;

// One passage of rerank(): its index in the passages given and its score.
struct RerankResult {
  size_t index = 0;
  float score = 0.0f;
};

struct ModelInfo {
  std::string model_dir;
  std::string model_type;    // config.json's: "bert", "xlm-roberta", "qwen3", ...
  std::string weights_file;  // the file the weights were read from
  int64_t num_parameters = 0;
  int hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int intermediate_size = 0;
  int vocab_size = 0;
  int max_seq_len = 0;  // effective, after RuntimeOptions::max_seq_len
  Pooling pooling = Pooling::kMean;
  bool normalize = true;  // effective, after RuntimeOptions::normalize
  // config_sentence_transformers.json's prompts by name (PoolingConfig::prompts): what a caller puts in front of a
  // text to embed it as sentence-transformers' encode(prompt_name=NAME) does (prompt_for below).
  std::map<std::string, std::string> prompts;
  Device device = Device::kCPU;
  DType activation_dtype = DType::kF32;  // effective, after RuntimeOptions::activation_dtype
  std::string quantization;              // a quantized model file's plan ("int8", "mixed", ...); empty for fp32 weights
  std::string classification_head;       // RuntimeOptions::classification_head's file, when one was loaded
  std::string fallback;                  // RuntimeOptions::fallback's model, when one was loaded
  std::string backend = "native";        // BackendInfo::name
  std::string task = "embedding";        // "embedding" or "classification" (classify; rerank with one label)
  std::vector<std::string> labels;       // classification: by label id
  bool multi_label = false;              // classification: a sigmoid per label
  // The CPU ISA level the model's kernels picked at create() (cpu_isa_name(): "avx2", "avx512_vnni", ...; BRISK_ISA
  // caps it), and what computes each precision of its Linear layers ("i8: avx2 vpmaddwd", "bf16: oneDNN ... (bf16
  // weights widened to f32 at load: no avx512_bf16)"; BertEncoder::linear_kernels()); empty for other backends.
  std::string cpu_isa;
  std::vector<std::string> linear_kernels;
  int64_t int8_attention_layers = 0;  // layers running int8 self-attention (RuntimeOptions::int8_attention)
};

// The prompt sentence-transformers' encode(texts, prompt_name=...) puts in front of each text, for TEI's
// prompt_name and `brisk embed --prompt-name`: info.prompts[prompt_name]; a name the model has no prompt of is
// INVALID_ARGUMENT naming it and the names it has.
BRISK_API StatusOr<std::string> prompt_for(const ModelInfo& info, std::string_view prompt_name);

// Where scripts/setup installs the default model: $BRISK_MODEL_DIR when set, else
// $HOME/.cache/brisk/models/all-MiniLM-L6-v2.
BRISK_API std::string default_model_dir();

namespace internal {
struct RuntimeImpl;  // the library's own (lib/runtime/runtime_impl.h)
}  // namespace internal

class BRISK_API Runtime {
 public:
  static StatusOr<std::unique_ptr<Runtime>> create(const RuntimeOptions& options);
  // With the host's own backend: options.model_dir gives the tokenizer (vocab.txt or tokenizer.json) and, when
  // present, config.json's max_position_embeddings and the sentence-transformers pooling files; the weights are not
  // read. The backend's info() decides the task.
  static StatusOr<std::unique_ptr<Runtime>> create(const RuntimeOptions& options, std::unique_ptr<Backend> backend);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The embedding width; 0 when the model does not embed (a classification model).
  int embedding_dim() const;
  const ModelInfo& info() const;
  const BackendInfo& backend_info() const;

  // Embeds texts (UTF-8; invalid UTF-8 is an error naming the text index) into a row-major
  // texts.size() x embedding_dim() matrix. The forward passes run on the batcher's executor thread (sharing
  // batches with submit() traffic) and the call waits for them; it computes on the calling thread instead when
  // the batching policy has no executor threads, when called from a batcher callback, or when the queue is full.
  StatusOr<std::vector<float>> embed(std::span<const std::string_view> texts) const;
  // The same, writing into `out`, which must hold texts.size() * embedding_dim() floats.
  Status embed(std::span<const std::string_view> texts, std::span<float> out) const;

  // Queues one text for the batcher and returns its request id. The text is tokenized here, so invalid UTF-8
  // and the other input errors come back at once; so do a full queue or rate limit (RESOURCE_EXHAUSTED), a
  // past deadline and an unknown priority. When submit() fails `done` is never called; otherwise exactly
  // once, on a batcher thread (or in cancel()), with the embedding or DEADLINE_EXCEEDED, CANCELLED or
  // UNAVAILABLE (shut down). A result-cache hit completes at once: `done` runs on the calling thread before
  // submit() returns. Single flight: a text already in flight from another submit (same token ids, not yet
  // cached) joins that request when its deadline is no later than ours, and is answered by the same forward pass;
  // if that request is cancelled or expires, the joined ones are run on their own. A joined one that the model's
  // queue then refuses (or joined a request the queue refused) goes to the fallback model or a stale result as a
  // refused submit does, under its own id. Requests with cache_tags always run on their own.
  StatusOr<uint64_t> submit(std::string_view text, const EmbedRequestOptions& options, EmbeddingCallback done) const;
  // The same, telling `done` which path answered: the model, the cache, the fallback model or a stale result.
  StatusOr<uint64_t> submit(std::string_view text, const EmbedRequestOptions& options,
                            EmbeddingAnswerCallback done) const;

  // Classifies texts with the model's head: for each text its top_k labels, best first. FAILED_PRECONDITION on an
  // embedding model; top_k outside 1..number of labels is INVALID_ARGUMENT. Batched and cached as embed() is
  // (the cache holds logits, so any top_k is served from it).
  StatusOr<std::vector<std::vector<LabelScore>>> classify(std::span<const std::string_view> texts, int top_k = 1) const;
  // The raw logits of classify(): texts.size() x number of labels, row-major (TEI's raw_scores).
  StatusOr<std::vector<float>> logits(std::span<const std::string_view> texts) const;
  // classify() of one text through the batcher, as submit() is for embed(): the same deadlines, priority levels,
  // refusals, cancel(), single flight, result cache, fallback model and stale answers. With options.raw_scores each
  // label carries its logit (a row of logits()) instead of its probability.
  StatusOr<uint64_t> submit_classify(std::string_view text, const ClassifyRequestOptions& options,
                                     ClassifyCallback done) const;
  StatusOr<uint64_t> submit_classify(std::string_view text, const ClassifyRequestOptions& options,
                                     ClassifyAnswerCallback done) const;
  // Scores each (query, passage) pair with a cross-encoder (a classification model with one label) and returns the
  // passages sorted by score, best first, with their indices (sentence-transformers' CrossEncoder.rank). Pairs are
  // encoded [CLS] query [SEP] passage [SEP] with token types 0 then 1, truncated longest-first to max_seq_len as
  // Hugging Face does. Any number of passages is run in batches; none is INVALID_ARGUMENT.
  StatusOr<std::vector<RerankResult>> rerank(std::string_view query, std::span<const std::string_view> passages,
                                             const RerankOptions& options = {}) const;
  // rerank() of one (query, passage) pair through the batcher, as submit_classify() is for classify(): `done`
  // receives the pair's score (a sigmoid of its logit, or the logit with options.raw_scores), the one rerank() gives
  // that passage. The pair is encoded here, as rerank() encodes it, so that its errors come back at once: on a model
  // that is not a cross-encoder FAILED_PRECONDITION; invalid UTF-8 INVALID_ARGUMENT, its message naming "first text"
  // (the query) or "second text" (the passage) and the byte offset. Then as submit(): a past deadline, an unknown
  // priority, a full queue or a predicted-late request (RESOURCE_EXHAUSTED) are refused and `done` is never called;
  // otherwise it is called exactly once, with the score or DEADLINE_EXCEEDED, CANCELLED (cancel()) or UNAVAILABLE.
  // The result cache and single flight key a pair by its token ids and where its passage begins, never sharing an
  // entry with a single text. A pair the queue refuses for overload goes to the fallback model: create() checked
  // that it has the primary's labels (one: a cross-encoder too) and token ids, and it is given the pair's token
  // types. options.allow_stale answers from the stale copies as submit() does.
  //
  //   rt->submit_rerank("reset my PIN", "To reset your PIN, open the app...", {{.timeout = 200ms}},
  //                     [](uint64_t id, brisk::StatusOr<float> score) { /* on a batcher thread */ });
  StatusOr<uint64_t> submit_rerank(std::string_view query, std::string_view passage,
                                   const RerankRequestOptions& options, RerankCallback done) const;
  StatusOr<uint64_t> submit_rerank(std::string_view query, std::string_view passage,
                                   const RerankRequestOptions& options, RerankAnswerCallback done) const;

  // The tokens the model would see for `text` before truncation, [CLS] and [SEP] included: a text longer than
  // info().max_seq_len is truncated to it by embed() and submit(). Invalid UTF-8 is an error as in submit(). For a
  // service's usage accounting and its refusal of over-long inputs (TEI's truncate=false).
  StatusOr<size_t> count_tokens(std::string_view text) const;
  // The same for a (query, passage) pair as a cross-encoder sees it (rerank(), submit_rerank()): both texts and the
  // template's special tokens, before the pair is truncated to info().max_seq_len.
  StatusOr<size_t> count_tokens(std::string_view query, std::string_view passage) const;

  // Cancels a submitted request (see Batcher::cancel); NOT_FOUND once it has completed.
  Status cancel(uint64_t request_id) const;

  // Drops every cached result carrying `tag` (EmbedRequestOptions::cache_tags), in this process and (with a
  // Redis tier) in Redis and in the L1 caches of every process sharing it; returns how many entries this
  // process dropped. A Redis failure is counted in the stats (redis.errors) and leaves the Redis copies to
  // expire. The tag "model:<cache_model_id()>" drops all of this process's results (the Redis copies are
  // namespaced by the model's contents and expire after result_ttl). A hit does not add tags to an entry.
  StatusOr<size_t> cache_invalidate_tag(std::string_view tag) const;
  // The suffix of the model's tag and the caches' namespace in Redis: model directory name, a hash of its
  // config.json and weights, pooling and normalisation. In Redis, results computed at another precision than the
  // model file's float32 arithmetic go by this id plus that precision ("-f16"/"-bf16" activations, "-int8attn"
  // self-attention; stats: redis.shared_model), so processes share only results computed alike.
  const std::string& cache_model_id() const;
  // The id of the model's embeddings as a semantic cache sees them: cache_model_id() with normalisation on, whatever
  // this runtime's (a semantic cache and its pair verifier L2-normalise every embedding). A pair verifier file
  // (`brisk fit-verifier`) records it. Empty for a model that does not embed.
  const std::string& embedding_model_id() const;
  // Hits, misses, loads, evictions and sizes of the token and result caches (and the Redis tier) as JSON.
  std::string cache_stats_json() const;

  // The batcher's counters, histograms and current limits.
  batch::BatcherStats batch_stats() const;
  // Forward passes of the encoder so far: the batcher's batches plus passes run on a calling thread.
  uint64_t forward_passes() const;
  // Stats of every stage as one JSON object: batcher counts, queue/compute/latency percentiles, batch sizes,
  // padding, tokenization time, cache hits and misses.
  std::string stats_json() const;
  // The same in Prometheus text exposition format (latencies in seconds).
  std::string metrics_prometheus() const;

 private:
  friend struct internal::RuntimeImpl;  // a fallback Runtime's requests go through its own RuntimeImpl
  explicit Runtime(std::unique_ptr<internal::RuntimeImpl> impl);
  std::unique_ptr<internal::RuntimeImpl> impl_;
};

}  // namespace brisk
