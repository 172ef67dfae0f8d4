#!/usr/bin/env python3
"""Side-by-side peer benchmark: brisk against ONNX Runtime and PyTorch on the same model and inputs.

For each shape (batch B, sequence length T) every engine embeds B copies of "[CLS] hello x (T-2) [SEP]"
(so T is exact) with the same thread count, pooling and L2 normalisation included in the timing.
Reported: seq/s (B / median call time) and P50/P99 call latency; B=1,T=16 runs >= 200 iterations for latency.
The results replace the section between `<!-- peers:begin -->` and `<!-- peers:end -->` in
benchmarks/RESULTS.md (the file is created when absent).

  scripts/peers                                   # the wrapper: sets up the venv, then runs this
  python benchmarks/peers/run_peers.py --brisk build/release/lib/brisk --model ~/.cache/brisk/models/all-MiniLM-L6-v2
  python benchmarks/peers/run_peers.py --only ort,torch --no-write   # peers only, print the table
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engines  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"

# (B, T, iterations, warm-up). Fewer iterations for big shapes keep the whole run under ~10 minutes on 2 cores.
SHAPES = [(1, 16, 300, 20), (1, 128, 50, 3), (8, 64, 20, 2), (32, 128, 10, 1)]
ENGINE_LABELS = {
    "ort": "ORT fp32",
    "ort_int8": "ORT int8",
    "torch": "PyTorch eager",
    "torch_jit": "PyTorch jit.trace",
    "brisk": "brisk",
}
CHECK_TEXTS = ["How do I reset my card PIN?", "What are your branch opening hours on Saturday?",
               "I think someone used my card without permission", "hello"]


def default_model_dir() -> str:
    return os.environ.get("BRISK_MODEL_DIR") or str(Path.home() / ".cache/brisk/models/all-MiniLM-L6-v2")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=default_model_dir(), help="Hugging Face model directory")
    p.add_argument("--brisk", default=str(REPO / "build/release/lib/brisk"), help="path to the built brisk binary")
    p.add_argument("--threads", type=int, default=2, help="intra-op threads for every engine (default 2)")
    p.add_argument("--only", default="ort,ort_int8,torch,torch_jit,brisk",
                   help="comma-separated engines: " + ",".join(ENGINE_LABELS))
    p.add_argument("--iters-scale", type=float, default=1.0, help="multiply every iteration count (min 5)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds per shape (default 5)")
    p.add_argument("--int8-per-tensor", action="store_true",
                   help="ORT int8 with per-tensor weight scales (faster, less accurate) instead of per-channel")
    p.add_argument("--workdir", default=str(Path.home() / ".cache/brisk/peers"), help="where ONNX files are kept")
    p.add_argument("--results", default=str(REPO / "benchmarks/RESULTS.md"), help="markdown file to update")
    p.add_argument("--no-write", action="store_true", help="print the section, do not update --results")
    p.add_argument("--json-out", help="also write the raw results as JSON to this file")
    args = p.parse_args()
    args.engines = [e.strip() for e in args.only.split(",") if e.strip()]
    unknown = [e for e in args.engines if e not in ENGINE_LABELS]
    if unknown:
        p.error(f"--only: unknown engine(s) {unknown}; expected some of {list(ENGINE_LABELS)}")
    if args.rounds < 1:
        p.error(f"--rounds: {args.rounds}; expected at least 1")
    if not (Path(args.model) / "config.json").is_file():
        p.error(f"--model: '{args.model}' has no config.json; expected a Hugging Face model directory "
                "(run scripts/setup to install the default model)")
    return args


def log(msg: str) -> None:
    print(f"[peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------------
# Machine and versions

def machine_info() -> dict:
    model, cores = platform.processor() or "unknown", os.cpu_count()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            key, _, val = line.partition(":")
            if key.strip() == "Model name":
                model = val.strip()
            elif key.strip() == "CPU(s)":
                cores = int(val.strip())
    except (OSError, ValueError):
        pass
    return {"cpu": model, "cpus": cores, "affinity": len(os.sched_getaffinity(0))}


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def versions() -> dict:
    v = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("onnxruntime", "torch", "transformers", "onnx"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            v[mod] = "absent"
    return v


# ---------------------------------------------------------------------------------------------------------------
# Running

def plan(scale: float) -> list[tuple[int, int, int, int]]:
    out = []
    for b, t, iters, warm in SHAPES:
        n = max(5, int(round(iters * scale)))
        if (b, t) == (1, 16):
            n = max(n, 200)  # the latency row needs >= 200 samples for a meaningful P99
        out.append((b, t, n, warm))
    return out


def cosine_rows(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.min(np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))))


def run(args) -> dict:
    results: dict = {"shapes": {}, "notes": [], "agreement": {}}
    need_hf = any(e != "brisk" for e in args.engines)
    tokenizer = model = None
    ref = None
    built: dict = {}
    if need_hf:
        import torch

        torch.set_num_threads(args.threads)
        tokenizer, model = engines.load_hf(args.model)
        cfg = model.config
        ref_engine = engines.TorchEngine(model, args.threads)
        enc = tokenizer(CHECK_TEXTS, padding=True, return_tensors="np")
        feeds = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
        ref = ref_engine.embed(feeds)
        if "torch" in args.engines:
            built["torch"] = ref_engine
        if "ort" in args.engines or "ort_int8" in args.engines:
            t0 = time.perf_counter()
            workdir = Path(args.workdir) / Path(args.model).name
            raw = engines.export_onnx(model, tokenizer, workdir)
            opt, fused = engines.optimize_onnx(raw, cfg.num_attention_heads, cfg.hidden_size)
            results["ort_fusions"] = fused
            log(f"ONNX export + optimize: {time.perf_counter() - t0:.1f} s; fused ops {fused}")
            if "ort" in args.engines:
                built["ort"] = engines.OrtEngine(opt, args.threads)
            if "ort_int8" in args.engines:
                try:
                    int8 = engines.quantize_onnx_int8(opt, per_channel=not args.int8_per_tensor)
                    built["ort_int8"] = engines.OrtEngine(int8, args.threads)
                except Exception as e:  # noqa: BLE001  (int8 is an extra column)
                    results["notes"].append(f"ORT int8 quantization failed: {e}")
                    log(f"ORT int8 quantization failed, skipping: {e}")
        if "torch_jit" in args.engines:
            try:
                sample = engines.synthetic_ids(tokenizer, 2, 16)
                built["torch_jit"] = engines.TorchEngine(model, args.threads, jit=True, sample_feeds=sample)
            except Exception as e:  # noqa: BLE001  (tracing is best effort)
                results["notes"].append(f"torch.jit.trace failed: {e}")
                log(f"torch.jit.trace failed, skipping: {e}")
        for name, eng in built.items():
            results["agreement"][name] = cosine_rows(eng.embed(feeds), ref)
    if "brisk" in args.engines:
        try:
            built["brisk"] = engines.BriskEngine(args.brisk, args.model, args.threads)
            if ref is not None:
                results["agreement"]["brisk"] = cosine_rows(built["brisk"].embed_texts(CHECK_TEXTS), ref)
        except Exception as e:  # noqa: BLE001
            results["notes"].append(f"brisk skipped: {e}")
            log(f"brisk skipped: {e}")
            built.pop("brisk", None)

    results["engines"] = [e for e in args.engines if e in built]
    for b, t, iters, warm in plan(args.iters_scale):
        # Brisk builds its own text; the zeros only carry the shape when no tokenizer was loaded.
        feeds = (engines.synthetic_ids(tokenizer, b, t) if tokenizer is not None
                 else {"input_ids": np.zeros((b, t), dtype=np.int64)})
        live = []
        for name in results["engines"]:
            try:
                built[name].prepare(feeds, warm)
                live.append(name)
            except Exception as e:  # noqa: BLE001
                results["notes"].append(f"{name} B={b} T={t} failed: {e}")
                log(f"{name} B={b} T={t} failed: {e}")
        # Interleaved rounds: every engine runs iters/rounds calls per round, so that load from other users of
        # the machine lands on all engines alike instead of on whichever ran during a busy minute.
        rounds = min(args.rounds, iters)
        per_round = [iters // rounds + (1 if r < iters % rounds else 0) for r in range(rounds)]
        samples: dict[str, list[float]] = {n: [] for n in live}
        spent: dict[str, float] = {n: 0.0 for n in live}
        for n_round in per_round:
            for name in list(live):
                t0 = time.perf_counter()
                try:
                    samples[name] += built[name].samples(n_round)
                except Exception as e:  # noqa: BLE001
                    results["notes"].append(f"{name} B={b} T={t} failed: {e}")
                    log(f"{name} B={b} T={t} failed: {e}")
                    live.remove(name)
                spent[name] += time.perf_counter() - t0
        row = {}
        for name in live:
            r = row[name] = engines.summarize(samples[name], b)
            if name == "brisk":
                r["passes_per_call"] = max(built[name].passes_per_call)
            log(f"{name:10s} B={b:<3d} T={t:<4d} {r['seq_per_s']:9.1f} seq/s  p50 {r['p50_ms']:8.2f} ms  "
                f"p99 {r['p99_ms']:8.2f} ms  ({r['iters']} iters, {spent[name]:.1f} s)")
        results["shapes"][f"{b}x{t}"] = {"batch": b, "seq": t, "iters": iters, "results": row}
    return results


# ---------------------------------------------------------------------------------------------------------------
# Report

def fmt_num(x: float | None, digits: int = 1) -> str:
    return "—" if x is None or x != x else f"{x:,.{digits}f}"


def render(args, results: dict, machine: dict, vers: dict, wall_s: float, command: str) -> str:
    names = results["engines"]
    lines = [BEGIN, "## Peers: brisk vs ONNX Runtime vs PyTorch (CPU)", ""]
    lines.append(f"- machine: {machine['cpu']}, {machine['cpus']} CPUs ({machine['affinity']} usable); "
                 f"{args.threads} threads for every engine; load average (1/5/15 min) {machine['load_start']} "
                 f"at the start, {machine['load_end']} at the end")
    lines.append(f"- date: {dt.datetime.now().strftime('%Y-%m-%d %H:%M')}; run took {wall_s:.0f} s; engines "
                 f"interleaved in {args.rounds} rounds per shape (each brisk round is one `brisk bench` process)")
    lines.append(f"- command: `{command}`")
    lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    lines.append(f"- model: `{Path(args.model).name}`; inputs: B copies of `[CLS] hello x (T-2) [SEP]`, "
                 "mean pooling + L2 normalisation included in every timing")
    lines.append("- ORT: torch.onnx.export (opset 14, dynamic batch/seq) → onnxruntime.transformers optimizer "
                 "(bert, all exact fusions) → ORT_ENABLE_ALL, intra-op threads "
                 f"{args.threads}, inter-op 1; int8 = onnxruntime.quantization.quantize_dynamic of the optimized model "
                 f"(QInt8 weights, {'per-tensor' if args.int8_per_tensor else 'per-channel'} scales)")
    if results.get("ort_fusions"):
        lines.append("- ORT fused operators: " + ", ".join(f"{k} {v}" for k, v in results["ort_fusions"].items()))
    lines.append("- PyTorch: eager HF AutoModel under torch.no_grad; jit = torch.jit.trace + freeze")
    if results["agreement"]:
        lines.append("- agreement with PyTorch eager (min cosine over 4 sentences): " + ", ".join(
            f"{ENGINE_LABELS[k]} {v:.6f}" for k, v in results["agreement"].items()))
    lines += ["", "Throughput, seq/s (B / median call time; higher is better):", ""]
    lines.append("| B | T | iters | " + " | ".join(ENGINE_LABELS[n] for n in names) +
                 (" | brisk / ORT fp32 | brisk / ORT int8 | brisk passes per call |" if "brisk" in names else " |"))
    lines.append("|---|---|---|" + "---|" * len(names) + ("---|---|---|" if "brisk" in names else ""))
    for shape in results["shapes"].values():
        r = shape["results"]
        cells = [fmt_num(r.get(n, {}).get("seq_per_s")) for n in names]
        line = f"| {shape['batch']} | {shape['seq']} | {shape['iters']} | " + " | ".join(cells) + " |"
        if "brisk" in names:
            for peer in ("ort", "ort_int8"):
                if "brisk" in r and peer in r:
                    line += f" {r['brisk']['seq_per_s'] / r[peer]['seq_per_s']:.2f}× |"
                else:
                    line += " — |"
            line += f" {r['brisk']['passes_per_call']:.2f} |" if "brisk" in r else " — |"
        lines.append(line)
    lat = results["shapes"].get("1x16", {}).get("results", {})
    if lat:
        lines += ["", f"Latency at B=1, T=16, ms per call ({results['shapes']['1x16']['iters']} iterations):", ""]
        lines.append("| engine | P50 | P90 | P99 |")
        lines.append("|---|---|---|---|")
        for n in names:
            if n in lat:
                lines.append(f"| {ENGINE_LABELS[n]} | {lat[n]['p50_ms']:.2f} | {lat[n]['p90_ms']:.2f} | "
                             f"{lat[n]['p99_ms']:.2f} |")
    if results["notes"]:
        lines += [""] + [f"- note: {n}" for n in results["notes"]]
    lines += ["", "The machine is shared with other jobs; numbers are from one run and move between runs "
              "(interleaving keeps the ratios steadier than the absolute values).", END]
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str) -> None:
    if path.exists():
        text = path.read_text()
        pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.S)
        if pattern.search(text):
            text = pattern.sub(lambda _: section, text, count=1)
        else:
            text = text.rstrip("\n") + "\n\n" + section
    else:
        text = "# brisk benchmark results\n\nLatest tables; each section names its machine, date and command.\n\n" + section
    path.write_text(text)


def main() -> int:
    args = parse_args()
    launcher = os.environ.get("BRISK_PEERS_LAUNCHER", "python benchmarks/peers/run_peers.py")
    command = " ".join([launcher] + [shlex.quote(a) for a in sys.argv[1:]])
    machine, vers = machine_info(), versions()
    machine["load_start"] = load_average()
    log(f"{machine['cpu']}, {machine['cpus']} CPUs; engines {args.engines}; threads {args.threads}")
    t0 = time.perf_counter()
    results = run(args)
    machine["load_end"] = load_average()
    section = render(args, results, machine, vers, time.perf_counter() - t0, command)
    print(section)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"machine": machine, "versions": vers, **results}, indent=2))
    if not args.no_write:
        write_section(Path(args.results), section)
        log(f"updated {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
