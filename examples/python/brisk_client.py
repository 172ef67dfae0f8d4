#!/usr/bin/env python3
"""A ctypes client of libbrisk's C API: embeds texts and ranks them by similarity to the first.

    python3 examples/python/brisk_client.py --lib build/release/lib/libbrisk.so "reset my PIN" "forgot my PIN" "opening hours"
    python3 examples/python/brisk_client.py --submit ...   # one request per text through the dynamic batcher
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
                ("remove_padding", ctypes.c_int32), ("device_memory_limit", ctypes.c_int64)]


# brisk_device and brisk_dtype values.
DEVICES = {"cpu": 0, "cuda": 1}
DTYPES = {"default": 0, "f32": 1, "f16": 2, "bf16": 3}

# brisk_status values (BRISK_OVERLOADED is BRISK_RESOURCE_EXHAUSTED).
STATUS_NAMES = {0: "BRISK_OK", 1: "BRISK_INVALID_ARGUMENT", 2: "BRISK_NOT_FOUND", 3: "BRISK_OUT_OF_RANGE",
                4: "BRISK_RESOURCE_EXHAUSTED", 5: "BRISK_UNIMPLEMENTED", 6: "BRISK_FAILED_PRECONDITION",
                7: "BRISK_DATA_LOSS", 8: "BRISK_INTERNAL", 9: "BRISK_DEADLINE_EXCEEDED", 10: "BRISK_CANCELLED",
                11: "BRISK_SHUTDOWN", 12: "BRISK_PERMISSION_DENIED", 13: "BRISK_OUT_OF_MEMORY"}
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


class Brisk:
    """Owns one brisk_runtime; safe to share between Python threads (the C API is thread-safe)."""

    def __init__(self, lib_path: str, model_dir: str, num_threads: int = 0, device: str = "cpu",
                 activation_dtype: str = "default", device_memory_limit: int = 0):
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
        lib.brisk_cancel.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
        lib.brisk_stats_json.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                         ctypes.POINTER(ctypes.c_size_t)]
        lib.brisk_cache_stats_json.argtypes = lib.brisk_stats_json.argtypes
        lib.brisk_cache_invalidate_tag.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t)]
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
        self._rt = ctypes.c_void_p()
        self._check(lib.brisk_runtime_create(ctypes.byref(opts), ctypes.byref(self._rt)))
        dim = ctypes.c_size_t()
        self._check(lib.brisk_embedding_dim(self._rt, ctypes.byref(dim)))
        self.dim = dim.value

    def _check(self, status: int) -> None:
        if status != 0:
            raise BriskError(status, self._lib.brisk_last_error().decode(errors="replace"))

    def embed(self, texts):
        """Returns one list of `dim` floats per text."""
        encoded = (ctypes.c_char_p * len(texts))(*[t.encode() for t in texts])
        out = (ctypes.c_float * (len(texts) * self.dim))()
        self._check(self._lib.brisk_embed(self._rt, encoded, len(texts), out, len(out)))
        return [list(out[i * self.dim:(i + 1) * self.dim]) for i in range(len(texts))]

    def submit(self, text: str, priority: int = 0, deadline_ms: int = 0) -> concurrent.futures.Future:
        """Queues one text for the batcher; the future resolves to its embedding or raises BriskError."""
        slot = next(self._slots)
        future = concurrent.futures.Future()
        with self._pending_lock:
            self._pending[slot] = future
        status = self._lib.brisk_submit_embed(self._rt, text.encode(), priority, deadline_ms, self._callback, slot, None)
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
        needed = ctypes.c_size_t()
        function(self._rt, None, 0, ctypes.byref(needed))
        buf = ctypes.create_string_buffer(needed.value)
        self._check(function(self._rt, buf, needed.value, None))
        return buf.value.decode()

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
    p.add_argument("texts", nargs="+")
    args = p.parse_args()
    try:
        with Brisk(args.lib, args.model, device=args.device, activation_dtype=args.dtype,
                   device_memory_limit=args.device_memory_limit) as brisk:
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
