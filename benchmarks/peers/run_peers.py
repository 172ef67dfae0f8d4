#!/usr/bin/env python3
"""Side-by-side peer benchmark: brisk against ONNX Runtime, OpenVINO, CTranslate2 and PyTorch, fp32 and int8.

Speed: for each shape (batch B, sequence length T) every engine embeds B copies of "[CLS] hello x (T-2) [SEP]"
(another one-token word where "hello" is not one, so T is exact) with the same thread count, pooling and L2
normalisation included in the timing, the engines interleaved in rounds. Reported: seq/s (B / median call time),
P50/P99 call latency, and seq/s relative to brisk fp32; B=1,T=16 runs >= 200 iterations for latency (unless --iters
sets the count).
Accuracy: every engine embeds benchmarks/data/heldout_sentences.txt (real sentences, tokenized in batches of 32
with padding, the attention mask used in pooling; brisk through `brisk embed`), and the mean and worst cosine
against the Hugging Face transformers fp32 embeddings are reported next to the speed.
Each peer is set up at its best: ORT with the transformer optimizer (and int8 = dynamic per-channel quantization
of the optimized model), OpenVINO fp32 / bf16 / NNCF int8 (calibrated on benchmarks/data/calibration_texts.txt,
run in a worker process under a venv of its own, see ov_worker.py), CTranslate2 int8, PyTorch eager / jit.trace /
dynamic int8. The results replace the section between `<!-- peers:begin -->` and `<!-- peers:end -->` in
benchmarks/RESULTS.md (the file is created when absent).

  scripts/peers                                   # the wrapper: sets up both venvs, then runs this
  scripts/peers --shapes 32x128,1x16 --brisk-model fp32=DIR --brisk-model int8=FILE.safetensors
  scripts/peers --iters 5 --shapes 32x128,1x16 --no-write            # a quick check of every engine
  python benchmarks/peers/run_peers.py --only ort,torch --no-write   # peers only, print the table
  scripts/peers --json-out run.json && scripts/bench-compare --extract run.json   # key figures for regression alerts
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
import engines_quant  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"

# (B, T, iterations, warm-up). Fewer iterations for big shapes keep the whole run under ~10 minutes on 2 cores.
SHAPES = [(1, 16, 300, 20), (1, 128, 50, 3), (8, 64, 20, 2), (32, 128, 10, 1)]
# Every engine but brisk; brisk's are added per --brisk-model as brisk_LABEL, and "brisk" in --only means all.
ENGINE_LABELS = {
    "ort": "ORT fp32",
    "ort_int8": "ORT int8",
    "ort_int8_u8": "ORT int8 (u8 weights)",
    "ov_fp32": "OpenVINO fp32",
    "ov_bf16": "OpenVINO bf16",
    "ov_int8": "OpenVINO int8 (NNCF)",
    "ct2_int8": "CTranslate2 int8",
    "torch": "PyTorch eager",
    "torch_jit": "PyTorch jit.trace",
    "torch_int8": "PyTorch int8 (dynamic)",
}
DEFAULT_ONLY = "brisk,ort,ort_int8,ov_fp32,ov_bf16,ov_int8,ct2_int8,torch,torch_int8,torch_jit"
DATA = REPO / "benchmarks/data"


def default_model_dir() -> str:
    return os.environ.get("BRISK_MODEL_DIR") or str(Path.home() / ".cache/brisk/models/all-MiniLM-L6-v2")


def label(name: str) -> str:
    return ENGINE_LABELS.get(name) or ("brisk " + name[len("brisk_"):] if name.startswith("brisk_") else name)


def parse_shapes(text: str) -> list[tuple[int, int, int, int]]:
    known = {(b, t): (b, t, n, w) for b, t, n, w in SHAPES}
    out = []
    for item in text.split(","):
        m = re.fullmatch(r"\s*(\d+)x(\d+)\s*", item)
        if not m:
            raise ValueError(f"'{item}' is not BxT")
        b, t = int(m[1]), int(m[2])
        out.append(known.get((b, t), (b, t, 10, 1)))
    return out


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=default_model_dir(), help="Hugging Face model directory")
    p.add_argument("--brisk", default=str(REPO / "build/release/lib/brisk"), help="path to the built brisk binary")
    p.add_argument("--brisk-model", action="append", default=[], metavar="LABEL=PATH",
                   help="a brisk model variant, passed to `brisk bench/embed --model PATH` (a model directory or a "
                        "weights file such as a quantized .safetensors); repeatable; default fp32=--model. "
                        "Speeds are also given relative to the one labelled fp32 (else the first)")
    p.add_argument("--threads", type=int, default=2, help="intra-op threads for every engine (default 2)")
    p.add_argument("--only", default=DEFAULT_ONLY,
                   help="comma-separated engines: brisk (every --brisk-model), " + ",".join(ENGINE_LABELS) +
                        f" (default {DEFAULT_ONLY})")
    p.add_argument("--shapes", default=",".join(f"{b}x{t}" for b, t, _, _ in SHAPES),
                   help="comma-separated BxT shapes (default: all of them)")
    p.add_argument("--iters-scale", type=float, default=1.0, help="multiply every iteration count (min 5)")
    p.add_argument("--iters", type=int, help="exactly this many timed calls per shape (quick checks; no minimum)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds per shape (default 5)")
    p.add_argument("--int8-per-tensor", action="store_true",
                   help="ORT int8 with per-tensor weight scales (faster, less accurate) instead of per-channel")
    p.add_argument("--heldout", default=str(DATA / "heldout_sentences.txt"),
                   help="sentences for the accuracy columns, one per line")
    p.add_argument("--calibration", default=str(DATA / "calibration_texts.txt"),
                   help="texts that calibrate OpenVINO's NNCF int8, one per line")
    p.add_argument("--no-accuracy", action="store_true", help="skip the held-out accuracy columns")
    p.add_argument("--ov-python", default=os.environ.get("BRISK_PEERS_OV_PYTHON") or
                   str(Path.home() / ".cache/brisk/pyref-ov/bin/python"),
                   help="python of the OpenVINO + NNCF venv (scripts/peers sets it up)")
    p.add_argument("--workdir", default=str(Path.home() / ".cache/brisk/peers"),
                   help="where exported and converted models are kept")
    p.add_argument("--results", default=str(REPO / "benchmarks/RESULTS.md"), help="markdown file to update")
    p.add_argument("--no-write", action="store_true", help="print the section, do not update --results")
    p.add_argument("--json-out", help="also write the raw results as JSON to this file")
    p.add_argument("--busy", type=int, default=0,
                   help="competing busy processes (one spinning Python process each) while the engines are timed: "
                        "the host's other work (benchmarks/contention/run_contention.sh)")
    args = p.parse_args()
    names = [e.strip() for e in args.only.split(",") if e.strip()]
    unknown = [e for e in names if e not in ENGINE_LABELS and e != "brisk"]
    if unknown:
        p.error(f"--only: unknown engine(s) {unknown}; expected some of {['brisk'] + list(ENGINE_LABELS)}")
    variants = []
    for item in args.brisk_model or [f"fp32={args.model}"]:
        lab, sep, path = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_.+-]+", lab) or not path:
            p.error(f"--brisk-model: '{item}'; expected LABEL=PATH with LABEL of letters, digits, _ . + -")
        if any(lab == v[0] for v in variants):
            p.error(f"--brisk-model: the label '{lab}' is given twice")
        variants.append((lab, os.path.expanduser(path)))
    args.brisk_variants = variants
    args.engines = []
    for e in names:
        args.engines += [f"brisk_{lab}" for lab, _ in variants] if e == "brisk" else [e]
    try:
        args.shape_plan = parse_shapes(args.shapes)
    except ValueError as e:
        p.error(f"--shapes: {e}")
    if args.rounds < 1:
        p.error(f"--rounds: {args.rounds}; expected at least 1")
    if args.iters is not None and args.iters < 1:
        p.error(f"--iters: {args.iters}; expected at least 1")
    if not (Path(args.model) / "config.json").is_file():
        p.error(f"--model: '{args.model}' has no config.json; expected a Hugging Face model directory "
                "(run scripts/setup to install the default model)")
    return args


def log(msg: str) -> None:
    print(f"[peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------------
# Machine and versions

def machine_info() -> dict:
    """The CPU as RESULTS.md tables name it: model name (family F, model M), and the ISA level brisk runs at (the
    CPU's best unless BRISK_ISA caps it; the peers use their own dispatch)."""
    model, cores, family, number = platform.processor() or "unknown", os.cpu_count(), "?", "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            key, _, val = line.partition(":")
            if key.strip() == "Model name":
                model = val.strip()
            elif key.strip() == "CPU family":
                family = val.strip()
            elif key.strip() == "Model":
                number = val.strip()
            elif key.strip() == "CPU(s)":
                cores = int(val.strip())
    except (OSError, ValueError):
        pass
    isa = os.environ.get("BRISK_ISA") or "the CPU's best (BRISK_ISA unset)"
    return {"cpu": f"{model} (family {family}, model {number}); brisk ISA level {isa}", "cpus": cores,
            "affinity": len(os.sched_getaffinity(0))}


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty", "--abbrev=10"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def versions() -> dict:
    v = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("onnxruntime", "torch", "transformers", "onnx", "ctranslate2"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            v[mod] = "absent"
    return v


# ---------------------------------------------------------------------------------------------------------------
# Running

def plan(args) -> list[tuple[int, int, int, int]]:
    out = []
    for b, t, iters, warm in args.shape_plan:
        if args.iters is not None:
            out.append((b, t, args.iters, min(warm, 3)))
            continue
        n = max(5, int(round(iters * args.iters_scale)))
        if (b, t) == (1, 16):
            n = max(n, 200)  # the latency row needs >= 200 samples for a meaningful P99
        out.append((b, t, n, warm))
    return out


def read_lines(path: str) -> list[str]:
    return [ln for ln in Path(path).read_text(encoding="utf-8").splitlines() if ln.strip()]


def build(args, results: dict) -> tuple[dict, object, list, np.ndarray | None]:
    """Builds every engine that works; a failing one is skipped with a note. Returns (engines, tokenizer,
    held-out batches, reference embeddings of them)."""
    built: dict = {}
    notes = results["notes"]

    def attempt(name: str, make) -> None:
        t0 = time.perf_counter()
        try:
            built[name] = make()
            log(f"{label(name)}: ready in {time.perf_counter() - t0:.1f} s")
        except Exception as e:  # noqa: BLE001  (an engine that cannot be built is skipped, not fatal)
            notes.append(f"{label(name)} skipped: {type(e).__name__}: {e}")
            log(f"{label(name)} skipped: {type(e).__name__}: {e}")

    want = set(args.engines)
    tokenizer = model = None
    heldout_batches: list = []
    ref = None
    need_hf = not args.no_accuracy or any(not e.startswith("brisk_") for e in args.engines)
    if need_hf:
        import torch

        torch.set_num_threads(args.threads)
        tokenizer, model = engines.load_hf(args.model)
        cfg = model.config
        ref_engine = engines.TorchEngine(model, args.threads)
        if not args.no_accuracy:
            t0 = time.perf_counter()
            heldout_batches = engines.batches(tokenizer, read_lines(args.heldout), max_length=engines.max_tokens(cfg))
            ref = np.concatenate([ref_engine.embed(f) for f in heldout_batches])
            log(f"reference: HF transformers fp32 embeddings of {len(ref)} held-out sentences in "
                f"{time.perf_counter() - t0:.1f} s")
        if "torch" in want:
            built["torch"] = ref_engine
        if "torch_int8" in want:
            def make_torch_int8():
                qmodel, backend = engines_quant.quantize_torch_int8(model)
                results["torch_int8_backend"] = backend
                return engines.TorchEngine(qmodel, args.threads)
            attempt("torch_int8", make_torch_int8)
        if "torch_jit" in want:
            sample = engines.synthetic_ids(tokenizer, 2, 16, engines.synthetic_word(tokenizer, 16))
            attempt("torch_jit", lambda: engines.TorchEngine(model, args.threads, jit=True, sample_feeds=sample))
        workdir = Path(args.workdir) / Path(args.model).name
        raw = opt = None
        if want & {"ort", "ort_int8", "ort_int8_u8", "ov_fp32", "ov_bf16", "ov_int8"}:
            t0 = time.perf_counter()
            raw = engines.export_onnx(model, tokenizer, workdir)
            if want & {"ort", "ort_int8", "ort_int8_u8"}:
                opt, fused = engines.optimize_onnx(raw, cfg.num_attention_heads, cfg.hidden_size)
                results["ort_fusions"] = fused
                log(f"ONNX export + optimize: {time.perf_counter() - t0:.1f} s; fused ops {fused}")
        if "ort" in want:
            attempt("ort", lambda: engines.OrtEngine(opt, args.threads))
        for name, wtype in (("ort_int8", "qint8"), ("ort_int8_u8", "quint8")):
            if name in want:
                attempt(name, lambda w=wtype: engines.OrtEngine(
                    engines.quantize_onnx_int8(opt, per_channel=not args.int8_per_tensor, weight_type=w),
                    args.threads))
        if "ct2_int8" in want:
            attempt("ct2_int8", lambda: engines_quant.Ct2Engine(
                engines_quant.convert_ct2(args.model, workdir, "int8"), args.threads, "int8"))
        ov_names = [n for n in ("ov_fp32", "ov_bf16", "ov_int8") if n in want]
        if ov_names:
            why = engines_quant.ov_python_ok(args.ov_python)
            if why:
                for n in ov_names:
                    notes.append(f"{label(n)} skipped: {why} (scripts/peers sets that venv up)")
                log(f"OpenVINO engines skipped: {why}")
                ov_names = []
            calib = None
            if "ov_int8" in ov_names:
                calib = workdir / "calibration.npz"
                enc = tokenizer(read_lines(args.calibration), padding=True, truncation=True,
                                max_length=engines.max_tokens(cfg), return_tensors="np")
                np.savez(calib, **engines.feeds_of(enc))
            for n in ov_names:
                attempt(n, lambda n=n: engines_quant.OvEngine(args.ov_python, raw, n[len("ov_"):], args.threads,
                                                              workdir, calib if n == "ov_int8" else None))
            for n in ov_names:
                if n in built:
                    results["ov_versions"] = built[n].info["versions"]
                    if built[n].info.get("quantize_s"):
                        results["nncf_quantize_s"] = built[n].info["quantize_s"]
    for lab, path in args.brisk_variants:
        name = f"brisk_{lab}"
        if name in want:
            attempt(name, lambda p=path: engines.BriskEngine(args.brisk, p, args.threads))
    return built, tokenizer, heldout_batches, ref


def accuracy(args, built: dict, heldout_batches: list, ref: np.ndarray, results: dict) -> None:
    texts = read_lines(args.heldout)
    for name in [e for e in args.engines if e in built]:
        t0 = time.perf_counter()
        try:
            eng = built[name]
            if name.startswith("brisk_"):
                emb = eng.embed_texts(texts)
            elif name == "torch":
                emb = ref  # the reference itself
            else:
                emb = np.concatenate([eng.embed(f) for f in heldout_batches])
            r = results["accuracy"][name] = engines.cosine_stats(emb.astype(np.float32), ref)
            log(f"{label(name):24s} held-out cosine vs HF fp32: mean {r['mean_cos']:.6f}, worst {r['worst_cos']:.6f} "
                f"({r['n']} sentences, {time.perf_counter() - t0:.1f} s)")
        except Exception as e:  # noqa: BLE001
            results["notes"].append(f"{label(name)} accuracy failed: {type(e).__name__}: {e}")
            log(f"{label(name)} accuracy failed: {type(e).__name__}: {e}")


def run(args) -> dict:
    results: dict = {"shapes": {}, "notes": [], "accuracy": {}}
    built, tokenizer, heldout_batches, ref = build(args, results)
    busy: list[subprocess.Popen] = []
    try:
        if ref is not None:
            accuracy(args, built, heldout_batches, ref, results)
        results["engines"] = [e for e in args.engines if e in built]
        busy += [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
        results["busy_processes"] = args.busy
        for b, t, iters, warm in plan(args):
            # Brisk builds its own text; the zeros only carry the shape when no tokenizer was loaded.
            if tokenizer is not None:
                word = engines.synthetic_word(tokenizer, t)
                feeds = engines.synthetic_ids(tokenizer, b, t, word)
            else:
                word, feeds = "hello", {"input_ids": np.zeros((b, t), dtype=np.int64)}
            for e in built.values():
                if isinstance(e, engines.BriskEngine):
                    e.word = word
            live = []
            for name in results["engines"]:
                try:
                    built[name].prepare(feeds, warm)
                    live.append(name)
                except Exception as e:  # noqa: BLE001
                    results["notes"].append(f"{label(name)} B={b} T={t} failed: {e}")
                    log(f"{label(name)} B={b} T={t} failed: {e}")
            # Interleaved rounds: every engine runs iters/rounds calls per round, so that load from other users of
            # the machine lands on all engines alike instead of on whichever ran during a busy minute.
            rounds = min(args.rounds, iters)
            per_round = [iters // rounds + (1 if r < iters % rounds else 0) for r in range(rounds)]
            samples: dict[str, list[float]] = {n: [] for n in live}
            round_p50: dict[str, list[float]] = {n: [] for n in live}  # scripts/bench-compare's per-round samples
            spent: dict[str, float] = {n: 0.0 for n in live}
            for n_round in per_round:
                for name in list(live):
                    t0 = time.perf_counter()
                    try:
                        this_round = built[name].samples(n_round)
                        samples[name] += this_round
                        round_p50[name].append(float(np.median(this_round)) * 1e3)
                    except Exception as e:  # noqa: BLE001
                        results["notes"].append(f"{label(name)} B={b} T={t} failed: {e}")
                        log(f"{label(name)} B={b} T={t} failed: {e}")
                        live.remove(name)
                    spent[name] += time.perf_counter() - t0
            row = {}
            for name in live:
                r = row[name] = engines.summarize(samples[name], b)
                r["round_p50_ms"] = round_p50[name]
                if name.startswith("brisk_"):
                    r["passes_per_call"] = max(built[name].passes_per_call)
                    r["late_parallel_regions"] = list(built[name].late_regions)
                log(f"{label(name):24s} B={b:<3d} T={t:<4d} {r['seq_per_s']:9.1f} seq/s  p50 {r['p50_ms']:8.2f} ms  "
                    f"p99 {r['p99_ms']:8.2f} ms  ({r['iters']} iters, {spent[name]:.1f} s)")
            results["shapes"][f"{b}x{t}"] = {"batch": b, "seq": t, "iters": iters, "results": row}
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
        for eng in built.values():
            if hasattr(eng, "close"):
                eng.close()
    return results


# ---------------------------------------------------------------------------------------------------------------
# Report

def fmt_num(x: float | None, digits: int = 1) -> str:
    return "—" if x is None or x != x else f"{x:,.{digits}f}"


def brisk_reference(names: list[str]) -> str | None:
    brisks = [n for n in names if n.startswith("brisk_")]
    return "brisk_fp32" if "brisk_fp32" in brisks else (brisks[0] if brisks else None)


def render(args, results: dict, machine: dict, vers: dict, wall_s: float, command: str) -> str:
    names = results["engines"]
    base = brisk_reference(names)
    lines = [BEGIN, "## Peers: brisk vs ONNX Runtime, OpenVINO, CTranslate2 and PyTorch (CPU)", ""]
    lines.append(f"- machine: {machine['cpu']}, {machine['cpus']} CPUs ({machine['affinity']} usable); "
                 f"{args.threads} threads for every engine; load average (1/5/15 min) {machine['load_start']} "
                 f"at the start, {machine['load_end']} at the end")
    lines.append(f"- date: {dt.datetime.now().strftime('%Y-%m-%d %H:%M')}; run took {wall_s:.0f} s; engines "
                 f"interleaved in {args.rounds} rounds per shape (each brisk round is one `brisk bench` process)")
    lines.append(f"- command: `{command}`")
    vers = dict(vers, **results.get("ov_versions", {}))
    lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    lines.append(f"- model: `{Path(args.model).name}`; speed inputs: B copies of `[CLS] hello x (T-2) [SEP]`, "
                 "mean pooling + L2 normalisation included in every timing")
    brisk_models = [f"{lab} = `{Path(path).name}`" for lab, path in args.brisk_variants if f"brisk_{lab}" in names]
    if brisk_models:
        lines.append("- brisk: `brisk bench` and `brisk embed --pooling mean` with --model " + ", ".join(brisk_models))
    lines.append("- ORT: torch.onnx.export (opset 14, dynamic batch/seq) → onnxruntime.transformers optimizer "
                 "(bert, all exact fusions) → ORT_ENABLE_ALL, intra-op threads "
                 f"{args.threads}, inter-op 1; int8 = onnxruntime.quantization.quantize_dynamic of the optimized model "
                 f"({'per-tensor' if args.int8_per_tensor else 'per-channel'} weight scales; QInt8 weights, "
                 "or QUInt8 for the u8 column)")
    if results.get("ort_fusions"):
        lines.append("- ORT fused operators: " + ", ".join(f"{k} {v}" for k, v in results["ort_fusions"].items()))
    if any(n.startswith("ov_") for n in names):
        nncf_s = results.get("nncf_quantize_s")
        lines.append("- OpenVINO: ov.convert_model of the exported ONNX file, CPU plugin, INFERENCE_NUM_THREADS "
                     f"{args.threads}, PERFORMANCE_HINT LATENCY (1 stream), INFERENCE_PRECISION_HINT f32 (fp32, int8) "
                     "or bf16; int8 = nncf.quantize(model_type=TRANSFORMER) calibrated on the "
                     f"{len(read_lines(args.calibration))} texts of `{Path(args.calibration).name}`"
                     + (f" (took {nncf_s:.0f} s)" if nncf_s else " (cached int8 model)"))
    if "ct2_int8" in names:
        lines.append("- CTranslate2: TransformersConverter(quantization=int8), Encoder(compute_type=int8, "
                     f"intra_threads {args.threads}), forward_batch → last_hidden_state, pooling in numpy")
    lines.append("- PyTorch: eager HF AutoModel under torch.no_grad; jit = torch.jit.trace + freeze; int8 = "
                 "torch.ao.quantization.quantize_dynamic on every nn.Linear (qint8, per-channel"
                 + (f", {results['torch_int8_backend']} backend)" if results.get("torch_int8_backend") else ")"))
    acc = results.get("accuracy", {})
    if acc:
        n = next(iter(acc.values()))["n"]
        lines.append(f"- accuracy: cosine between each engine's embedding and the HF transformers fp32 embedding "
                     f"(mean pooling + L2 normalisation) of the {n} sentences of `{Path(args.heldout).name}`, "
                     "tokenized in batches of 32 with padding; mean and worst over the sentences")
    shapes = list(results["shapes"].values())
    if names:
        ref_txt = f" × = seq/s relative to {label(base)} at the same shape;" if base else ""
        lines += ["", f"Summary:{ref_txt} seq/s = B / median call time (higher is better):", ""]
        head = "| engine |"
        rule = "|---|"
        for sh in shapes:
            head += f" seq/s {sh['batch']}x{sh['seq']} |" + (" × |" if base else "")
            rule += "---|" + ("---|" if base else "")
        lines += [head + " mean cos / worst cos |", rule + "---|"]
        for nme in names:
            line = f"| {label(nme)} |"
            for sh in shapes:
                r = sh["results"]
                line += f" {fmt_num(r.get(nme, {}).get('seq_per_s'))} |"
                if base:
                    ok = nme in r and base in r
                    line += f" {r[nme]['seq_per_s'] / r[base]['seq_per_s']:.2f} |" if ok else " — |"
            a = acc.get(nme)
            line += (f" {a['mean_cos']:.6f} / {a['worst_cos']:.6f} |" if a else " — |")
            lines.append(line)
    brisks = [n for n in names if n.startswith("brisk_")]
    if brisks and shapes:
        lines += ["", "brisk forward passes per timed call (1.00 = one pass per embed call): " + "; ".join(
            f"{sh['batch']}x{sh['seq']}: " + ", ".join(
                f"{label(n)} {sh['results'][n]['passes_per_call']:.2f}" for n in brisks if n in sh["results"])
            for sh in shapes)]
        late_note = ("brisk late parallel regions per round (a worker started over 1 ms late, often as the process "
                     "starts; two within 100 ms hold brisk at one thread for 250 ms or more; 0 or 1 = it ran on "
                     "every thread): ")
        lines += ["", late_note + "; ".join(
                      f"{sh['batch']}x{sh['seq']}: " + ", ".join(
                          f"{label(n)} {sh['results'][n].get('late_parallel_regions', [])}" for n in brisks
                          if n in sh["results"]) for sh in shapes)]
    lat = results["shapes"].get("1x16", {}).get("results", {})
    if lat:
        lines += ["", f"Latency at B=1, T=16, ms per call ({results['shapes']['1x16']['iters']} iterations):", ""]
        lines.append("| engine | P50 | P90 | P99 |")
        lines.append("|---|---|---|---|")
        for n in names:
            if n in lat:
                lines.append(f"| {label(n)} | {lat[n]['p50_ms']:.2f} | {lat[n]['p90_ms']:.2f} | "
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
        meta = {"date": dt.datetime.now().strftime("%Y-%m-%dT%H:%M"), "threads": args.threads, "command": command,
                "commit": git_commit()}
        Path(args.json_out).write_text(json.dumps({"machine": machine, "versions": vers, **meta, **results}, indent=2))
    if not args.no_write:
        write_section(Path(args.results), section)
        log(f"updated {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
