/* brisk C API (C99): embed texts with a transformer encoder, in-process, from any language with a C FFI.
 *
 *   brisk_runtime_options opts;
 *   brisk_runtime_options_init(&opts, sizeof opts);
 *   opts.model_dir = "/models/all-MiniLM-L6-v2";
 *   brisk_runtime* rt = NULL;
 *   if (brisk_runtime_create(&opts, &rt) != BRISK_OK) { fprintf(stderr, "%s\n", brisk_last_error()); return 1; }
 *   size_t dim = 0;
 *   brisk_embedding_dim(rt, &dim);
 *   const char* texts[2] = {"reset my PIN", "lost card"};
 *   float* out = malloc(2 * dim * sizeof(float));
 *   brisk_embed(rt, texts, 2, out, 2 * dim);
 *   brisk_runtime_destroy(rt);
 *
 * Ownership: the caller owns every buffer it passes in (texts, out, options) and may free it once the call
 * returns; brisk copies what it keeps. A runtime is owned by the caller from brisk_runtime_create until
 * brisk_runtime_destroy. Strings returned by brisk (brisk_version_string, brisk_last_error,
 * brisk_status_string) are owned by brisk and must not be freed.
 *
 * Thread safety: a brisk_runtime may be shared between threads; every call but brisk_runtime_destroy may run
 * concurrently on one runtime. brisk_runtime_destroy must not race with any other call on the same runtime; it
 * completes every pending brisk_submit_embed (queued ones with BRISK_SHUTDOWN) before it returns.
 * brisk_last_error is per thread: it describes the last failed call made by the calling thread.
 *
 * ABI: functions are only ever added, and fields only ever appended to brisk_runtime_options. The caller passes
 * sizeof its struct to brisk_runtime_options_init, which writes exactly that many bytes and records the size in
 * struct_size; brisk_runtime_create reads no further. So a caller compiled against an older, shorter struct keeps
 * working (the fields it lacks take their defaults), and so does a newer caller on an older library.
 */
#ifndef BRISK_H_
#define BRISK_H_

#include <stddef.h>
#include <stdint.h>

#if defined(BRISK_BUILDING_LIBRARY)
#define BRISK_C_API __attribute__((visibility("default")))
#else
#define BRISK_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when the ABI changes incompatibly (never, so far). */
#define BRISK_ABI_VERSION 1

typedef enum brisk_status {
  BRISK_OK = 0,
  BRISK_INVALID_ARGUMENT = 1, /* a NULL pointer, a bad option, invalid UTF-8, a too-small buffer */
  BRISK_NOT_FOUND = 2,        /* a model file or directory does not exist */
  BRISK_OUT_OF_RANGE = 3,
  BRISK_RESOURCE_EXHAUSTED = 4, /* out of memory, or overloaded: a full queue or a rate limit (retry later) */
  BRISK_UNIMPLEMENTED = 5,      /* e.g. a device this build lacks */
  BRISK_FAILED_PRECONDITION = 6,
  BRISK_DATA_LOSS = 7, /* a corrupt or truncated model file */
  BRISK_INTERNAL = 8,
  BRISK_DEADLINE_EXCEEDED = 9,  /* a submitted request's deadline passed before it ran */
  BRISK_CANCELLED = 10,         /* brisk_cancel was called for the request, or a user callback (a
                                   brisk_metric_callback) returned non-zero to stop the call */
  BRISK_SHUTDOWN = 11,          /* the runtime shut down before the request ran */
  BRISK_PERMISSION_DENIED = 12, /* e.g. a model file or a Redis server refused access */
  BRISK_OUT_OF_MEMORY = 13,     /* device memory past device_memory_limit, or past what the GPU has; the batch
                                   failed, the runtime is intact (retry smaller or later) */
  BRISK_OVERLOADED = BRISK_RESOURCE_EXHAUSTED
} brisk_status;

typedef enum brisk_pooling {
  BRISK_POOLING_MODEL_DEFAULT = 0, /* the Pooling module modules.json names (1_Pooling when there is no
                                      modules.json), else mean */
  BRISK_POOLING_MEAN = 1,
  BRISK_POOLING_CLS = 2
} brisk_pooling;

typedef enum brisk_device { BRISK_DEVICE_CPU = 0, BRISK_DEVICE_CUDA = 1 } brisk_device;

typedef enum brisk_dtype {
  BRISK_DTYPE_DEFAULT = 0,
  BRISK_DTYPE_F32 = 1,
  BRISK_DTYPE_F16 = 2,
  BRISK_DTYPE_BF16 = 3
} brisk_dtype;

typedef struct brisk_runtime brisk_runtime;

/* One span of a traced request (see brisk_runtime_options.span_fn), valid only during the span_fn call. Ids are
 * lowercase hex (trace_id 32 digits, span ids 16); parent_span_id is "" for a root span. Times are Unix-epoch
 * nanoseconds. status is OTLP's Status.code: 0 unset, 1 ok, 2 error (status_message then says why). Attribute values
 * are text: integers in decimal, doubles as %.17g, booleans "true" or "false". */
typedef struct brisk_span_attribute {
  const char* key;
  const char* value;
} brisk_span_attribute;

typedef struct brisk_span {
  const char* trace_id;
  const char* span_id;
  const char* parent_span_id;
  const char* name;
  int64_t start_unix_nanos;
  int64_t end_unix_nanos;
  int32_t status;
  const char* status_message;
  const brisk_span_attribute* attributes;
  size_t num_attributes;
} brisk_span;

/* Receives the n spans of one request (spans[0] is its "brisk.request"). It runs on the thread that completed the
 * request (a batcher thread, or the submitting thread for cache hits and refused submits), possibly on several at
 * once: keep it short and thread-safe, and do not call brisk_runtime_destroy from it. */
typedef void (*brisk_span_fn)(void* user_data, const brisk_span* spans, size_t n);

typedef struct brisk_runtime_options {
  size_t struct_size;     /* the caller's sizeof(brisk_runtime_options); set by brisk_runtime_options_init */
  const char* model_dir;  /* required: a Hugging Face model directory */
  int32_t num_threads;    /* 0: the CPUs this process may use; at most 1024 */
  int32_t max_seq_len;    /* tokens per text, [CLS] and [SEP] included; 0: the model's default, which is
                             sentence_bert_config.json's max_seq_length when present (256 for all-MiniLM-L6-v2),
                             else config.json's max_position_embeddings */
  int32_t pooling;        /* a brisk_pooling */
  int32_t normalize;      /* 1: L2-normalise embeddings; 0: do not; -1 (default): as the model says (modules.json
                             lists a Normalize module, as sentence-transformers decides) */
  int32_t device;         /* a brisk_device (default CPU) */
  int32_t max_batch_size; /* texts per forward pass, for brisk_embed and brisk_submit_embed alike: a brisk_embed
                             call is queued as one unit and runs as ceil(n / max_batch_size) passes when nothing
                             else is queued (default 32; at most 4096) */
  /* The dynamic batcher behind brisk_embed and brisk_submit_embed (appended in 0.2). */
  int32_t reserved0;           /* ignored; was batch_max_size before 0.4 (max_batch_size is the one limit) */
  int32_t batch_max_delay_us;  /* how long a free executor waits for a batch to fill (default 0: no wait; at most
                                  60000000, 60 s) */
  int32_t batch_max_queue;     /* queued requests before BRISK_OVERLOADED (default 4096; at most 1048576) */
  int32_t batch_p99_target_ms; /* > 0: adapt batch size (compute <= half of it) and queue delay to keep P99
                                  latency under it (default 0: off; at most 3600000, 1 h) */
  /* The caches (appended in 0.3). Results are keyed by the text's token ids, so texts the model cannot tell
   * apart (case, accents, spacing) share an entry. */
  int64_t cache_result_bytes;  /* in-process result cache size in bytes (default 64 MiB; 0: no result cache;
                                  a struct from before 0.3, without this field, gets 0) */
  int32_t cache_ttl_ms;        /* how long a cached result lives (default 300000 = 5 min; 0: until evicted,
                                  not allowed with redis_host; at most INT32_MAX, 24.8 days) */
  int32_t cache_token_entries; /* token-id cache entries in front of the tokenizer (default 16384; 0: off; at
                                  most 4194304) */
  const char* redis_host;      /* non-NULL: a Redis server shared by processes as the L2 result cache */
  int32_t redis_port;          /* default 6379 */
  int32_t redis_timeout_ms;    /* per Redis command; past it (or while Redis is down) lookups fall back to the
                                  model (default 20; 1 to 60000) */
  /* Redis security (appended in 0.4; a struct from before gets the defaults: no AUTH, unsigned values, no TLS).
   * Strings are copied by brisk_runtime_create. */
  const char* redis_user;        /* ACL user for AUTH (NULL or "": the default user; needs redis_password) */
  const char* redis_password;    /* non-NULL and not "": every connection sends AUTH; a server that refuses it
                                    fails brisk_runtime_create with BRISK_PERMISSION_DENIED */
  const char* redis_signing_key; /* non-NULL and not "": a secret shared by every process using the server;
                                    values are signed with HMAC-SHA256 over key and value, and unsigned or
                                    wrongly signed values are refused (counted in the stats, redis.rejected) */
  int32_t redis_tls;             /* 1: TLS to Redis; this build's hiredis has no TLS, so BRISK_UNIMPLEMENTED
                                    (default 0) */
  /* Text handling (appended in 0.4). */
  int32_t replace_invalid_utf8; /* 1: each ill-formed UTF-8 sequence in a text becomes one U+FFFD (one per
                                   maximal subpart, as Python's errors="replace" decodes) instead of failing the
                                   text, and the tokenizer treats it as U+FFFD: BERT's WordPiece drops it (with
                                   clean_text, the default), XLM-R's normalizer turns it into a space, byte-level
                                   BPE (Qwen) encodes it as tokens; 0 (default): a text with invalid UTF-8 fails
                                   with BRISK_INVALID_ARGUMENT naming the byte offset */
  /* The GPU (appended in 0.5; a struct from before gets the defaults). */
  int32_t device_index;        /* with device = BRISK_DEVICE_CUDA: the GPU's ordinal (default 0) */
  int32_t activation_dtype;    /* a brisk_dtype: BRISK_DTYPE_DEFAULT (f32 on cpu, f16 on cuda), F32, F16 or BF16 */
  int32_t remove_padding;      /* cuda: 1 (default) runs dense layers on real tokens only; 0 pads to the longest */
  int64_t device_memory_limit; /* cuda: bytes brisk may hold on the GPU; past it BRISK_OUT_OF_MEMORY (0: no cap) */
  /* Tasks and backends (appended in 0.6; a struct from before gets the defaults). */
  const char* classification_head; /* non-NULL and not "": a head file written by `brisk fit-intents`; the runtime
                                      then classifies with it over model_dir's embeddings */
  const char* torchscript_module;  /* non-NULL and not "": run this TorchScript file (torch.jit.save) instead of
                                      brisk's encoder; model_dir gives its tokenizer and config.json */
  int32_t torchscript_output;      /* a brisk_torchscript_output: which output of the module is the result */
  /* Degradation (appended in 0.7; a struct from before gets the defaults: no fallback, nothing kept stale). */
  const char* fallback_model; /* non-NULL and not "": a lighter model (brisk quantize's file, a pruned directory) of
                                 the same tokenizer and output; a submit the queue refuses for overload (full, or
                                 predicted past its deadline) is answered by it instead (BRISK_ANSWER_FALLBACK) */
  int32_t fallback_threads;   /* the fallback's compute threads (default 0: num_threads) */
  int32_t cache_stale_ttl_ms; /* how long past cache_ttl_ms a result is kept, to answer a request with allow_stale
                                 when the model fails (BRISK_ANSWER_STALE; default 0: none kept; not with
                                 redis_host; at most INT32_MAX, 24.8 days) */
  /* Serving policy (appended in 0.7; a struct from before gets none). */
  const char* policy_path; /* non-NULL and not "": a policy file written by `brisk tune` (JSON); its values override
                              max_batch_size, batch_max_delay_us, num_threads and the batcher's executors, batches
                              in flight, token budget and predicted-late refusal. A bad file fails
                              brisk_runtime_create with a message naming it */
  /* Request tracing (appended in 0.7; a struct from before traces nothing). Requests whose
   * brisk_request_options.trace_parent is a sampled W3C traceparent produce spans: "brisk.request" (a child of the
   * traceparent's span) with "brisk.tokenize", "brisk.cache_lookup", "brisk.queue", "brisk.batch_compute" and
   * "brisk.callback" under it. At most one of span_fn and otlp_trace_path may be set. */
  brisk_span_fn span_fn;         /* non-NULL: receives each request's spans once its callback has returned */
  void* span_user_data;          /* passed to span_fn */
  const char* otlp_trace_path;   /* non-NULL and not "": append the spans to this file as OTLP/JSON lines (one
                                    ExportTraceServiceRequest per request), for an OpenTelemetry Collector */
  const char* otlp_service_name; /* the OTLP resource's service.name (NULL or "": "brisk") */
  /* Redis (appended in 0.8; a struct from before gets the default, 0). */
  int32_t redis_allow_unsigned; /* 1: with no redis_signing_key, accept unsigned shared values (anyone who can
                                   write to the server can forge them); 0 (default): redis_host without a signing
                                   key fails brisk_runtime_create with BRISK_INVALID_ARGUMENT naming this field */
  /* The semantic answer cache (appended in 0.9; a struct from before gets none): answers stored by question and
   * served to a later question that asks the same thing (brisk_answer_cache_insert / _lookup). An embedding model
   * only. */
  int32_t answer_cache;          /* 1: keep one, cosine and the default guards deciding; 0 (default): none.
                                    It occupies 0.8's tail padding, so a struct_size of at most
                                    offsetof(brisk_runtime_options, semantic_verifier) reads it as 0 */
  const char* semantic_verifier; /* non-NULL and not "": a verifier file from `brisk fit-verifier` for this model
                                    decides which stored answer is served (implies answer_cache); a file fitted
                                    for another model fails brisk_runtime_create with BRISK_FAILED_PRECONDITION
                                    naming both models */
  int32_t answer_cache_entries;  /* answers kept per tenant, the least recently used evicted (default 0: 10000) */
} brisk_runtime_options;

typedef enum brisk_torchscript_output {
  BRISK_TORCHSCRIPT_AUTO = 0,              /* a [B, T, H] output is pooled by brisk; else [B, L] logits */
  BRISK_TORCHSCRIPT_LAST_HIDDEN_STATE = 1, /* pooled (and normalised) as the runtime options say */
  BRISK_TORCHSCRIPT_POOLED = 2,            /* the module's own [B, H] sentence vector */
  BRISK_TORCHSCRIPT_LOGITS = 3             /* [B, L] logits: a classification model */
} brisk_torchscript_output;

/* Receives the outcome of brisk_submit_embed, exactly once per request that was accepted. On BRISK_OK,
 * embedding points at dim floats; otherwise it is NULL and error says why. Both pointers are valid only during
 * the call. It runs on a batcher thread (or inside brisk_cancel / brisk_runtime_destroy), or, for a text found
 * in the result cache, on the calling thread before brisk_submit_embed returns: keep it short, do not take a
 * lock the caller holds around brisk_submit_embed, and do not call brisk_runtime_destroy from it. */
typedef void (*brisk_embed_callback)(void* user_data, uint64_t request_id, brisk_status status, const float* embedding,
                                     size_t dim, const char* error);

BRISK_C_API uint32_t brisk_abi_version(void);
BRISK_C_API const char* brisk_version_string(void);
/* The message of the last failed call on this thread; "" when there is none. */
BRISK_C_API const char* brisk_last_error(void);
BRISK_C_API const char* brisk_status_string(brisk_status status);

/* Where scripts/setup installs the default model: $BRISK_MODEL_DIR when set, else
 * $HOME/.cache/brisk/models/all-MiniLM-L6-v2. Read once, on the first call. */
BRISK_C_API const char* brisk_default_model_dir(void);

/* Fills the first struct_size bytes of *options with the defaults; pass sizeof(*options). */
BRISK_C_API brisk_status brisk_runtime_options_init(brisk_runtime_options* options, size_t struct_size);
/* Loads the model; *out receives the runtime (NULL on failure). */
BRISK_C_API brisk_status brisk_runtime_create(const brisk_runtime_options* options, brisk_runtime** out);
/* Frees the runtime; NULL is accepted and ignored. */
BRISK_C_API void brisk_runtime_destroy(brisk_runtime* runtime);

BRISK_C_API brisk_status brisk_embedding_dim(const brisk_runtime* runtime, size_t* out_dim);
/* The model's query prompt (config_sentence_transformers.json's prompts["query"], e.g. Qwen3-Embedding's
 * "Instruct: ...\nQuery:"): put it in front of a query's text to embed it as sentence-transformers'
 * encode(prompt_name="query") does. "" when the model has none; NULL for a NULL runtime. Owned by the runtime, valid
 * until brisk_runtime_destroy. (Added with the decoder embedders.) */
BRISK_C_API const char* brisk_query_prompt(const brisk_runtime* runtime);
/* Embeds n NUL-terminated UTF-8 texts into out, row-major n x dim; out_len (in floats) must be >= n * dim. */
BRISK_C_API brisk_status brisk_embed(brisk_runtime* runtime, const char* const* texts, size_t n, float* out,
                                     size_t out_len);

/* Queues one NUL-terminated UTF-8 text for batched embedding and returns without waiting for the model. priority: 0
 * (most urgent) to 2. deadline_ms: milliseconds from now after which the request fails with BRISK_DEADLINE_EXCEEDED
 * instead of running; 0 means none, and so does a deadline past the clock's range (INT64_MAX); negative is invalid.
 * *request_id (may be NULL) receives the id for brisk_cancel. When this returns an error (BRISK_OVERLOADED for a full
 * queue or a deadline the queued work ahead cannot meet, BRISK_INVALID_ARGUMENT, ...) callback is never called;
 * otherwise it is called exactly once. */
BRISK_C_API brisk_status brisk_submit_embed(brisk_runtime* runtime, const char* text, int32_t priority,
                                            int64_t deadline_ms, brisk_embed_callback callback, void* user_data,
                                            uint64_t* request_id);
/* Cancels a submitted request: its callback gets BRISK_CANCELLED (at once when it was still queued).
 * BRISK_NOT_FOUND when the request has already completed or the id is unknown. */
BRISK_C_API brisk_status brisk_cancel(brisk_runtime* runtime, uint64_t request_id);

/* The runtime's statistics as a JSON object / as Prometheus text exposition (with the answer cache's
 * brisk_answer_cache_* series when it has one), written NUL-terminated into buf. *required (may be NULL) receives the
 * bytes needed including the NUL; when len is smaller, nothing is written and BRISK_OUT_OF_RANGE is returned (buf may
 * then be NULL, to ask for the size). */
BRISK_C_API brisk_status brisk_stats_json(brisk_runtime* runtime, char* buf, size_t len, size_t* required);
BRISK_C_API brisk_status brisk_metrics_prometheus(brisk_runtime* runtime, char* buf, size_t len, size_t* required);

/* Drops every cached result carrying tag, here and, with a Redis tier, in Redis and in the caches of every
 * process sharing it (results are tagged through the C++ API). The tag "model:<id>" (id: brisk_cache_stats_json's
 * "model_id") drops all of this process's results. *removed (may be NULL) receives how many entries this process
 * dropped. A Redis failure is counted in the stats, and its copies then expire with cache_ttl_ms. */
BRISK_C_API brisk_status brisk_cache_invalidate_tag(brisk_runtime* runtime, const char* tag, size_t* removed);
/* The caches' statistics (hits, misses, hit rate, loads, evictions, sizes; the Redis tier's hits, errors and
 * breaker state) as JSON, written like brisk_stats_json. */
BRISK_C_API brisk_status brisk_cache_stats_json(brisk_runtime* runtime, char* buf, size_t len, size_t* required);

/* Per-request options of brisk_submit_embed_ex and brisk_submit_classify. Fields are only ever appended; fill with
 * brisk_request_options_init. Strings are copied before the call returns. */
/* The semantic answer cache (brisk_runtime_options.answer_cache or .semantic_verifier; C++: brisk::AnswerCache). Each
 * call embeds the question with the runtime (its result cache in front). tenant: NULL or "" is "default"; tenants
 * never see each other's answers. Without an answer cache both calls fail with BRISK_FAILED_PRECONDITION. */
/* Stores answer (UTF-8, NUL-terminated) for question; a question already stored is replaced. ttl_ms > 0: it
 * expires then; 0: after one hour. An answer for a 1,025th tenant is BRISK_RESOURCE_EXHAUSTED (the cache holds at
 * most 1,024: SemanticCacheOptions::max_tenants). */
BRISK_C_API brisk_status brisk_answer_cache_insert(brisk_runtime* runtime, const char* tenant, const char* question,
                                                   const char* answer, int64_t ttl_ms);
typedef enum brisk_lookup_reason {
  BRISK_LOOKUP_HIT = 0,
  BRISK_LOOKUP_NO_CANDIDATE = 1,        /* the tenant has no answers */
  BRISK_LOOKUP_BELOW_THRESHOLD = 2,     /* the nearest stored question is not similar enough */
  BRISK_LOOKUP_REJECTED_BY_GUARD = 3,   /* a guard (negation, number, entity) refused the nearest one */
  BRISK_LOOKUP_EXPIRED = 4,             /* the nearest one's answer had expired */
  BRISK_LOOKUP_INVALID = 5,             /* the question could not be looked up */
  BRISK_LOOKUP_REJECTED_BY_VERIFIER = 6 /* the verifier refused every candidate */
} brisk_lookup_reason;
typedef struct brisk_answer_cache_result {
  int32_t hit;          /* 1: the stored answer is in the caller's buffer */
  int32_t reason;       /* a brisk_lookup_reason */
  float similarity;     /* cosine of the stored question the reason is about (0 when there is none) */
  int32_t verified;     /* 1: the verifier scored that question */
  float verifier_score; /* its score, when verified */
  size_t answer_size;   /* on a hit: the answer's bytes, NUL included */
} brisk_answer_cache_result;
/* Looks question up. On a hit the answer is written NUL-terminated into answer (answer_len bytes); when it does not
 * fit, nothing is written, result->answer_size says what it needs and BRISK_OUT_OF_RANGE is returned (answer may
 * then be NULL). A miss is BRISK_OK with result->hit 0 and the reason. */
BRISK_C_API brisk_status brisk_answer_cache_lookup(brisk_runtime* runtime, const char* tenant, const char* question,
                                                   brisk_answer_cache_result* result, char* answer, size_t answer_len);

typedef struct brisk_request_options {
  size_t struct_size;            /* the caller's sizeof(brisk_request_options) */
  int32_t priority;              /* 0 (most urgent, default) to 2 */
  int64_t deadline_ms;           /* milliseconds from now; 0 (default): none; negative is invalid */
  const char* const* cache_tags; /* the result is cached with these tags (brisk_cache_invalidate_tag drops it) */
  size_t num_cache_tags;
  int32_t top_k; /* brisk_submit_classify: labels returned, best first (default 1) */
  /* Appended in 0.7. */
  int32_t reserved1;        /* ignored: the padding after top_k before 0.7, which an older caller may have left unset */
  const char* trace_parent; /* a W3C traceparent (NULL or "": not traced); malformed: BRISK_INVALID_ARGUMENT */
  char* traceparent_out;    /* non-NULL: receives, NUL-terminated, the traceparent to propagate downstream (naming
                               brisk's request span when spans are recorded, else trace_parent itself; "" when
                               there is no trace_parent) */
  size_t traceparent_out_len; /* bytes at traceparent_out: at least 56 */
  int32_t allow_stale; /* 1: when the model cannot answer (overload, deadline, a failed pass), answer with a result
                          that expired at most cache_stale_ttl_ms ago, if this process has one (default 0) */
} brisk_request_options;

/* Which path answered a request. */
typedef enum brisk_answer_path {
  BRISK_ANSWER_MODEL = 0,    /* a forward pass of the model */
  BRISK_ANSWER_CACHE = 1,    /* the result cache */
  BRISK_ANSWER_FALLBACK = 2, /* the fallback model (fallback_model), because the model's queue was overloaded */
  BRISK_ANSWER_STALE = 3     /* an expired cached result, because the model failed (allow_stale) */
} brisk_answer_path;
/* Inside a brisk_embed_callback or brisk_classify_callback: the path that answered the request being completed
 * (thread-local; BRISK_ANSWER_MODEL outside a callback). */
BRISK_C_API brisk_answer_path brisk_callback_answer_path(void);

BRISK_C_API brisk_status brisk_request_options_init(brisk_request_options* options, size_t struct_size);
/* brisk_submit_embed with per-request options (options may be NULL: the defaults). */
BRISK_C_API brisk_status brisk_submit_embed_ex(brisk_runtime* runtime, const char* text,
                                               const brisk_request_options* options, brisk_embed_callback callback,
                                               void* user_data, uint64_t* request_id);

/* Classification (a sequence-classification model, or a runtime with a classification_head). label points at the
 * label's name, owned by the runtime and valid until brisk_runtime_destroy. score is its probability: a softmax over
 * the labels, or a sigmoid per label for multi-label and one-label models. */
typedef struct brisk_label_score {
  int64_t label_id;
  float score;
  const char* label;
} brisk_label_score;

/* The number of labels (0 for an embedding model) and the name of one. */
BRISK_C_API brisk_status brisk_num_labels(const brisk_runtime* runtime, size_t* out_num_labels);
BRISK_C_API const char* brisk_label_name(const brisk_runtime* runtime, size_t label_id);
/* Classifies n texts: row i of out (top_k entries, best first) for texts[i]; out_len (entries) >= n * top_k.
 * BRISK_FAILED_PRECONDITION on an embedding model; top_k outside 1..brisk_num_labels is BRISK_INVALID_ARGUMENT. */
BRISK_C_API brisk_status brisk_classify(brisk_runtime* runtime, const char* const* texts, size_t n, int32_t top_k,
                                        brisk_label_score* out, size_t out_len);
/* Receives the outcome of brisk_submit_classify, as brisk_embed_callback does: on BRISK_OK, labels points at n
 * entries (options->top_k), valid only during the call. */
typedef void (*brisk_classify_callback)(void* user_data, uint64_t request_id, brisk_status status,
                                        const brisk_label_score* labels, size_t n, const char* error);
BRISK_C_API brisk_status brisk_submit_classify(brisk_runtime* runtime, const char* text,
                                               const brisk_request_options* options, brisk_classify_callback callback,
                                               void* user_data, uint64_t* request_id);

/* Reranking with a cross-encoder (a classification model with one label). out receives n entries sorted by score,
 * best first: the passage's index in passages and its score (a sigmoid of the logit, or the logit itself with
 * raw_scores = 1). out_len (entries) >= n. n = 0 is BRISK_INVALID_ARGUMENT. */
typedef struct brisk_rerank_result {
  size_t index;
  float score;
} brisk_rerank_result;

BRISK_C_API brisk_status brisk_rerank(brisk_runtime* runtime, const char* query, const char* const* passages, size_t n,
                                      int32_t raw_scores, brisk_rerank_result* out, size_t out_len);

/* A host backend: the host computes each batch itself and brisk tokenizes, caches, batches and measures around it.
 * A batch holds num_sequences packed sequences: sequence i is input_ids[offsets[i], offsets[i + 1]) with
 * token_type_ids of the same length ([CLS] and [SEP] included; offsets has num_sequences + 1 entries). */
typedef struct brisk_batch {
  size_t num_sequences;
  size_t total_tokens;
  const int32_t* input_ids;
  const int32_t* token_type_ids;
  const int64_t* offsets;
} brisk_batch;

/* Fills out (num_sequences x output_dim floats, row i for sequence i; out_len floats) and returns BRISK_OK, or
 * another status and, optionally, a NUL-terminated message in error (error_len bytes). Every value must be written
 * and finite: a value left unset fails the batch with BRISK_INTERNAL naming the row. It is called on a batcher
 * thread or on a thread calling brisk_embed / brisk_classify / brisk_rerank, possibly on several at once. */
typedef brisk_status (*brisk_backend_fn)(void* user_data, const brisk_batch* batch, float* out, size_t out_len,
                                         char* error, size_t error_len);

typedef enum brisk_backend_output {
  BRISK_OUTPUT_EMBEDDING = 0, /* rows are sentence embeddings (brisk_embed) */
  BRISK_OUTPUT_LOGITS = 1     /* rows are one logit per label (brisk_classify; brisk_rerank with one label) */
} brisk_backend_output;

/* Fields are only ever appended; fill with brisk_backend_init. Strings and labels are copied at create. */
typedef struct brisk_backend {
  size_t struct_size;
  brisk_backend_fn run;      /* required */
  void* user_data;           /* passed to run; must outlive the runtime */
  int32_t output;            /* a brisk_backend_output */
  size_t output_dim;         /* floats per sequence: the embedding width or the number of labels */
  const char* const* labels; /* BRISK_OUTPUT_LOGITS: output_dim names; NULL: "LABEL_0", "LABEL_1", ... */
  int32_t multi_label;       /* 1: a sigmoid per label instead of a softmax */
  size_t bytes_per_token;    /* the host's memory per token, for the batcher's memory budget (0: none) */
  const char* name;          /* in stats and info; NULL: "callback". With a Redis tier it also keys the shared
                                results (with config.json, output and labels): give each host model its own name */
} brisk_backend;

BRISK_C_API brisk_status brisk_backend_init(brisk_backend* backend, size_t struct_size);
/* A runtime over the host's backend: options->model_dir gives the tokenizer (vocab.txt or tokenizer.json) and,
 * when present, config.json and the pooling files; no weights are read. */
BRISK_C_API brisk_status brisk_runtime_create_with_backend(const brisk_runtime_options* options,
                                                           const brisk_backend* backend, brisk_runtime** out);

/* Pruning: sensitivity analysis. How much a metric drops as each part of the model is pruned alone, the first step
 * in deciding what to prune. mode "sweep" (default) prunes each group alone at each level: per layer its attention
 * heads and its feed-forward neurons, least important first (granularity "structure", default), or each linear
 * weight element-wise by magnitude (granularity "tensor"). mode "zero" removes each whole layer, then each head,
 * alone. The results go to out_dir as sensitivity.csv (header: mode,kind,unit,series,layer,index,sparsity,
 * parameters_removed,metric,drop,drop_per_parameter; one row per point), sensitivity.json and sensitivity.svg (a
 * plot a browser shows).
 *
 *   brisk_sensitivity_options o;
 *   brisk_sensitivity_options_init(&o, sizeof o);
 *   o.model_dir = "/models/all-MiniLM-L6-v2";
 *   o.texts = texts; o.num_texts = n;
 *   o.out_dir = "sensitivity";
 *   if (brisk_prune_sensitivity(&o) != BRISK_OK) fprintf(stderr, "%s\n", brisk_last_error());
 */

/* A user's metric for the sensitivity analysis: it receives a candidate model's embeddings of the evaluation
 * texts (rows x dim floats, row-major, row i for texts[i], L2-normalised) and writes *score, higher is better.
 * It is called on the thread that called brisk_prune_sensitivity, once for the unpruned model (its score is the
 * baseline) and then once per pruned candidate, in the order of the table's rows; embeddings is valid only during
 * the call. Return 0 on success. Anything else stops the analysis: brisk_prune_sensitivity then returns
 * BRISK_CANCELLED with a message naming the returned code. *score is NaN on entry; a score left NaN or not finite
 * fails the analysis with BRISK_INVALID_ARGUMENT. */
typedef int (*brisk_metric_callback)(void* user_data, const float* embeddings, size_t rows, size_t dim, double* score);

/* Fields are only ever appended; see the ABI note at the top (brisk_runtime_options works the same way). Strings
 * and arrays are read during brisk_prune_sensitivity only. */
typedef struct brisk_sensitivity_options {
  size_t struct_size;       /* the caller's sizeof(brisk_sensitivity_options); set by brisk_sensitivity_options_init */
  const char* model_dir;    /* a Hugging Face model directory; NULL: brisk_default_model_dir() */
  const char* const* texts; /* required: the evaluation texts, NUL-terminated UTF-8; with importance "activation"
                               also the calibration texts */
  size_t num_texts;         /* at least 1 */
  const char* mode;         /* "sweep" or "zero"; NULL: "sweep" */
  const char* granularity;  /* sweep only: "structure" or "tensor"; NULL: "structure" */
  const double* levels;     /* sweep only: the fractions pruned, each in [0, 1) (0 is the unpruned point, not
                               evaluated again); NULL: 0, 0.1, ..., 0.9 */
  size_t num_levels;        /* entries in levels (at least 1 when levels is not NULL) */
  const char* importance;   /* the order a structured sweep removes units in: "activation" (measured on texts),
                               "l1" or "l2" (weight magnitude); NULL: "activation" */
  brisk_metric_callback metric; /* NULL: the built-in metric, the mean cosine between the candidate's and the
                                   unpruned model's embeddings of texts (named "mean_cosine") */
  void* metric_user_data;       /* passed to metric */
  const char* metric_name;      /* the metric's name in the outputs; NULL: "user"; ignored without metric */
  const char* out_dir;          /* required: created when missing; its sensitivity.* files are overwritten */
  int32_t num_threads;          /* 0: the CPUs this process may use; at most 1024 */
  int32_t max_seq_len;          /* tokens per text, [CLS] and [SEP] included; 0: 128; at most the model's
                                   max_position_embeddings (larger values are cut to it) */
} brisk_sensitivity_options;

/* Fills the first struct_size bytes of *options with the defaults; pass sizeof(*options). */
BRISK_C_API brisk_status brisk_sensitivity_options_init(brisk_sensitivity_options* options, size_t struct_size);
/* Loads the model, runs the analysis and writes the three files. Bad options fail before the model is loaded. */
BRISK_C_API brisk_status brisk_prune_sensitivity(const brisk_sensitivity_options* options);

#ifdef __cplusplus
}
#endif

#endif /* BRISK_H_ */
