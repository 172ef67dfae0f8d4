#!/usr/bin/env python3
"""A ctypes client of libbrisk's C API: embeds texts and ranks them by similarity to the first; classifies; reranks.

    python3 examples/python/brisk_client.py --lib build/release/lib/libbrisk.so "reset my PIN" "forgot my PIN" "opening hours"
    python3 examples/python/brisk_client.py --submit ...   # one request per text through the dynamic batcher
    python3 examples/python/brisk_client.py --model DIR --classify --top-k 2 "I lost my card"   # a classifier
    python3 examples/python/brisk_client.py --head head.safetensors --classify "I lost my card"  # brisk fit-intents
    python3 examples/python/brisk_client.py --model CROSS_ENCODER_DIR --rerank "reset my PIN" "passage" "passage"

As a module: Brisk(lib, model_dir).embed / classify / rerank; Brisk(lib, model_dir, backend=HostBackend(fn, dim))
runs a Python function as the model (brisk tokenizes, caches and batches around it; see HostBackend).
"""
import argparse
import concurrent.futures
import ctypes
import itertools
import os
import sys
import threading


class RuntimeOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("model_dir", ctypes.c_char_p), ("num_threads", ctypes.c_int32),
                ("max_seq_len", ctypes.c_int32), ("pooling", ctypes.c_int32), ("normalize", ctypes.c_int32),
                ("device", ctypes.c_int32), ("max_batch_size", ctypes.c_int32),
                ("reserved0", ctypes.c_int32), ("batch_max_delay_us", ctypes.c_int32),
                ("batch_max_queue", ctypes.c_int32), ("batch_p99_target_ms", ctypes.c_int32),
                ("cache_result_bytes", ctypes.c_int64), ("cache_ttl_ms", ctypes.c_int32),
                ("cache_token_entries", ctypes.c_int32), ("redis_host", ctypes.c_char_p), ("redis_port", ctypes.c_int32),
                ("redis_timeout_ms", ctypes.c_int32), ("redis_user", ctypes.c_char_p),
                ("redis_password", ctypes.c_char_p), ("redis_signing_key", ctypes.c_char_p),
                ("redis_tls", ctypes.c_int32), ("replace_invalid_utf8", ctypes.c_int32),
                # the GPU (appended in 0.5)
                ("device_index", ctypes.c_int32), ("activation_dtype", ctypes.c_int32),
                ("remove_padding", ctypes.c_int32), ("device_memory_limit", ctypes.c_int64),
                # tasks and backends (appended in 0.6)
                ("classification_head", ctypes.c_char_p), ("torchscript_module", ctypes.c_char_p),
                ("torchscript_output", ctypes.c_int32),
                ("fallback_model", ctypes.c_char_p), ("fallback_threads", ctypes.c_int32),
                ("cache_stale_ttl_ms", ctypes.c_int32),
                # serving policy (appended in 0.7)
                ("policy_path", ctypes.c_char_p),
                # request tracing (appended in 0.7); this client uses the OTLP/JSON file, not a span callback
                ("span_fn", ctypes.c_void_p), ("span_user_data", ctypes.c_void_p),
                ("otlp_trace_path", ctypes.c_char_p), ("otlp_service_name", ctypes.c_char_p),
                ("redis_allow_unsigned", ctypes.c_int32),
                # the semantic answer cache (appended in 0.9)
                ("answer_cache", ctypes.c_int32), ("semantic_verifier", ctypes.c_char_p),
                ("answer_cache_entries", ctypes.c_int32)]


class AnswerCacheResult(ctypes.Structure):
    _fields_ = [("hit", ctypes.c_int32), ("reason", ctypes.c_int32), ("similarity", ctypes.c_float),
                ("verified", ctypes.c_int32), ("verifier_score", ctypes.c_float), ("answer_size", ctypes.c_size_t)]


# brisk_lookup_reason, in order
LOOKUP_REASONS = ["hit", "no_candidate", "below_threshold", "rejected_by_guard", "expired", "invalid",
                  "rejected_by_verifier"]


class RequestOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("priority", ctypes.c_int32), ("deadline_ms", ctypes.c_int64),
                ("cache_tags", ctypes.POINTER(ctypes.c_char_p)), ("num_cache_tags", ctypes.c_size_t),
                ("top_k", ctypes.c_int32),
                # appended in 0.7: the padding after top_k, tracing, stale answers
                ("reserved1", ctypes.c_int32),
                ("trace_parent", ctypes.c_char_p), ("traceparent_out", ctypes.c_void_p),
                ("traceparent_out_len", ctypes.c_size_t), ("allow_stale", ctypes.c_int32)]


class LabelScore(ctypes.Structure):
    _fields_ = [("label_id", ctypes.c_int64), ("score", ctypes.c_float), ("label", ctypes.c_char_p)]


class RerankResult(ctypes.Structure):
    _fields_ = [("index", ctypes.c_size_t), ("score", ctypes.c_float)]


class Batch(ctypes.Structure):
    _fields_ = [("num_sequences", ctypes.c_size_t), ("total_tokens", ctypes.c_size_t),
                ("input_ids", ctypes.POINTER(ctypes.c_int32)), ("token_type_ids", ctypes.POINTER(ctypes.c_int32)),
                ("offsets", ctypes.POINTER(ctypes.c_int64))]


# brisk_status (*)(void* user_data, const brisk_batch* batch, float* out, size_t out_len, char* error,
#                  size_t error_len); error is a buffer to write into, so a void pointer rather than c_char_p.
BACKEND_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(Batch), ctypes.POINTER(ctypes.c_float),
                              ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)


class BackendStruct(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("run", BACKEND_FN), ("user_data", ctypes.c_void_p),
                ("output", ctypes.c_int32), ("output_dim", ctypes.c_size_t),
                ("labels", ctypes.POINTER(ctypes.c_char_p)), ("multi_label", ctypes.c_int32),
                ("bytes_per_token", ctypes.c_size_t), ("name", ctypes.c_char_p)]


# brisk_torchscript_output and brisk_backend_output values.
TORCHSCRIPT_OUTPUTS = {"auto": 0, "hidden": 1, "pooled": 2, "logits": 3}
BACKEND_OUTPUTS = {"embedding": 0, "logits": 1}


# brisk_device and brisk_dtype values.
DEVICES = {"cpu": 0, "cuda": 1}
DTYPES = {"default": 0, "f32": 1, "f16": 2, "bf16": 3}

# brisk_status values (BRISK_OVERLOADED is BRISK_RESOURCE_EXHAUSTED).
STATUS_NAMES = {0: "BRISK_OK", 1: "BRISK_INVALID_ARGUMENT", 2: "BRISK_NOT_FOUND", 3: "BRISK_OUT_OF_RANGE",
                4: "BRISK_RESOURCE_EXHAUSTED", 5: "BRISK_UNIMPLEMENTED", 6: "BRISK_FAILED_PRECONDITION",
                7: "BRISK_DATA_LOSS", 8: "BRISK_INTERNAL", 9: "BRISK_DEADLINE_EXCEEDED", 10: "BRISK_CANCELLED",
                11: "BRISK_SHUTDOWN", 12: "BRISK_PERMISSION_DENIED", 13: "BRISK_OUT_OF_MEMORY"}
BRISK_INTERNAL = 8
BRISK_OUT_OF_MEMORY = 13


# void (*)(void* user_data, uint64_t request_id, brisk_status status, const float* embedding, size_t dim,
#          const char* error)
EMBED_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int, ctypes.POINTER(ctypes.c_float),
                                  ctypes.c_size_t, ctypes.c_char_p)


class BriskError(RuntimeError):
    """A failed call: status is the brisk_status (BRISK_OUT_OF_MEMORY: device memory ran out; retry smaller)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.status_name = STATUS_NAMES.get(status, f"brisk_status {status}")


class HostBackend:
    """A Python function as the model (brisk_runtime_create_with_backend): brisk tokenizes, caches and batches, and
    calls fn(sequences) with one (input_ids, token_type_ids) pair of int lists per sequence, [CLS] and [SEP]
    included. fn returns one row of output_dim floats per sequence: an embedding (output "embedding") or one logit per
    label (output "logits", labels: their names, None for LABEL_0, LABEL_1, ...). A row that is shorter, or None,
    leaves values unset, which brisk reports as BRISK_INTERNAL. To fail the batch, raise BriskError(status, message)
    (the caller gets that status and message) or any other exception (BRISK_INTERNAL with its text).

    fn runs on a brisk thread (the batcher's, or the caller's inside embed/classify/rerank), possibly on several at
    once; ctypes takes the GIL around it. Pure Python: no numpy needed."""

    def __init__(self, fn, output_dim: int, output: str = "embedding", labels=None, multi_label: bool = False,
                 name: str = "python"):
        if output not in BACKEND_OUTPUTS:
            raise BriskError(1, f"output is {output!r}; expected one of {sorted(BACKEND_OUTPUTS)}")
        self.fn, self.output_dim, self.output, self.labels = fn, output_dim, output, labels
        self.multi_label, self.name = multi_label, name

    def _run(self, user_data, batch_ptr, out, out_len, error, error_len):
        """The brisk_backend_fn: never lets an exception through (ctypes would return 0, BRISK_OK)."""
        try:
            batch = batch_ptr.contents
            offsets = [batch.offsets[i] for i in range(batch.num_sequences + 1)]
            sequences = [(batch.input_ids[offsets[i]:offsets[i + 1]], batch.token_type_ids[offsets[i]:offsets[i + 1]])
                         for i in range(batch.num_sequences)]
            rows = self.fn(sequences)
            if rows is None or len(rows) != batch.num_sequences:
                raise BriskError(BRISK_INTERNAL, f"the backend returned {0 if rows is None else len(rows)} rows; "
                                                 f"expected {batch.num_sequences}")
            dim = self.output_dim
            for i, row in enumerate(rows):
                for j, value in enumerate((row or [])[:dim]):
                    out[i * dim + j] = value
            return 0
        except BriskError as e:
            status, message = e.status, str(e)
        except Exception as e:  # noqa: BLE001 (every error must become a status)
            status, message = BRISK_INTERNAL, f"{type(e).__name__}: {e}"
        if error and error_len > 0:
            encoded = message.encode(errors="replace")[:error_len - 1] + b"\0"
            ctypes.memmove(error, encoded, len(encoded))
        return status if status != 0 else BRISK_INTERNAL


class Brisk:
    """Owns one brisk_runtime; safe to share between Python threads (the C API is thread-safe).

    classification_head: a head file from `brisk fit-intents` (classify over model_dir's embeddings);
    torchscript_module: run a TorchScript file instead of brisk's encoder, torchscript_output naming its output
    (auto, hidden, pooled, logits); backend: a HostBackend, the host's own model (model_dir gives the tokenizer);
    fallback_model: a lighter model (a quantized file, a pruned directory) that answers submits the queue refuses for
    overload; cache_stale_ttl_ms: how long past the result TTL a result is kept for stale-if-error;
    policy_path: a serving policy file written by `brisk tune` (its batching and thread values override the rest);
    answer_cache: keep a semantic answer cache (answer_insert / answer_lookup), and semantic_verifier: a verifier file
    from `brisk fit-verifier` for this model that decides which stored answer is served (implies answer_cache);
    answer_cache_entries: answers kept per tenant (0: 10000)."""

    def __init__(self, lib_path: str, model_dir: str, num_threads: int = 0, device: str = "cpu",
                 activation_dtype: str = "default", device_memory_limit: int = 0, classification_head: str = None,
                 torchscript_module: str = None, torchscript_output: str = "auto", backend: HostBackend = None,
                 max_seq_len: int = 0, cache_result_bytes: int = None, fallback_model: str = None,
                 cache_stale_ttl_ms: int = 0, policy_path: str = None, otlp_trace_path: str = None,
                 otlp_service_name: str = None, answer_cache: bool = False, semantic_verifier: str = None,
                 answer_cache_entries: int = 0):
        self._lib = ctypes.CDLL(lib_path)
        lib = self._lib
        lib.brisk_last_error.restype = ctypes.c_char_p
        lib.brisk_version_string.restype = ctypes.c_char_p
        lib.brisk_runtime_options_init.argtypes = [ctypes.POINTER(RuntimeOptions), ctypes.c_size_t]
        lib.brisk_runtime_create.argtypes = [ctypes.POINTER(RuntimeOptions), ctypes.POINTER(ctypes.c_void_p)]
        lib.brisk_runtime_destroy.argtypes = [ctypes.c_void_p]
        lib.brisk_embedding_dim.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        lib.brisk_embed.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                    ctypes.POINTER(ctypes.c_float), ctypes.c_size_t]
        lib.brisk_submit_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int64,
                                           EMBED_CALLBACK, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]
        lib.brisk_request_options_init.argtypes = [ctypes.POINTER(RequestOptions), ctypes.c_size_t]
        lib.brisk_submit_embed_ex.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(RequestOptions),
                                              EMBED_CALLBACK, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]
        lib.brisk_cancel.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
        lib.brisk_stats_json.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                         ctypes.POINTER(ctypes.c_size_t)]
        lib.brisk_cache_stats_json.argtypes = lib.brisk_stats_json.argtypes
        lib.brisk_cache_invalidate_tag.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t)]
        lib.brisk_num_labels.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        lib.brisk_label_name.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.brisk_label_name.restype = ctypes.c_char_p
        lib.brisk_query_prompt.argtypes = [ctypes.c_void_p]
        lib.brisk_query_prompt.restype = ctypes.c_char_p
        lib.brisk_classify.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                       ctypes.c_int32, ctypes.POINTER(LabelScore), ctypes.c_size_t]
        lib.brisk_rerank.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                     ctypes.c_int32, ctypes.POINTER(RerankResult), ctypes.c_size_t]
        lib.brisk_answer_cache_insert.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                                  ctypes.c_int64]
        lib.brisk_answer_cache_lookup.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                                  ctypes.POINTER(AnswerCacheResult), ctypes.c_char_p, ctypes.c_size_t]
        lib.brisk_backend_init.argtypes = [ctypes.POINTER(BackendStruct), ctypes.c_size_t]
        lib.brisk_runtime_create_with_backend.argtypes = [ctypes.POINTER(RuntimeOptions), ctypes.POINTER(BackendStruct),
                                                          ctypes.POINTER(ctypes.c_void_p)]
        # Futures of submitted requests by slot (the callback's user_data); registered before the submit call,
        # since the callback may run on a batcher thread before brisk_submit_embed returns.
        self._pending = {}
        self._pending_lock = threading.Lock()
        self._slots = itertools.count(1)
        self._callback = EMBED_CALLBACK(self._on_done)  # kept alive as long as the runtime
        opts = RuntimeOptions()
        lib.brisk_runtime_options_init(ctypes.byref(opts), ctypes.sizeof(opts))
        self._model_dir = model_dir.encode()  # kept alive for the call
        opts.model_dir = self._model_dir
        opts.num_threads = num_threads
        # "cuda:1" -> device cuda, ordinal 1
        kind, _, index = device.partition(":")
        if kind not in DEVICES or (index and not index.isdigit()) or activation_dtype not in DTYPES:
            raise BriskError(1, f"device is {device!r}, activation_dtype {activation_dtype!r}; expected cpu, cuda or "
                                f"cuda:N, and one of {sorted(DTYPES)}")
        opts.device = DEVICES[kind]
        opts.device_index = int(index or 0)
        opts.activation_dtype = DTYPES[activation_dtype]
        opts.device_memory_limit = device_memory_limit
        opts.max_seq_len = max_seq_len
        if cache_result_bytes is not None:
            opts.cache_result_bytes = cache_result_bytes
        if torchscript_output not in TORCHSCRIPT_OUTPUTS:
            raise BriskError(1, f"torchscript_output is {torchscript_output!r}; expected one of "
                                f"{sorted(TORCHSCRIPT_OUTPUTS)}")
        # Strings kept alive for the call (brisk copies them).
        self._head = classification_head.encode() if classification_head else None
        self._torchscript = torchscript_module.encode() if torchscript_module else None
        opts.classification_head = self._head
        opts.torchscript_module = self._torchscript
        opts.torchscript_output = TORCHSCRIPT_OUTPUTS[torchscript_output]
        self._fallback = fallback_model.encode() if fallback_model else None
        opts.fallback_model = self._fallback
        opts.cache_stale_ttl_ms = cache_stale_ttl_ms
        self._policy = policy_path.encode() if policy_path else None
        opts.policy_path = self._policy
        # Traced submits (submit(trace_parent=...)) append their spans to this file as OTLP/JSON lines.
        self._otlp_path = otlp_trace_path.encode() if otlp_trace_path else None
        self._otlp_service = otlp_service_name.encode() if otlp_service_name else None
        opts.otlp_trace_path = self._otlp_path
        opts.otlp_service_name = self._otlp_service
        opts.answer_cache = 1 if answer_cache else 0
        self._verifier = semantic_verifier.encode() if semantic_verifier else None
        opts.semantic_verifier = self._verifier
        opts.answer_cache_entries = answer_cache_entries
        self._rt = ctypes.c_void_p()
        if backend is None:
            self._check(lib.brisk_runtime_create(ctypes.byref(opts), ctypes.byref(self._rt)))
        else:
            # The callback object must outlive the runtime: brisk calls it until brisk_runtime_destroy returns.
            self._host_backend = backend
            self._backend_fn = BACKEND_FN(backend._run)
            b = BackendStruct()
            lib.brisk_backend_init(ctypes.byref(b), ctypes.sizeof(b))
            b.run = self._backend_fn
            b.output = BACKEND_OUTPUTS[backend.output]
            b.output_dim = backend.output_dim
            b.multi_label = 1 if backend.multi_label else 0
            self._backend_name = backend.name.encode()
            b.name = self._backend_name
            if backend.labels is not None:
                self._backend_labels = (ctypes.c_char_p * len(backend.labels))(*[l.encode() for l in backend.labels])
                b.labels = self._backend_labels
            self._check(lib.brisk_runtime_create_with_backend(ctypes.byref(opts), ctypes.byref(b),
                                                              ctypes.byref(self._rt)))
        dim = ctypes.c_size_t()
        self._check(lib.brisk_embedding_dim(self._rt, ctypes.byref(dim)))
        self.dim = dim.value  # 0 for a classification model
        n = ctypes.c_size_t()
        self._check(lib.brisk_num_labels(self._rt, ctypes.byref(n)))
        self.labels = [lib.brisk_label_name(self._rt, i).decode(errors="replace") for i in range(n.value)]
        # The model's query prompt ("" when none): embed(query_prompt + text) embeds a query as sentence-transformers'
        # encode(prompt_name="query").
        self.query_prompt = lib.brisk_query_prompt(self._rt).decode(errors="replace")

    def _check(self, status: int) -> None:
        if status != 0:
            raise BriskError(status, self._lib.brisk_last_error().decode(errors="replace"))

    def embed(self, texts):
        """Returns one list of `dim` floats per text."""
        encoded = (ctypes.c_char_p * len(texts))(*[t.encode() for t in texts])
        out = (ctypes.c_float * (len(texts) * self.dim))()
        self._check(self._lib.brisk_embed(self._rt, encoded, len(texts), out, len(out)))
        return [list(out[i * self.dim:(i + 1) * self.dim]) for i in range(len(texts))]

    def classify(self, texts, top_k: int = 1):
        """Returns, per text, its top_k (label, score) pairs, best first (score: softmax, or sigmoid per label for
        multi-label and one-label models)."""
        encoded = (ctypes.c_char_p * len(texts))(*[t.encode() for t in texts])
        out = (LabelScore * (len(texts) * max(top_k, 1)))()
        self._check(self._lib.brisk_classify(self._rt, encoded, len(texts), top_k, out, len(out)))
        return [[(out[i * top_k + j].label.decode(errors="replace"), out[i * top_k + j].score) for j in range(top_k)]
                for i in range(len(texts))]

    def answer_insert(self, question: str, answer: str, tenant: str = None, ttl_ms: int = 0) -> None:
        """Stores answer for question in tenant (None: "default"); ttl_ms 0: one hour."""
        self._check(self._lib.brisk_answer_cache_insert(self._rt, tenant.encode() if tenant else None,
                                                        question.encode(), answer.encode(), ttl_ms))

    def answer_lookup(self, question: str, tenant: str = None) -> dict:
        """The stored answer for question, or why there is none: {"hit", "answer" (None on a miss), "reason",
        "similarity", "verified", "verifier_score" (None unless verified)}."""
        result = AnswerCacheResult()
        buf = ctypes.create_string_buffer(1024)
        t = tenant.encode() if tenant else None
        status = self._lib.brisk_answer_cache_lookup(self._rt, t, question.encode(), ctypes.byref(result), buf,
                                                     len(buf))
        # BRISK_OUT_OF_RANGE: a longer answer; it may be replaced by a longer one still before the next call.
        for _ in range(8):
            if status != 3 or result.answer_size <= len(buf):
                break
            buf = ctypes.create_string_buffer(result.answer_size)
            status = self._lib.brisk_answer_cache_lookup(self._rt, t, question.encode(), ctypes.byref(result), buf,
                                                         len(buf))
        self._check(status)
        return {"hit": bool(result.hit), "answer": buf.value.decode() if result.hit else None,
                "reason": LOOKUP_REASONS[result.reason], "similarity": result.similarity,
                "verified": bool(result.verified), "verifier_score": result.verifier_score if result.verified else None}

    def rerank(self, query: str, passages, raw_scores: bool = False):
        """Scores each passage against query with a cross-encoder; returns (index, score) pairs, best first."""
        encoded = (ctypes.c_char_p * max(len(passages), 1))(*[p.encode() for p in passages])
        out = (RerankResult * max(len(passages), 1))()
        self._check(self._lib.brisk_rerank(self._rt, query.encode(), encoded, len(passages), 1 if raw_scores else 0,
                                           out, len(out)))
        return [(out[i].index, out[i].score) for i in range(len(passages))]

    def submit(self, text: str, priority: int = 0, deadline_ms: int = 0,
               trace_parent: str = None) -> concurrent.futures.Future:
        """Queues one text for the batcher; the future resolves to its embedding or raises BriskError. trace_parent:
        a W3C traceparent; then future.traceparent is the one to propagate (naming brisk's request span when traced)."""
        slot = next(self._slots)
        future = concurrent.futures.Future()
        with self._pending_lock:
            self._pending[slot] = future
        ro = RequestOptions()
        self._lib.brisk_request_options_init(ctypes.byref(ro), ctypes.sizeof(ro))
        ro.priority = priority
        ro.deadline_ms = deadline_ms
        out = ctypes.create_string_buffer(64)
        if trace_parent:
            ro.trace_parent = trace_parent.encode()
            ro.traceparent_out = ctypes.addressof(out)
            ro.traceparent_out_len = len(out)
        status = self._lib.brisk_submit_embed_ex(self._rt, text.encode(), ctypes.byref(ro), self._callback, slot, None)
        future.traceparent = out.value.decode()
        if status != 0:
            with self._pending_lock:
                del self._pending[slot]
            self._check(status)
        return future

    def _on_done(self, user_data, request_id, status, embedding, dim, error):
        with self._pending_lock:
            future = self._pending.pop(user_data)
        if status == 0:
            future.set_result(embedding[:dim])
        else:
            future.set_exception(BriskError(status, f"request {request_id}: {error.decode(errors='replace')}"))

    def _json(self, function) -> str:
        # The text can grow between asking its size and writing it (counters gain digits while the runtime is busy):
        # a buffer with room to spare, and again with the new size when it was still too small.
        needed = ctypes.c_size_t()
        function(self._rt, None, 0, ctypes.byref(needed))
        for _ in range(8):
            buf = ctypes.create_string_buffer(needed.value + 256)
            status = function(self._rt, buf, len(buf), ctypes.byref(needed))
            if status != 3:  # not BRISK_OUT_OF_RANGE
                self._check(status)
                return buf.value.decode()
        self._check(status)

    def stats_json(self) -> str:
        return self._json(self._lib.brisk_stats_json)

    def cache_stats_json(self) -> str:
        return self._json(self._lib.brisk_cache_stats_json)

    def cache_invalidate_tag(self, tag: str) -> int:
        """Drops the cached results carrying tag; returns how many this process held."""
        removed = ctypes.c_size_t()
        self._check(self._lib.brisk_cache_invalidate_tag(self._rt, tag.encode(), ctypes.byref(removed)))
        return removed.value

    def close(self) -> None:
        if self._rt:
            self._lib.brisk_runtime_destroy(self._rt)
            self._rt = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main() -> int:
    default_model = os.environ.get("BRISK_MODEL_DIR") or os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", default="build/release/lib/libbrisk.so")
    p.add_argument("--model", default=default_model)
    p.add_argument("--submit", action="store_true", help="submit each text through the dynamic batcher")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--dtype", default="default", choices=sorted(DTYPES), help="activation dtype (cuda)")
    p.add_argument("--device-memory-limit", type=int, default=0, help="bytes brisk may hold on the GPU (0: no cap)")
    p.add_argument("--cache-stats", action="store_true", help="print the caches' statistics (JSON) at the end")
    p.add_argument("--head", help="a classification head file written by brisk fit-intents")
    p.add_argument("--torchscript", help="run this TorchScript module instead of brisk's encoder")
    p.add_argument("--classify", action="store_true", help="print each text's top labels instead of a ranking")
    p.add_argument("--top-k", type=int, default=1, help="--classify: labels per text")
    p.add_argument("--rerank", metavar="QUERY", help="rank the texts against QUERY with a cross-encoder")
    p.add_argument("--policy", help="a serving policy file written by brisk tune (batching and threads)")
    p.add_argument("texts", nargs="+")
    args = p.parse_args()
    try:
        with Brisk(args.lib, args.model, device=args.device, activation_dtype=args.dtype,
                   device_memory_limit=args.device_memory_limit, classification_head=args.head,
                   torchscript_module=args.torchscript, policy_path=args.policy) as brisk:
            if args.classify:
                for text, labels in zip(args.texts, brisk.classify(args.texts, args.top_k)):
                    print("  ".join(f"{label} {score:.4f}" for label, score in labels) + f"  {text}")
                return 0
            if args.rerank is not None:
                for index, score in brisk.rerank(args.rerank, args.texts):
                    print(f"{score:.4f}  {args.texts[index]}")
                return 0
            if args.submit:
                futures = [brisk.submit(t) for t in args.texts]
                vectors = [f.result(timeout=60) for f in futures]
            else:
                vectors = brisk.embed(args.texts)
            cache_stats = brisk.cache_stats_json() if args.cache_stats else None
    except BriskError as e:
        print(f"brisk_client: {e.status_name}: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"brisk_client: {e}", file=sys.stderr)
        return 1
    for text, v in zip(args.texts, vectors):
        print(f"{sum(a * b for a, b in zip(vectors[0], v)):.4f}  {text}")
    if cache_stats:
        print(cache_stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
