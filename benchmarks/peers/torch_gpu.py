#!/usr/bin/env python3
"""brisk on the GPU against PyTorch on the same GPU: all-MiniLM-L6-v2, fp16, one run, engines interleaved.

Engines (each marked in the output as ran or skipped, with the reason):
  torch_eager  PyTorch, fp16 weights and activations, attention as matmul + softmax + matmul
  torch_sdpa   the same with torch.nn.functional.scaled_dot_product_attention (flash / memory-efficient kernels)
  brisk        `brisk bench --json --samples --device cuda:0 --dtype f16`, a fresh process per round
PyTorch is Hugging Face transformers' BertModel (attn_implementation "eager" and "sdpa") when transformers
imports, else a BERT forward written here in torch.nn.functional ops over the model directory's
model.safetensors (or pytorch_model.bin); "torch_impl" in the output says which ran.

Speed: for each shape (B, T) every engine embeds B copies of "[CLS] hello x (T-2) [SEP]" (brisk builds the same
text itself), mean pooling and L2 normalisation included, in R interleaved rounds (torch eager, torch sdpa,
brisk, repeat), so that a slow minute lands on every engine alike; medians pool every round's samples. A torch
call is timed from token ids in host memory to embeddings in host memory (torch.cuda.synchronize inside), as a
brisk embed() call returns host floats. Ratios are brisk's speed-up (torch median / brisk median) from the same
run. The mixed-length batch (lengths spread evenly from 8 to T, as `brisk bench --mixed`) runs brisk with and
without padding removal; torch pads to the longest (the attention mask hides the padding).
Accuracy: the first --accuracy-texts sentences of benchmarks/data/heldout_sentences.txt, mean-pooled and
L2-normalised, by each engine against an fp32 reference (the same weights, fp32, TF32 off): mean and worst cosine.

  python3 benchmarks/peers/torch_gpu.py --model DIR --brisk build/release/lib/brisk --out encoder_vs_torch.json
  python3 benchmarks/peers/torch_gpu.py --device cpu --dtype float32 --brisk-device cpu ...   # harness check, no GPU
Needs torch; transformers, safetensors and numpy are used when present. Prints a summary table on stderr and the
JSON on stdout (and to --out).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import struct
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

# Local paths only: never ask the Hub (the GPU machine has no network; a lookup would only time out).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[2]


def log(msg: str) -> None:
    print(f"[torch_gpu {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def default_model_dir() -> str:
    return os.environ.get("BRISK_MODEL_DIR") or str(Path.home() / ".cache/brisk/models/all-MiniLM-L6-v2")


def parse_shape(text: str) -> tuple[int, int]:
    b, sep, t = text.strip().partition("x")
    if not sep or not b.isdigit() or not t.isdigit() or int(b) < 1 or int(t) < 2:
        raise argparse.ArgumentTypeError(f"'{text}' is not BxT; expected e.g. 32x128")
    return int(b), int(t)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=default_model_dir(), help="Hugging Face model directory (all-MiniLM-L6-v2)")
    p.add_argument("--brisk", default=str(REPO / "build/release/lib/brisk"), help="the built brisk binary")
    p.add_argument("--shapes", default="32x128,1x16", help="comma-separated BxT shapes (default 32x128,1x16)")
    p.add_argument("--mixed", default="32x128", help="BxT of the mixed-length batch ('' for none; default 32x128)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds per shape (default 5)")
    p.add_argument("--iters", type=int, default=40, help="timed calls per engine per round (default 40)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls before each engine's first round")
    p.add_argument("--engines", default="torch_eager,torch_sdpa,brisk", help="comma-separated subset to run")
    p.add_argument("--device", default="cuda:0", help="torch device (default cuda:0; cpu for a harness check)")
    p.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"], help="torch dtype")
    p.add_argument("--brisk-device", default=None, help="brisk --device (default: --device)")
    p.add_argument("--brisk-dtype", default=None, help="brisk --dtype (default: f16/bf16/f32 as --dtype)")
    p.add_argument("--accuracy-texts", type=int, default=128, help="held-out sentences for the cosines (0: none)")
    p.add_argument("--heldout", default=str(REPO / "benchmarks/data/heldout_sentences.txt"))
    p.add_argument("--no-transformers", action="store_true", help="use the functional BERT even if transformers "
                   "imports (checks that path)")
    p.add_argument("--out", help="also write the JSON here")
    a = p.parse_args()
    try:
        a.shape_list = [parse_shape(s) for s in a.shapes.split(",") if s.strip()]
        a.mixed_shape = parse_shape(a.mixed) if a.mixed.strip() else None
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    a.engine_list = [e.strip() for e in a.engines.split(",") if e.strip()]
    unknown = [e for e in a.engine_list if e not in ("torch_eager", "torch_sdpa", "brisk")]
    if unknown:
        p.error(f"--engines: {unknown} are not engines; expected some of torch_eager, torch_sdpa, brisk")
    if a.rounds < 1 or a.iters < 1:
        p.error(f"--rounds {a.rounds} / --iters {a.iters}; expected at least 1")
    a.brisk_device = a.brisk_device or a.device
    a.brisk_dtype = a.brisk_dtype or {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}[a.dtype]
    return a


# ---------------------------------------------------------------------------------------------------------------
# Tokenization: transformers' tokenizer when present, else BERT's uncased WordPiece written out here (vocab.txt).

class WordPiece:
    """BERT's BasicTokenizer (lower case, accents stripped, punctuation split) + greedy longest-match WordPiece."""

    def __init__(self, vocab_path: Path):
        self.vocab = {}
        with open(vocab_path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                self.vocab[line.rstrip("\n")] = i
        self.cls, self.sep, self.unk = self.vocab["[CLS]"], self.vocab["[SEP]"], self.vocab["[UNK]"]

    @staticmethod
    def _is_punct(ch: str) -> bool:
        cp = ord(ch)
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
            return True
        return unicodedata.category(ch).startswith("P")

    @staticmethod
    def _is_cjk(cp: int) -> bool:
        return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
                or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
                or 0x2F800 <= cp <= 0x2FA1F)

    def _basic(self, text: str) -> list[str]:
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
                continue
            if ch in " \t\n\r" or unicodedata.category(ch) == "Zs":
                out.append(" ")
            elif self._is_cjk(cp):
                out.append(f" {ch} ")
            else:
                out.append(ch)
        words = []
        for w in "".join(out).lower().split():
            w = "".join(c for c in unicodedata.normalize("NFD", w) if unicodedata.category(c) != "Mn")
            cur = ""
            for ch in w:
                if self._is_punct(ch):
                    if cur:
                        words.append(cur)
                    words.append(ch)
                    cur = ""
                else:
                    cur += ch
            if cur:
                words.append(cur)
        return words

    def _wordpiece(self, word: str) -> list[int]:
        if len(word) > 100:
            return [self.unk]
        ids, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            ids.append(found)
            start = end
        return ids

    def encode(self, text: str, max_length: int) -> list[int]:
        ids = [i for w in self._basic(text) for i in self._wordpiece(w)]
        return [self.cls] + ids[: max_length - 2] + [self.sep]


def make_encoder(model_dir: Path, use_transformers: bool):
    """Returns (encode(text, max_length) -> ids, description)."""
    if use_transformers:
        try:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(str(model_dir))
            return (lambda text, n: tok(text, truncation=True, max_length=n)["input_ids"]), \
                f"transformers {type(tok).__name__}"
        except Exception as e:  # noqa: BLE001  (fall back to the WordPiece here)
            log(f"transformers tokenizer unavailable ({type(e).__name__}: {e}); using the WordPiece written here")
    wp = WordPiece(model_dir / "vocab.txt")
    return wp.encode, "WordPiece (benchmarks/peers/torch_gpu.py)"


# ---------------------------------------------------------------------------------------------------------------
# Models

def read_weights(model_dir: Path, torch) -> tuple[dict, str]:
    """Name -> fp32 CPU tensor from model.safetensors (through safetensors, else parsed here) or pytorch_model.bin."""
    st = model_dir / "model.safetensors"
    if st.is_file():
        try:
            from safetensors.torch import load_file

            return {k: v.float() for k, v in load_file(str(st)).items()}, "model.safetensors (safetensors)"
        except ImportError:
            pass
        dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64}
        raw = st.read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8 : 8 + n])
        out = {}
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            lo, hi = meta["data_offsets"]
            buf = bytearray(raw[8 + n + lo : 8 + n + hi])
            t = torch.frombuffer(buf, dtype=dtypes[meta["dtype"]]) if hi > lo else torch.empty(0)
            out[name] = t.reshape(meta["shape"]).float()
        return out, "model.safetensors (parsed here)"
    pt = model_dir / "pytorch_model.bin"
    if pt.is_file():
        try:
            sd = torch.load(str(pt), map_location="cpu", weights_only=True)
        except TypeError:
            sd = torch.load(str(pt), map_location="cpu")
        return {k: v.float() for k, v in sd.items()}, "pytorch_model.bin"
    raise FileNotFoundError(f"{model_dir} has neither model.safetensors nor pytorch_model.bin")


class FunctionalBert:
    """BERT encoder forward in torch.nn.functional ops (post-LN, erf GELU), eager or with SDPA attention."""

    def __init__(self, weights: dict, config: dict, device, dtype, sdpa: bool, torch):
        self.torch, self.F = torch, torch.nn.functional
        prefix = "bert." if any(k.startswith("bert.embeddings.") for k in weights) else ""
        w = {k[len(prefix):]: v.to(device=device, dtype=dtype) for k, v in weights.items() if k.startswith(prefix)}
        self.w, self.cfg, self.sdpa, self.dtype = w, config, sdpa, dtype
        self.heads = config["num_attention_heads"]
        self.eps = config.get("layer_norm_eps", 1e-12)
        self.layers = config["num_hidden_layers"]
        if sdpa and not hasattr(self.F, "scaled_dot_product_attention"):
            raise RuntimeError(f"torch {torch.__version__} has no scaled_dot_product_attention (torch >= 2.0)")

    def _ln(self, x, name):
        return self.F.layer_norm(x, (x.shape[-1],), self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def _lin(self, x, name):
        return self.F.linear(x, self.w[name + ".weight"], self.w[name + ".bias"])

    def __call__(self, ids, mask, types):
        t, F, w = self.torch, self.F, self.w
        b, n = ids.shape
        pos = t.arange(n, device=ids.device)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][pos][None] + \
            w["embeddings.token_type_embeddings.weight"][types]
        x = self._ln(x, "embeddings.LayerNorm")
        d = x.shape[-1] // self.heads
        # mask None: no padding (as transformers does for SDPA, so that the flash kernel may run).
        keep = mask[:, None, None, :].bool() if mask is not None else None  # B,1,1,T: keys a query may see
        additive = (~keep).to(x.dtype) * t.finfo(x.dtype).min if keep is not None else 0.0
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def split(y):
                return y.view(b, n, self.heads, d).transpose(1, 2)

            q = split(self._lin(x, p + "attention.self.query"))
            k = split(self._lin(x, p + "attention.self.key"))
            v = split(self._lin(x, p + "attention.self.value"))
            if self.sdpa:
                ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            else:
                scores = t.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + additive
                ctx = t.matmul(t.softmax(scores, dim=-1), v)
            ctx = ctx.transpose(1, 2).reshape(b, n, d * self.heads)
            x = self._ln(self._lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = F.gelu(self._lin(x, p + "intermediate.dense"))
            x = self._ln(self._lin(h, p + "output.dense") + x, p + "output.LayerNorm")
        return x


def hf_model(model_dir: Path, attn: str, device, dtype):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), attn_implementation=attn)
    model = model.to(device=device, dtype=dtype).eval()
    impl = getattr(model.config, "_attn_implementation", attn)
    if impl != attn:
        raise RuntimeError(f"transformers chose attention '{impl}', not '{attn}'")
    return lambda ids, mask, types: model(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state


class TorchEngine:
    """Times host ids -> device forward + mean pooling + L2 normalisation -> host embeddings."""

    def __init__(self, forward, device, torch):
        self.forward, self.device, self.torch = forward, device, torch
        self.functional = isinstance(forward, FunctionalBert)
        self.cuda = str(device).startswith("cuda")

    def embed(self, ids_cpu, mask_cpu):
        t = self.torch
        with t.inference_mode():
            ids = ids_cpu.to(self.device, non_blocking=True)
            mask = mask_cpu.to(self.device, non_blocking=True)
            # All-ones masks are left out for the functional BERT, as transformers leaves them out for SDPA.
            hidden = self.forward(ids, None if self.functional and bool(mask_cpu.all()) else mask, t.zeros_like(ids))
            m = mask.unsqueeze(-1).float()
            pooled = (hidden.float() * m).sum(1) / m.sum(1).clamp(min=1e-9)  # pooled in fp32, as brisk pools
            return t.nn.functional.normalize(pooled, p=2, dim=1).cpu()

    def samples(self, ids, mask, n: int) -> list[float]:
        out = []
        for _ in range(n):
            if self.cuda:
                self.torch.cuda.synchronize()
            t0 = time.perf_counter()
            self.embed(ids, mask)  # .cpu() synchronizes
            out.append((time.perf_counter() - t0) * 1e3)
        return out


class BriskBench:
    """One `brisk bench --json --samples` process per round; checks that it ran where it was asked to."""

    def __init__(self, binary: str, model_dir: str, device: str, dtype: str):
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            raise FileNotFoundError(f"brisk binary '{binary}' is not an executable file (build brisk_cli)")
        self.binary, self.model_dir, self.device, self.dtype = binary, model_dir, device, dtype
        self.passes: list[float] = []

    def samples(self, b: int, t: int, n: int, warmup: int, mixed=False, remove_padding=True) -> list[float]:
        cmd = [self.binary, "bench", "--model", self.model_dir, "--batch", str(b), "--seq", str(t), "--iters", str(n),
               "--warmup", str(max(1, warmup)), "--device", self.device, "--dtype", self.dtype, "--json", "--samples"]
        if mixed:
            cmd.append("--mixed")
        if not remove_padding:
            cmd.append("--no-remove-padding")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-600:]}")
        r = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
        want = self.device if ":" in self.device or self.device == "cpu" else self.device + ":0"
        if r.get("device") != want or r.get("dtype") != self.dtype:
            raise RuntimeError(f"brisk bench ran on {r.get('device')} {r.get('dtype')}, not {want} {self.dtype}")
        self.passes.append(float(r.get("passes_per_call", float("nan"))))
        return [float(v) for v in r["samples_ms"]]

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        proc = subprocess.run([self.binary, "embed", "--model", self.model_dir, "--device", self.device, "--dtype",
                               self.dtype, "--pooling", "mean"], input="\n".join(texts) + "\n", capture_output=True,
                              text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"brisk embed exited {proc.returncode}: {proc.stderr.strip()[-600:]}")
        return [json.loads(ln)["embedding"] for ln in proc.stdout.splitlines() if ln.strip()]


# ---------------------------------------------------------------------------------------------------------------
# Inputs and statistics

def mixed_lengths(b: int, t: int) -> list[int]:
    """The lengths of `brisk bench --mixed`: spread evenly from min(8, T) to T."""
    if b == 1:
        return [t]
    lo = min(8, t)
    return [lo + int(math.floor(i * (t - lo) / (b - 1) + 0.5)) for i in range(b)]


def synthetic_batch(torch, vocab: dict, lengths: list[int]):
    """[CLS] hello x (L-2) [SEP] per row, padded with [PAD] (id 0) to the longest; ids and mask on the host."""
    cls, sep, hello, pad = vocab["[CLS]"], vocab["[SEP]"], vocab["hello"], vocab.get("[PAD]", 0)
    n = max(lengths)
    ids = torch.full((len(lengths), n), pad, dtype=torch.long)
    mask = torch.zeros((len(lengths), n), dtype=torch.long)
    for r, length in enumerate(lengths):
        ids[r, :length] = torch.tensor([cls] + [hello] * (length - 2) + [sep])
        mask[r, :length] = 1
    pin = torch.cuda.is_available()
    return (ids.pin_memory(), mask.pin_memory()) if pin else (ids, mask)


def summarize(ms: list[float], batch: int, tokens: int) -> dict:
    s = sorted(ms)
    p50 = statistics.median(s)

    def pct(p):
        pos = p / 100 * (len(s) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    return {"p50_ms": p50, "p90_ms": pct(90), "p99_ms": pct(99), "min_ms": s[0], "iters": len(s),
            "seq_per_s": batch / (p50 / 1e3), "tokens_per_s": tokens / (p50 / 1e3)}


def cosines(a: list, ref: list) -> dict:
    cos = []
    for x, y in zip(a, ref):
        dot = sum(p * q for p, q in zip(x, y))
        cos.append(dot / (math.sqrt(sum(p * p for p in x)) * math.sqrt(sum(q * q for q in y)) or 1.0))
    return {"mean_cos": statistics.fmean(cos), "worst_cos": min(cos), "n": len(cos)}


# ---------------------------------------------------------------------------------------------------------------

def main() -> int:
    args = parse_args()
    t_start = time.perf_counter()
    res: dict = {"engines_requested": args.engine_list, "engines_ran": [], "engines_skipped": {}, "notes": [],
                 "shapes": {}, "mixed": None, "accuracy": {}, "model": args.model,
                 "settings": {"rounds": args.rounds, "iters_per_round": args.iters, "warmup": args.warmup,
                              "torch_device": args.device, "torch_dtype": args.dtype,
                              "brisk_device": args.brisk_device, "brisk_dtype": args.brisk_dtype}}
    versions = {"python": platform.python_version()}
    res["versions"] = versions

    def skip(name, why):
        res["engines_skipped"][name] = why
        log(f"{name} skipped: {why}")

    def emit(rc: int) -> int:
        res["wall_s"] = round(time.perf_counter() - t_start, 1)
        text = json.dumps(res, indent=2)
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n")
        return rc

    try:
        import torch
    except ImportError as e:
        for name in args.engine_list:
            if name != "brisk":
                skip(name, f"torch does not import: {e}")
        torch = None
    model_dir = Path(args.model)
    if not (model_dir / "config.json").is_file():
        res["error"] = f"--model '{model_dir}' has no config.json; expected a Hugging Face model directory"
        log(res["error"])
        return emit(2)
    config = json.loads((model_dir / "config.json").read_text())
    vocab = {}
    with open(model_dir / "vocab.txt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            vocab[line.rstrip("\n")] = i

    engines: dict = {}
    ref_forward = None
    if torch is not None:
        versions["torch"] = torch.__version__
        versions["torch_cuda"] = torch.version.cuda
        device = torch.device(args.device)
        dtype = getattr(torch, args.dtype)
        if device.type == "cuda":
            if not torch.cuda.is_available():
                for name in ("torch_eager", "torch_sdpa"):
                    if name in args.engine_list:
                        skip(name, "torch.cuda.is_available() is False")
                device = None
            else:
                res["gpu"] = torch.cuda.get_device_name(device)
                # The fp32 reference must be fp32: no TF32 in matmuls.
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
        use_hf = False
        if not args.no_transformers:
            try:
                import transformers

                versions["transformers"] = transformers.__version__
                use_hf = True
            except Exception as e:  # noqa: BLE001
                res["notes"].append(f"transformers does not import ({type(e).__name__}: {e}); functional BERT used")
        weights = None
        if device is not None:
            res["torch_impl"] = (f"transformers {versions['transformers']} AutoModel (BertModel)" if use_hf else
                                 "functional BERT in torch.nn.functional ops (benchmarks/peers/torch_gpu.py)")

            def make(attn: str, dt):
                """transformers' model, else (or when that fails) the functional BERT; says which in impl_by."""
                nonlocal weights
                if use_hf:
                    try:
                        fwd = hf_model(model_dir, attn, device, dt)
                        TorchEngine(fwd, device, torch).embed(*synthetic_batch(torch, vocab, [8, 6]))  # it runs
                        return fwd, res["torch_impl"]
                    except Exception as e:  # noqa: BLE001
                        res["notes"].append(f"transformers attn_implementation={attn} failed ({type(e).__name__}: "
                                            f"{e}); trying the functional BERT instead")
                if weights is None:
                    weights, src = read_weights(model_dir, torch)
                    res["functional_weights"] = src
                return (FunctionalBert(weights, config, device, dt, attn == "sdpa", torch),
                        "functional BERT in torch.nn.functional ops (benchmarks/peers/torch_gpu.py)")

            impl_by = res["torch_impl_by_engine"] = {}
            for name, attn in (("torch_eager", "eager"), ("torch_sdpa", "sdpa")):
                if name not in args.engine_list:
                    continue
                try:
                    fwd, impl_by[name] = make(attn, dtype)
                    engines[name] = TorchEngine(fwd, device, torch)
                except Exception as e:  # noqa: BLE001
                    skip(name, f"{type(e).__name__}: {e}")
            if args.accuracy_texts > 0:
                try:
                    ref_forward, impl_by["fp32_reference"] = make("eager", torch.float32)
                except Exception as e:  # noqa: BLE001
                    res["notes"].append(f"no fp32 reference: {type(e).__name__}: {e}")
    if "brisk" in args.engine_list:
        try:
            engines["brisk"] = BriskBench(args.brisk, args.model, args.brisk_device, args.brisk_dtype)
        except Exception as e:  # noqa: BLE001
            skip("brisk", f"{type(e).__name__}: {e}")
    if not engines:
        res["error"] = "no engine could be set up"
        return emit(1)

    failed: set = set()

    def run_shape(b: int, t: int, lengths: list[int], brisk_variants: list[tuple[str, dict]]) -> dict:
        """Interleaved rounds over every live engine; returns name -> summary."""
        tokens = sum(lengths)
        ids, mask = synthetic_batch(torch, vocab, lengths) if torch is not None else (None, None)
        names = [n for n in ("torch_eager", "torch_sdpa") if n in engines and n not in failed]
        runners = {}
        for n in names:
            try:
                for _ in range(args.warmup):
                    engines[n].embed(ids, mask)
                runners[n] = lambda k, n=n: engines[n].samples(ids, mask, k)
            except Exception as e:  # noqa: BLE001
                failed.add(n)
                res["notes"].append(f"{n} {b}x{t} failed: {type(e).__name__}: {e}")
        if "brisk" in engines:
            for label, kw in brisk_variants:
                runners[label] = lambda k, kw=kw: engines["brisk"].samples(b, t, k, args.warmup, **kw)
        samples = {n: [] for n in runners}
        for _ in range(args.rounds):
            for n, fn in list(runners.items()):
                try:
                    samples[n] += fn(args.iters)
                except Exception as e:  # noqa: BLE001
                    res["notes"].append(f"{n} {b}x{t} failed: {type(e).__name__}: {e}")
                    log(f"{n} {b}x{t} failed: {e}")
                    del runners[n]
                    samples.pop(n)
        out = {n: summarize(s, b, tokens) for n, s in samples.items() if s}
        for n, r in out.items():
            log(f"{n:22s} {b}x{t}{' mixed' if len(set(lengths)) > 1 else ''}: p50 {r['p50_ms']:8.3f} ms  "
                f"{r['seq_per_s']:10.1f} seq/s  ({r['iters']} calls)")
        return out

    def ratios(rows: dict, brisk_name: str) -> dict:
        if brisk_name not in rows:
            return {}
        return {f"{brisk_name}_speedup_vs_{n}": rows[n]["p50_ms"] / rows[brisk_name]["p50_ms"]
                for n in ("torch_eager", "torch_sdpa") if n in rows}

    for b, t in args.shape_list:
        rows = run_shape(b, t, [t] * b, [("brisk", {})])
        res["shapes"][f"{b}x{t}"] = {"batch": b, "seq": t, "results": rows, "ratios": ratios(rows, "brisk")}
    if args.mixed_shape:
        b, t = args.mixed_shape
        lengths = mixed_lengths(b, t)
        rows = run_shape(b, t, lengths, [("brisk", {"mixed": True}),
                                         ("brisk_padded", {"mixed": True, "remove_padding": False})])
        r = ratios(rows, "brisk")
        if "brisk" in rows and "brisk_padded" in rows:
            r["padding_removal_speedup"] = rows["brisk_padded"]["p50_ms"] / rows["brisk"]["p50_ms"]
        res["mixed"] = {"batch": b, "seq": t, "lengths": lengths, "real_tokens": sum(lengths),
                        "padded_tokens": b * max(lengths), "results": rows, "ratios": r}

    # Accuracy on real sentences against the fp32 reference of the same weights.
    if args.accuracy_texts > 0 and ref_forward is not None:
        texts = [ln for ln in Path(args.heldout).read_text(encoding="utf-8").splitlines() if ln.strip()]
        texts = texts[: args.accuracy_texts]
        encode, tok_desc = make_encoder(model_dir, "transformers" in versions and not args.no_transformers)
        res["tokenizer"] = tok_desc
        max_len = 256
        try:
            max_len = int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
        except (OSError, KeyError, ValueError):
            pass
        rows_ids = [encode(s, max_len) for s in texts]

        def embed_all(engine) -> list:
            out = []
            for i in range(0, len(rows_ids), 32):
                chunk = rows_ids[i : i + 32]
                n = max(len(r) for r in chunk)
                ids = torch.zeros((len(chunk), n), dtype=torch.long)
                mask = torch.zeros((len(chunk), n), dtype=torch.long)
                for j, r in enumerate(chunk):
                    ids[j, : len(r)] = torch.tensor(r)
                    mask[j, : len(r)] = 1
                out += engine.embed(ids, mask).tolist()
            return out

        ref = embed_all(TorchEngine(ref_forward, torch.device(args.device), torch))
        res["accuracy_reference"] = f"{res.get('torch_impl', 'torch')}, float32, TF32 off, on {args.device}"
        for n in ("torch_eager", "torch_sdpa", "brisk"):
            if n not in engines or n in failed:
                continue
            try:
                emb = engines[n].embed_texts(texts) if n == "brisk" else embed_all(engines[n])
                res["accuracy"][n] = cosines(emb, ref)
                a = res["accuracy"][n]
                log(f"{n:22s} cosine vs fp32: mean {a['mean_cos']:.6f} worst {a['worst_cos']:.6f} ({a['n']} texts)")
            except Exception as e:  # noqa: BLE001
                res["notes"].append(f"{n} accuracy failed: {type(e).__name__}: {e}")
                log(f"{n} accuracy failed: {e}")

    ran = set()
    for sh in list(res["shapes"].values()) + ([res["mixed"]] if res["mixed"] else []):
        ran |= {"brisk" if n.startswith("brisk") else n for n in sh["results"]}
    res["engines_ran"] = [n for n in args.engine_list if n in ran]
    for n in args.engine_list:
        if n not in ran and n not in res["engines_skipped"]:
            res["engines_skipped"][n] = "set up but every timed run failed (see notes)"
    if "brisk" in engines:
        res["brisk_passes_per_call"] = engines["brisk"].passes
    return emit(0 if res["engines_ran"] else 1)


if __name__ == "__main__":
    sys.exit(main())
