#!/usr/bin/env python3
"""A ctypes client of libbrisk's C API: embeds texts and ranks them by similarity to the first.

    python3 examples/python/brisk_client.py --lib build/release/lib/libbrisk.so "reset my PIN" "forgot my PIN" "opening hours"
"""
import argparse
import ctypes
import os
import sys


class RuntimeOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("model_dir", ctypes.c_char_p), ("num_threads", ctypes.c_int32),
                ("max_seq_len", ctypes.c_int32), ("pooling", ctypes.c_int32), ("normalize", ctypes.c_int32),
                ("device", ctypes.c_int32), ("max_batch_size", ctypes.c_int32)]


class BriskError(RuntimeError):
    pass


class Brisk:
    """Owns one brisk_runtime; safe to share between Python threads (the C API is thread-safe)."""

    def __init__(self, lib_path: str, model_dir: str, num_threads: int = 0):
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
        opts = RuntimeOptions()
        lib.brisk_runtime_options_init(ctypes.byref(opts), ctypes.sizeof(opts))
        self._model_dir = model_dir.encode()  # kept alive for the call
        opts.model_dir = self._model_dir
        opts.num_threads = num_threads
        self._rt = ctypes.c_void_p()
        self._check(lib.brisk_runtime_create(ctypes.byref(opts), ctypes.byref(self._rt)))
        dim = ctypes.c_size_t()
        self._check(lib.brisk_embedding_dim(self._rt, ctypes.byref(dim)))
        self.dim = dim.value

    def _check(self, status: int) -> None:
        if status != 0:
            raise BriskError(self._lib.brisk_last_error().decode(errors="replace"))

    def embed(self, texts):
        """Returns one list of `dim` floats per text."""
        encoded = (ctypes.c_char_p * len(texts))(*[t.encode() for t in texts])
        out = (ctypes.c_float * (len(texts) * self.dim))()
        self._check(self._lib.brisk_embed(self._rt, encoded, len(texts), out, len(out)))
        return [list(out[i * self.dim:(i + 1) * self.dim]) for i in range(len(texts))]

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
    p.add_argument("texts", nargs="+")
    args = p.parse_args()
    try:
        with Brisk(args.lib, args.model) as brisk:
            vectors = brisk.embed(args.texts)
    except (OSError, BriskError) as e:
        print(f"brisk_client: {e}", file=sys.stderr)
        return 1
    for text, v in zip(args.texts, vectors):
        print(f"{sum(a * b for a, b in zip(vectors[0], v)):.4f}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
