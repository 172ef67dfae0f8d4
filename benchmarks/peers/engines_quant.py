"""More peer engines for benchmarks/peers/run_peers.py, each at its best: CTranslate2 int8, PyTorch dynamic int8
and OpenVINO (fp32, bf16, NNCF int8) driven through ov_worker.py in a venv of its own.

Same interface as engines.py: prepare(feeds, warmup), samples(n) -> seconds per call, embed(feeds) -> L2-normalised
mean-pooled embeddings (float32, one row per input row). Pooling and normalisation are inside every timed call.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from engines import FeedsEngine, mean_pool_normalize_np

HERE = Path(__file__).resolve().parent


# ---------------------------------------------------------------------------------------------------------------
# PyTorch: torch.ao.quantization.quantize_dynamic (int8 weights, activations quantized per call) on every Linear

def quantize_torch_int8(model):
    """Per-channel weight scales (per_channel_dynamic_qconfig): on MiniLM with Debian's torch 1.13 and the onednn
    backend they keep the held-out cosine at ~0.977 mean where the default per-tensor qconfig gives ~0.948, at the
    same speed. The qnnpack backend is more accurate (~0.994) but 4x slower on x86, so it is not used."""
    import copy

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig

    # Debian's torch 1.13 has no fbgemm; 'onednn' (its default here) is the x86 int8 backend it does have.
    engines = torch.backends.quantized.supported_engines
    for name in ("fbgemm", "x86", "onednn"):
        if name in engines:
            torch.backends.quantized.engine = name
            break
    q = torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear: per_channel_dynamic_qconfig},
                                               dtype=torch.qint8)
    q.eval()
    return q, torch.backends.quantized.engine


# ---------------------------------------------------------------------------------------------------------------
# CTranslate2 int8

def convert_ct2(model_dir: str, out_dir: Path, quantization: str = "int8") -> Path:
    """Converts the HF model once (kept in out_dir). CTranslate2 4.8's converter calls
    from_pretrained(..., dtype=...), a keyword that transformers 4.44 spells torch_dtype (it would otherwise end up
    in the model config and be ignored or rejected), so this subclass renames it before loading."""
    import ctranslate2.converters

    out = out_dir / f"ct2_{quantization}"
    if (out / "model.bin").is_file():
        return out

    class Converter(ctranslate2.converters.TransformersConverter):
        def load_model(self, model_class, model_name_or_path, **kwargs):
            if "dtype" in kwargs:  # shim: transformers < 4.56 knows only torch_dtype
                kwargs["torch_dtype"] = kwargs.pop("dtype")
            return super().load_model(model_class, model_name_or_path, **kwargs)

    out_dir.mkdir(parents=True, exist_ok=True)
    Converter(model_dir).convert(str(out), quantization=quantization, force=True)
    return out


class Ct2Engine(FeedsEngine):
    def __init__(self, ct2_dir: Path, threads: int, compute_type: str = "int8"):
        import ctranslate2

        self.ct2 = ctranslate2
        self.encoder = ctranslate2.Encoder(str(ct2_dir), device="cpu", compute_type=compute_type,
                                           intra_threads=threads, inter_threads=1)

    def embed(self, feeds) -> np.ndarray:
        mask = feeds["attention_mask"]
        ids = self.ct2.StorageView.from_array(np.ascontiguousarray(feeds["input_ids"], dtype=np.int32))
        lengths = self.ct2.StorageView.from_array(mask.sum(axis=1).astype(np.int32))
        out = self.encoder.forward_batch(ids, lengths, feeds["token_type_ids"].tolist())
        hidden = np.asarray(out.last_hidden_state)
        return mean_pool_normalize_np(hidden, mask[:, : hidden.shape[1]])


# ---------------------------------------------------------------------------------------------------------------
# OpenVINO, in a worker process (ov_worker.py) running under the OpenVINO venv's python

class OvEngine:
    """Client of ov_worker.py: one JSON request per line on its stdin, one JSON reply per line on its stdout.
    The worker keeps the compiled model and the prepared inputs, so samples(n) times n calls inside the worker
    (no pipe in the timing), and the parent can interleave it with the in-process engines."""

    def __init__(self, python: str, onnx_path: Path, variant: str, threads: int, cache_dir: Path,
                 calibration_npz: Path | None = None):
        self.tmp = tempfile.TemporaryDirectory(prefix=f"brisk-ov-{variant}-")
        cmd = [python, str(HERE / "ov_worker.py"), "--onnx", str(onnx_path), "--variant", variant,
               "--threads", str(threads), "--cache-dir", str(cache_dir)]
        if calibration_npz is not None:
            cmd += ["--calibration", str(calibration_npz)]
        # stderr is inherited: NNCF's progress and any error text show in the run's log.
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.info = self._reply()
        self.n = 0

    def _reply(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise RuntimeError(f"ov_worker exited with status {code} (its stderr is above)")
        r = json.loads(line)
        if "error" in r:
            raise RuntimeError(f"ov_worker: {r['error']}")
        return r

    def _call(self, **req) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return self._reply()

    def _save(self, feeds) -> str:
        self.n += 1
        path = Path(self.tmp.name) / f"feeds{self.n}.npz"
        np.savez(path, **{k: feeds[k] for k in ("input_ids", "attention_mask", "token_type_ids")})
        return str(path)

    def prepare(self, feeds, warmup: int) -> None:
        self._call(op="prepare", feeds=self._save(feeds), warmup=warmup)

    def samples(self, n: int) -> list[float]:
        return [float(s) for s in self._call(op="samples", n=n)["samples_s"]]

    def embed(self, feeds) -> np.ndarray:
        out = Path(self.tmp.name) / "embed.npy"
        self._call(op="embed", feeds=self._save(feeds), out=str(out))
        return np.load(out)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
        self.tmp.cleanup()


def ov_python_ok(python: str) -> str | None:
    """None when `python` can import openvino and nncf, else why not."""
    try:
        proc = subprocess.run([python, "-c", "import openvino, nncf"], capture_output=True, text=True, timeout=120)
    except OSError as e:
        return f"{python}: {e}"
    if proc.returncode != 0:
        return f"{python} cannot import openvino and nncf: {proc.stderr.strip().splitlines()[-1:]}"
    return None


if __name__ == "__main__":
    sys.exit("engines_quant.py is a module of run_peers.py")
