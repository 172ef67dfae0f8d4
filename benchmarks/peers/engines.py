"""Peer engines for benchmarks/peers/run_peers.py: ONNX Runtime (fp32, dynamic int8), PyTorch (eager and
jit.trace) and the `brisk bench` / `brisk embed` commands, each timed on the same synthetic inputs with the same
thread count; engines_quant.py has CTranslate2, PyTorch dynamic int8 and OpenVINO (through ov_worker.py).

Every engine has prepare(batch, seq) (set up the inputs, warm up) and samples(n) (n timed calls, seconds each),
so that run_peers.py can interleave the engines in rounds: on a shared machine, load that comes and goes then
hits every engine alike. summarize() turns pooled samples into {"seq_per_s", "p50_ms", "p90_ms", "p99_ms"}.
Timings cover one whole call: the forward pass plus mean pooling and L2 normalisation, because brisk's
embed() includes both.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np


# ---------------------------------------------------------------------------------------------------------------
# Inputs and statistics

# Words tried, in order, for the synthetic texts: the first that is one token of the model's vocabulary (WordPiece's
# "hello"; a small SentencePiece or BPE vocabulary may have only the shorter ones).
SYNTHETIC_WORDS = ("hello", "the", "a", "1", ".")


def synthetic_word(tokenizer, seq: int) -> str:
    """The first of SYNTHETIC_WORDS that, repeated seq - 2 times as `brisk bench --word` repeats it, tokenizes to
    exactly seq tokens with the model's special tokens (two: [CLS]/[SEP], <s>/</s>)."""
    for word in SYNTHETIC_WORDS:
        if len(tokenizer(" ".join([word] * (seq - 2)))["input_ids"]) == seq:
            return word
    raise RuntimeError(f"none of {SYNTHETIC_WORDS} repeated {seq - 2} times tokenizes to exactly {seq} tokens: brisk "
                       "bench's synthetic text needs a tokenizer that adds two special tokens and keeps one word whole")


def synthetic_ids(tokenizer, batch: int, seq: int, word: str) -> dict[str, np.ndarray]:
    """[CLS] word x (seq-2) [SEP] (<s> ... </s> for XLM-R) for every row: synthetic_word's word, as brisk bench builds
    the same text."""
    enc = tokenizer(" ".join([word] * (seq - 2)))["input_ids"]
    ids = np.tile(np.asarray(enc, dtype=np.int64), (batch, 1))
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}


def feeds_of(enc) -> dict[str, np.ndarray]:
    """A tokenizer's padded output as the engines' feeds: token types all 0 where the model has none (XLM-R's
    tokenizer returns no token_type_ids; its one type embedding is type 0)."""
    ids = np.ascontiguousarray(enc["input_ids"], dtype=np.int64)
    types = enc["token_type_ids"] if "token_type_ids" in enc else np.zeros_like(ids)
    return {"input_ids": ids, "attention_mask": np.ascontiguousarray(enc["attention_mask"], dtype=np.int64),
            "token_type_ids": np.ascontiguousarray(types, dtype=np.int64)}


def summarize(times_s: list[float], batch: int) -> dict:
    ms = np.asarray(times_s) * 1e3
    p50 = float(np.percentile(ms, 50))
    return {
        "seq_per_s": batch / (p50 / 1e3),
        "p50_ms": p50,
        "p90_ms": float(np.percentile(ms, 90)),
        "p99_ms": float(np.percentile(ms, 99)),
        "iters": len(times_s),
    }


def batches(tokenizer, texts: list[str], batch: int = 32, max_length: int = 256) -> list[dict[str, np.ndarray]]:
    """Real sentences, tokenized in batches of `batch` in file order, padded to the longest of each batch."""
    out = []
    for i in range(0, len(texts), batch):
        enc = tokenizer(texts[i : i + batch], padding=True, truncation=True, max_length=max_length,
                        return_tensors="np")
        out.append(feeds_of(enc))
    return out


def max_tokens(config, cap: int = 256) -> int:
    """Tokens per text the model holds, at most `cap`: its positions, less RoBERTa's offset (pad_token_id + 1)."""
    offset = config.pad_token_id + 1 if config.model_type in ("roberta", "xlm-roberta") else 0
    return min(cap, config.max_position_embeddings - offset)


def cosine_stats(a: np.ndarray, ref: np.ndarray) -> dict:
    """Row-wise cosine of a against ref: mean and worst (minimum) over the rows."""
    if a.shape != ref.shape:
        raise ValueError(f"embeddings of shape {a.shape}, the reference has {ref.shape}")
    cos = np.sum(a * ref, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(ref, axis=1))
    return {"mean_cos": float(np.mean(cos)), "worst_cos": float(np.min(cos)), "n": int(len(cos))}


def time_calls(fn, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def mean_pool_normalize_np(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    m = mask[:, :, None].astype(hidden.dtype)
    pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


# ---------------------------------------------------------------------------------------------------------------
# Model loading and ONNX export

def load_hf(model_dir: str):
    import torch  # noqa: F401  (imported here so that --only brisk needs no torch)
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    try:
        model = AutoModel.from_pretrained(model_dir, attn_implementation="eager")
    except TypeError:
        model = AutoModel.from_pretrained(model_dir)
    model.eval()
    return tokenizer, model


def export_onnx(model, tokenizer, out_dir: Path, opset: int = 14) -> Path:
    """Exports the HF encoder to ONNX (dynamic batch and sequence axes), once per out_dir."""
    import torch

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"model_opset{opset}.onnx"
    if path.exists():
        return path
    feeds = synthetic_ids(tokenizer, 2, 16, synthetic_word(tokenizer, 16))
    sample = {k: torch.from_numpy(v) for k, v in feeds.items()}
    dyn = {0: "batch", 1: "seq"}
    with torch.no_grad():
        torch.onnx.export(
            model,
            (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
            str(path),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": dyn, "attention_mask": dyn, "token_type_ids": dyn,
                          "last_hidden_state": dyn},
            opset_version=opset,
            do_constant_folding=True,
        )
    return path


def optimize_onnx(raw: Path, num_heads: int, hidden_size: int) -> tuple[Path, dict]:
    """onnxruntime.transformers optimizer for BERT with its fusions; returns the path and the fused-op counts."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    out = raw.with_name(raw.stem + "_opt.onnx")
    opts = FusionOptions("bert")
    # Every exact fusion is on (they are the defaults). enable_gelu_approximation stays off: it changes the
    # numbers (tanh GeLU), while brisk's fp32 path computes the exact erf GeLU.
    opt_model = optimize_model(str(raw), model_type="bert", num_heads=num_heads, hidden_size=hidden_size,
                               optimization_options=opts, opt_level=1)
    stats = opt_model.get_fused_operator_statistics()
    opt_model.save_model_to_file(str(out))
    return out, {k: v for k, v in stats.items() if v}


def quantize_onnx_int8(opt_path: Path, per_channel: bool = True, weight_type: str = "qint8") -> Path:
    """ORT's own dynamic int8 quantization of the optimized model (int8 weights, activations quantized per call),
    applied after the transformer optimizer so that the fused Attention and SkipLayerNormalization stay.

    Per-channel weight scales by default: on MiniLM, per-tensor scales are ~20% faster but drop the cosine to
    the fp32 embedding to ~0.94 on short texts, which no deployment would accept; per-channel keeps ~0.98-0.996.
    weight_type: "qint8" (signed weights, ORT's u8 x s8 kernels) or "quint8" (unsigned weights). QInt8 is the
    default because it is the faster one here: on the 2-core Zen 5, 2 threads, one short interleaved run measured
    QInt8 1.46x QUInt8 at 32x128 and 2.3x at 1x16, at the same accuracy (held-out mean cosine 0.9930 both).
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    qtype = {"qint8": QuantType.QInt8, "quint8": QuantType.QUInt8}[weight_type]
    suffix = ("_int8pc" if per_channel else "_int8") + ("_u8" if weight_type == "quint8" else "")
    out = opt_path.with_name(opt_path.stem + suffix + ".onnx")
    if not out.exists():
        # Shape inference cannot type the outputs of ORT's contrib ops (Attention, SkipLayerNormalization), so
        # the default tensor type is given explicitly.
        quantize_dynamic(str(opt_path), str(out), weight_type=qtype, per_channel=per_channel,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return out


# ---------------------------------------------------------------------------------------------------------------
# Engines

class FeedsEngine:
    """prepare() keeps the feeds and warms up; samples() times embed() on them. Engines define embed(feeds)."""

    def prepare(self, feeds, warmup: int) -> None:
        self.feeds = feeds
        for _ in range(warmup):
            self.embed(feeds)

    def samples(self, n: int) -> list[float]:
        return time_calls(lambda: self.embed(self.feeds), n)


class OrtEngine(FeedsEngine):
    def __init__(self, onnx_path: Path, threads: int):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self.session = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
        self.input_names = {i.name for i in self.session.get_inputs()}

    def embed(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        hidden = self.session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in self.input_names})[0]
        return mean_pool_normalize_np(hidden, feeds["attention_mask"])


class TorchEngine:
    """PyTorch eager (or a torch.jit.trace of it) with torch.no_grad and pooling in torch."""

    def __init__(self, model, threads: int, jit: bool = False, sample_feeds=None):
        import torch

        torch.set_num_threads(threads)
        self.torch = torch
        self.model = model
        self.jit = jit
        if jit:
            args = self._args(sample_feeds)
            with torch.no_grad():
                traced = torch.jit.trace(model, args, strict=False, check_trace=False)
                traced = torch.jit.freeze(traced.eval())
            self.model = traced

    def _args(self, feeds):
        t = self.torch
        return (t.from_numpy(feeds["input_ids"]), t.from_numpy(feeds["attention_mask"]),
                t.from_numpy(feeds["token_type_ids"]))

    def embed_tensors(self, args):
        t = self.torch
        with t.no_grad():
            out = self.model(*args)
            hidden = out[0] if isinstance(out, (tuple, list)) else (
                out["last_hidden_state"] if isinstance(out, dict) else out.last_hidden_state)
            m = args[1].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return t.nn.functional.normalize(pooled, p=2, dim=1)

    def embed(self, feeds) -> np.ndarray:
        return self.embed_tensors(self._args(feeds)).numpy()

    def prepare(self, feeds, warmup: int) -> None:
        self.args = self._args(feeds)
        for _ in range(warmup):
            self.embed_tensors(self.args)

    def samples(self, n: int) -> list[float]:
        return time_calls(lambda: self.embed_tensors(self.args), n)


class BriskEngine:
    """Runs `brisk bench --json`; brisk builds the same synthetic text (`word` x (T-2): run_peers.py sets the word
    synthetic_word picks for the other engines) itself.

    model_dir is whatever `brisk --model` takes: a Hugging Face model directory, or a single weights file such as
    a quantized .safetensors (passed through as is; brisk says whether it accepts it)."""

    def __init__(self, binary: str, model_dir: str, threads: int):
        self.binary = binary
        self.model_dir = model_dir
        self.threads = threads
        self.word = "hello"
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            raise FileNotFoundError(f"brisk binary '{binary}' is not an executable file (build it, or pass --brisk)")
        if not os.path.exists(model_dir):
            raise FileNotFoundError(f"brisk model '{model_dir}' does not exist")

    def command(self, batch: int, seq: int, iters: int, warmup: int) -> list[str]:
        return [self.binary, "bench", "--model", self.model_dir, "--batch", str(batch), "--seq", str(seq),
                "--iters", str(iters), "--warmup", str(warmup), "--threads", str(self.threads), "--word", self.word,
                "--json", "--samples"]

    def prepare(self, feeds, warmup: int) -> None:
        b, t = feeds["input_ids"].shape
        self.shape = (int(b), int(t))
        self.warmup = max(1, warmup)  # each samples() call is a fresh process, so it warms up every time
        self.passes_per_call: list[float] = []  # forward passes per timed call, one value per samples() call
        # Parallel regions whose second worker started late, one value per samples() call: two within 100 ms put
        # brisk's contention gate (brisk/core/internal/contention.h) on one thread for 250 ms or more of that round.
        self.late_regions: list[int] = []

    def samples(self, n: int) -> list[float]:
        cmd = self.command(*self.shape, n, self.warmup)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("{")]
        if not lines:
            raise RuntimeError(f"{' '.join(cmd)} printed no JSON object; stdout was: {proc.stdout.strip()!r}")
        r = json.loads(lines[-1])
        if "samples_ms" not in r or "passes_per_call" not in r:
            raise RuntimeError(f"{' '.join(cmd)}: the JSON has no samples_ms or passes_per_call; rebuild brisk")
        self.passes_per_call.append(float(r["passes_per_call"]))
        self.late_regions.append(int(r.get("late_parallel_regions", 0)))
        return [float(v) / 1e3 for v in r["samples_ms"]]

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        proc = subprocess.run([self.binary, "embed", "--model", self.model_dir, "--threads", str(self.threads),
                               "--pooling", "mean"],
                              input="\n".join(texts) + "\n", capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"brisk embed exited {proc.returncode}: {proc.stderr.strip()}")
        return np.asarray([json.loads(ln)["embedding"] for ln in proc.stdout.splitlines() if ln.strip()],
                          dtype=np.float32)
