#!/usr/bin/env python3
"""OpenVINO worker for benchmarks/peers/run_peers.py; runs under the OpenVINO venv's python (openvino, nncf, numpy
and nothing from the system's site packages: NNCF misreads Debian's old torch).

Builds one variant of the model from the ONNX file the main venv exported (ov.convert_model), compiles it for
CPU with the given thread count and answers one JSON request per stdin line with one JSON line on stdout:
  {"op": "prepare", "feeds": "x.npz", "warmup": N}  -> {"ok": true}      keep these inputs, run N untimed calls
  {"op": "samples", "n": N}                          -> {"samples_s": [...]}  N timed calls on the kept inputs
  {"op": "embed", "feeds": "x.npz", "out": "y.npy"}  -> {"ok": true}      embeddings of x written to y
  {"op": "quit"}
The first line it writes is {"ready": true, "versions": {...}, ...}; a failure is {"error": "..."}.
Variants: fp32 (INFERENCE_PRECISION_HINT f32), bf16 (hint bf16), int8 (NNCF post-training quantization,
ModelType.TRANSFORMER, calibrated on --calibration; the int8 model is cached in --cache-dir, the remaining
float ops run at the f32 hint). Every call includes mean pooling and L2 normalisation, in numpy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import traceback


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--onnx", required=True)
    p.add_argument("--variant", choices=["fp32", "bf16", "int8"], required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--cache-dir", required=True)
    p.add_argument("--calibration", help="npz of padded input_ids/attention_mask/token_type_ids (int8 only)")
    args = p.parse_args()

    # The protocol owns the real stdout; anything a library prints goes to stderr instead.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(obj) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        state = Worker(args)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        send({"error": f"{type(e).__name__}: {e}"})
        return 1
    send({"ready": True, "versions": state.versions, "config": state.config, "quantize_s": state.quantize_s})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req["op"] == "quit":
                break
            send(state.handle(req))
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            send({"error": f"{type(e).__name__}: {e}"})
    return 0


class Worker:
    def __init__(self, args):
        import numpy as np
        import openvino as ov

        self.np = np
        core = ov.Core()
        self.versions = {"openvino": ov.__version__.split("-")[0]}
        self.quantize_s = 0.0
        if args.variant == "int8":
            import nncf

            self.versions["nncf"] = nncf.__version__
            model = self.int8_model(ov, nncf, core, args)
        else:
            model = ov.convert_model(args.onnx)
        self.config = {
            "INFERENCE_NUM_THREADS": args.threads,
            "PERFORMANCE_HINT": "LATENCY",  # one stream: one call at a time, like every other engine here
            "NUM_STREAMS": 1,
            "INFERENCE_PRECISION_HINT": "bf16" if args.variant == "bf16" else "f32",
        }
        self.compiled = core.compile_model(model, "CPU", self.config)
        self.request = self.compiled.create_infer_request()
        self.inputs = [i.get_any_name() for i in self.compiled.inputs]
        self.feeds = None

    def int8_model(self, ov, nncf, core, args):
        np = self.np
        if not args.calibration:
            raise ValueError("--variant int8 needs --calibration")
        data = np.load(args.calibration)
        h = hashlib.sha256()
        with open(args.onnx, "rb") as f:
            h.update(f.read())
        for k in sorted(data.files):
            h.update(k.encode() + data[k].tobytes())
        h.update(nncf.__version__.encode() + ov.__version__.encode())
        path = os.path.join(args.cache_dir, f"ov_int8_nncf_{h.hexdigest()[:12]}.xml")
        if os.path.isfile(path):
            return core.read_model(path)
        mask = data["attention_mask"]
        items = []
        for i in range(mask.shape[0]):  # one unpadded text per calibration sample
            n = int(mask[i].sum())
            items.append({k: data[k][i : i + 1, :n] for k in ("input_ids", "attention_mask", "token_type_ids")})
        t0 = time.perf_counter()
        model = ov.convert_model(args.onnx)
        q = nncf.quantize(model, nncf.Dataset(items), model_type=nncf.ModelType.TRANSFORMER,
                          subset_size=len(items))
        self.quantize_s = time.perf_counter() - t0
        os.makedirs(args.cache_dir, exist_ok=True)
        ov.save_model(q, path)
        return q

    def embed(self, feeds):
        np = self.np
        self.request.infer({k: feeds[k] for k in self.inputs}, share_inputs=True)
        hidden = self.request.get_output_tensor(0).data
        m = feeds["attention_mask"][:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def load(self, path):
        d = self.np.load(path)
        return {k: self.np.ascontiguousarray(d[k]) for k in d.files}

    def handle(self, req) -> dict:
        op = req["op"]
        if op == "prepare":
            self.feeds = self.load(req["feeds"])
            for _ in range(int(req.get("warmup", 0))):
                self.embed(self.feeds)
            return {"ok": True}
        if op == "samples":
            out = []
            for _ in range(int(req["n"])):
                t0 = time.perf_counter()
                self.embed(self.feeds)
                out.append(time.perf_counter() - t0)
            return {"samples_s": out}
        if op == "embed":
            self.np.save(req["out"], self.embed(self.load(req["feeds"])).astype(self.np.float32))
            return {"ok": True}
        raise ValueError(f"unknown op {op!r}")


if __name__ == "__main__":
    sys.exit(main())
