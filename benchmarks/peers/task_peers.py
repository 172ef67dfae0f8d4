#!/usr/bin/env python3
"""Task peer benchmark: brisk's Runtime::logits (sequence classification) and Runtime::rerank (cross-encoder)
against ONNX Runtime on the same models (benchmarks/peers/make_task_models.py: minilm-cls, 12 labels, and
minilm-cross-encoder, 1 label, both the real all-MiniLM-L6-v2 encoder with a seeded random head).

Speed: per task and shape, brisk (build/cpu-only/benchmarks/brisk_task_driver, one process per round, result and
token caches off, tokenization included) and ORT (torch.onnx.export → onnxruntime.transformers optimizer →
ORT_ENABLE_ALL, fp32, pre-tokenized feeds, so tokenization excluded) are interleaved in rounds with the same
thread count; seq/s = B / median call time. Shapes: classify 32 distinct texts of exactly 128 tokens, and 1 x 16;
rerank one query with 32 distinct passages, 128 tokens per [CLS] query [SEP] passage [SEP] pair, and 1 pair of 16.
ORT's rerank timing includes the sigmoid and the sort that brisk's rerank() does. Each engine also runs as a variant
whose idle worker threads sleep instead of spinning (brisk: OMP_WAIT_POLICY=passive; ORT:
session.intra_op.allow_spinning=0), because on a shared machine with more runnable threads than cores spinning
workers stall; the × column is relative to ORT at its defaults.
Accuracy: max abs difference of each engine's logits from Hugging Face transformers (eager fp32) on the first 64
sentences of benchmarks/data/heldout_sentences.txt (classifier) and on 64 query/passage pairs formed from them
(8 queries x 8 passages: cross-encoder), plus top-1 / ranking agreement.

  ~/.cache/brisk/pyref/bin/python benchmarks/peers/task_peers.py [--rounds 5] [--threads 2] [--write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engines  # noqa: E402
import run_peers  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MODELS = Path.home() / ".cache/brisk/models"
BEGIN, END = "<!-- tasks-peers:begin -->", "<!-- tasks-peers:end -->"
# (task, batch, tokens per sequence, timed calls per round, warm-up calls)
SHAPES = [("logits", 32, 128, 3, 1), ("logits", 1, 16, 60, 5), ("rerank", 32, 128, 3, 1), ("rerank", 1, 16, 60, 5)]
# Engines, in round order. Each runs at its defaults, plus a variant whose worker threads sleep instead of spinning
# when idle: on a shared machine with more runnable threads than cores, spinning OpenMP / ORT threads can stall.
ENGINES = {
    "brisk": "brisk",
    "brisk_passive": "brisk, OMP_WAIT_POLICY=passive",
    "ort": "ORT",
    "ort_nospin": "ORT, allow_spinning=0",
}


def log(msg: str) -> None:
    print(f"[task-peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def single_token_words(tokenizer, sentences: list[str]) -> list[str]:
    seen, words = set(), []
    for s in sentences:
        for w in re.findall(r"[a-z]+", s.lower()):
            if w not in seen and len(tokenizer.tokenize(w)) == 1:
                seen.add(w)
                words.append(w)
    return words


def exact_text(tokenizer, words: list[str], n: int, start: int) -> str:
    text = " ".join(words[(start + j) % len(words)] for j in range(n))
    got = len(tokenizer.tokenize(text))
    if got != n:
        raise RuntimeError(f"a synthetic text of {n} words tokenizes to {got} word pieces; expected {n}")
    return text


def speed_inputs(tokenizer, words, task: str, b: int, t: int) -> tuple[list[str], list[str] | None]:
    """Distinct texts of exactly t tokens (logits), or one query and b distinct passages, t tokens per pair."""
    if task == "logits":
        return [exact_text(tokenizer, words, t - 2, 37 * i) for i in range(b)], None
    q = 14 if t >= 64 else 6
    query = exact_text(tokenizer, words, q, 1000)
    return [query] * b, [exact_text(tokenizer, words, t - q - 3, 53 * i + 7) for i in range(b)]


def feeds(tokenizer, a, b=None) -> dict[str, np.ndarray]:
    enc = tokenizer(a, b, padding=True, truncation=True, max_length=512, return_tensors="np")
    return engines.feeds_of(enc)


def export_optimized(model_dir: Path, workdir: Path, tokenizer) -> tuple[Path, dict]:
    import torch
    from transformers import AutoModelForSequenceClassification

    workdir.mkdir(parents=True, exist_ok=True)
    raw = workdir / f"{model_dir.name}_opset14.onnx"
    if not raw.exists():
        model = AutoModelForSequenceClassification.from_pretrained(model_dir, attn_implementation="eager").eval()
        sample = {k: torch.from_numpy(v) for k, v in feeds(tokenizer, ["hello world", "a b c d"]).items()}
        dyn = {0: "batch", 1: "seq"}
        with torch.no_grad():
            torch.onnx.export(model, (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
                              str(raw), input_names=["input_ids", "attention_mask", "token_type_ids"],
                              output_names=["logits"], opset_version=14, do_constant_folding=True,
                              dynamic_axes={"input_ids": dyn, "attention_mask": dyn, "token_type_ids": dyn,
                                            "logits": {0: "batch"}})
    return engines.optimize_onnx(raw, num_heads=12, hidden_size=384)


class Ort:
    def __init__(self, path: Path, threads: int, rerank: bool, spinning: bool = True):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        if not spinning:
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        self.names = {i.name for i in self.session.get_inputs()}
        self.rerank = rerank

    def logits(self, f) -> np.ndarray:
        return self.session.run(["logits"], {k: v for k, v in f.items() if k in self.names})[0]

    def call(self, f):
        out = self.logits(f)
        if self.rerank:  # what rerank() returns: sigmoid scores, best first
            s = 1.0 / (1.0 + np.exp(-out[:, 0]))
            return np.argsort(-s, kind="stable"), s
        return out

    def samples(self, f, n: int, warmup: int) -> list[float]:
        for _ in range(warmup):
            self.call(f)
        return engines.time_calls(lambda: self.call(f), n)


def brisk_driver(args, model: Path, task: str, lines: list[str], extra: list[str], env: dict | None = None) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
        fh.write("\n".join(lines) + "\n")
        path = fh.name
    try:
        cmd = [args.driver, "--model", str(model), "--task", task, "--texts", path, "--threads", str(args.threads)]
        proc = subprocess.run(cmd + extra, capture_output=True, text=True, timeout=900,
                              env={**os.environ, **(env or {})})
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd + extra)} exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])


def lines_for(task: str, a: list[str], b: list[str] | None) -> list[str]:
    return a if task == "logits" else [f"{q}\t{p}" for q, p in zip(a, b)]


def accuracy(args, tokenizer, models: dict, orts: dict) -> dict:
    import torch
    from transformers import AutoModelForSequenceClassification

    sentences = [s for s in Path(args.heldout).read_text().splitlines() if s.strip()]
    texts = sentences[:64]
    queries = [texts[q] for q in range(8) for _ in range(8)]
    passages = [sentences[64 + 8 * q + j] for q in range(8) for j in range(8)]
    out = {}
    for task, a, b in (("logits", texts, None), ("rerank", queries, passages)):
        hf = AutoModelForSequenceClassification.from_pretrained(models[task], attn_implementation="eager").eval()
        f = feeds(tokenizer, a, b)
        with torch.no_grad():
            ref = hf(**{k: torch.from_numpy(v) for k, v in f.items()}).logits.numpy()
        ort_logits = orts[task].logits(f)
        dump = brisk_driver(args, models[task], task, lines_for(task, a, b), ["--dump"])
        brisk = np.asarray(dump["logits"] if task == "logits" else dump["scores"], dtype=np.float32)
        brisk = brisk.reshape(ref.shape)
        row = {"n": len(a), "ref_max_abs": float(np.abs(ref).max())}
        for name, got in (("brisk", brisk), ("ort", ort_logits)):
            row[f"{name}_max_abs_diff"] = float(np.abs(got - ref).max())
            if task == "logits":
                row[f"{name}_top1_agree"] = int((got.argmax(1) == ref.argmax(1)).sum())
            else:  # same order of the 8 passages of each query
                g, r = got[:, 0].reshape(8, 8), ref[:, 0].reshape(8, 8)
                row[f"{name}_rank_agree"] = int(sum((np.argsort(-g[i]) == np.argsort(-r[i])).all() for i in range(8)))
        out[task] = row
    return out


def render(args, res: dict, machine: dict, vers: dict, wall_s: float, command: str, fused: dict) -> str:
    L = [BEGIN, "### Classification and reranking: brisk vs ONNX Runtime (CPU, fp32)", ""]
    L.append(f"- machine: {machine['cpu']}, {machine['cpus']} CPUs ({machine['affinity']} usable); {args.threads} "
             f"threads for both engines; load average {res['load_start']} at the start, {res['load_end']} at the end")
    L.append(f"- date: {res['date']}; run took {wall_s:.0f} s; engines interleaved in {args.rounds} rounds per shape "
             "(each brisk round is one `brisk_task_driver` process with its own warm-up)")
    L.append(f"- command: `{command}`")
    L.append("- versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    L.append("- models: `minilm-cls` (12 labels) and `minilm-cross-encoder` (1 label) from "
             "`benchmarks/peers/make_task_models.py` (real all-MiniLM-L6-v2 encoder, seeded random head)")
    L.append("- ORT: torch.onnx.export (opset 14) → onnxruntime.transformers optimizer (bert) → ORT_ENABLE_ALL, intra-op "
             f"{args.threads}, inter-op 1; fused: " + ", ".join(f"{k} {v}" for k, v in fused.items()))
    L.append("- brisk: Runtime::logits / Runtime::rerank, result and token caches off (every call tokenizes and "
             "computes), run at its defaults and with OMP_WAIT_POLICY=passive; ORT is timed on pre-tokenized feeds "
             "(tokenization excluded), its rerank with sigmoid + sort; "
             "allow_spinning=0 = session.intra_op.allow_spinning 0")
    L.append("- inputs: classify = B distinct texts of exactly T tokens; rerank = 1 query + B distinct passages, T "
             "tokens per pair")
    L += ["", "seq/s = B / median call time; × = relative to ORT (spinning, its default) in the same run; "
          "p50 / p99 in ms per call.", "",
          "| task | B x T | " + " | ".join(f"{v} seq/s (×)" for v in ENGINES.values()) + " | " +
          " | ".join(f"{v} p50 / p99" for v in ENGINES.values()) + " |",
          "|---|---|" + "---|" * (2 * len(ENGINES))]
    for r in res["speed"]:
        ort = r["ort"]["seq_per_s"]
        L.append(f"| {r['task']} | {r['b']}x{r['t']} | " +
                 " | ".join(f"{r[e]['seq_per_s']:.1f} ({r[e]['seq_per_s'] / ort:.2f})" for e in ENGINES) + " | " +
                 " | ".join(f"{r[e]['p50_ms']:.1f} / {r[e]['p99_ms']:.1f}" for e in ENGINES) + " |")
    L.append("")
    L.append("brisk forward passes per timed call: " + ", ".join(
        f"{r['task']} {r['b']}x{r['t']} {np.mean(r['passes']):.2f}" for r in res["speed"]))
    L += ["", "Agreement with Hugging Face transformers (eager fp32) logits:", "",
          "| model | inputs | max abs logit (HF) | brisk max abs diff | ORT max abs diff | brisk agree | ORT agree |",
          "|---|---|---|---|---|---|---|"]
    a = res["accuracy"]
    if "logits" in a:
        x = a["logits"]
        L.append(f"| minilm-cls | {x['n']} held-out sentences | {x['ref_max_abs']:.3f} | {x['brisk_max_abs_diff']:.2e} | "
                 f"{x['ort_max_abs_diff']:.2e} | top-1 {x['brisk_top1_agree']}/{x['n']} | "
                 f"top-1 {x['ort_top1_agree']}/{x['n']} |")
    if "rerank" in a:
        x = a["rerank"]
        L.append(f"| minilm-cross-encoder | {x['n']} pairs (8 queries x 8 passages) | {x['ref_max_abs']:.3f} | "
                 f"{x['brisk_max_abs_diff']:.2e} | {x['ort_max_abs_diff']:.2e} | order {x['brisk_rank_agree']}/8 "
                 f"queries | order {x['ort_rank_agree']}/8 queries |")
    L.append(END)
    return "\n".join(L) + "\n"


def write_section(path: Path, section: str) -> None:
    text = path.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.S)
    path.write_text(pattern.sub(lambda _: section, text, count=1) if pattern.search(text)
                    else text.rstrip("\n") + "\n\n" + section)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--driver", default=str(REPO / "build/cpu-only/benchmarks/brisk_task_driver"))
    p.add_argument("--cls-model", default=str(MODELS / "minilm-cls"))
    p.add_argument("--ce-model", default=str(MODELS / "minilm-cross-encoder"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--heldout", default=str(REPO / "benchmarks/data/heldout_sentences.txt"))
    p.add_argument("--workdir", default=str(Path.home() / ".cache/brisk/peers/tasks"))
    p.add_argument("--results", default=str(REPO / "benchmarks/RESULTS.md"))
    p.add_argument("--write", action="store_true", help="replace the tasks-peers section of --results")
    p.add_argument("--json-out")
    args = p.parse_args()
    if args.rounds < 1 or args.threads < 1:
        p.error(f"--rounds {args.rounds}, --threads {args.threads}; expected both >= 1")
    for flag, d in (("--cls-model", args.cls_model), ("--ce-model", args.ce_model)):
        if not (Path(d) / "config.json").is_file():
            p.error(f"{flag}: '{d}' has no config.json; run benchmarks/peers/make_task_models.py first")
    if not os.access(args.driver, os.X_OK):
        p.error(f"--driver: '{args.driver}' is not executable; build the brisk_task_driver target")
    from transformers import AutoTokenizer

    t_start = time.time()
    res = {"date": dt.datetime.now().strftime("%Y-%m-%d %H:%M"), "load_start": run_peers.load_average(), "speed": []}
    models = {"logits": Path(args.cls_model), "rerank": Path(args.ce_model)}
    tokenizer = AutoTokenizer.from_pretrained(args.cls_model)
    words = single_token_words(tokenizer, Path(args.heldout).read_text().splitlines())
    orts, fused = {}, {}
    for task, d in models.items():
        path, fused = export_optimized(d, Path(args.workdir), tokenizer)
        orts[task] = Ort(path, args.threads, rerank=(task == "rerank"))
        orts[task + "_nospin"] = Ort(path, args.threads, rerank=(task == "rerank"), spinning=False)
    log(f"ORT fused operators: {fused}")
    for task, b, t, n, warm in SHAPES:
        a, bb = speed_inputs(tokenizer, words, task, b, t)
        f = feeds(tokenizer, a, bb)
        if f["input_ids"].shape != (b, t) or int(f["attention_mask"].sum()) != b * t:
            raise RuntimeError(f"{task} {b}x{t}: the inputs tokenize to {f['input_ids'].shape}, expected ({b}, {t})")
        lines = lines_for(task, a, bb)
        times = {e: [] for e in ENGINES}
        passes = []
        for r in range(args.rounds):
            for e in ENGINES:
                if e.startswith("brisk"):
                    env = {"OMP_WAIT_POLICY": "passive"} if e == "brisk_passive" else {}
                    rep = brisk_driver(args, models[task], task, lines, ["--iters", str(n), "--warmup", str(warm)], env)
                    times[e] += [v / 1e3 for v in rep["samples_ms"]]
                    passes.append(rep["passes_per_call"])
                else:
                    times[e] += orts[task + ("_nospin" if e == "ort_nospin" else "")].samples(f, n, warm)
        row = {"task": task, "b": b, "t": t, "passes": passes, **{e: engines.summarize(times[e], b) for e in ENGINES}}
        log(f"{task} {b}x{t}: " + ", ".join(f"{e} {row[e]['seq_per_s']:.1f}" for e in ENGINES) + " seq/s")
        res["speed"].append(row)
    res["accuracy"] = accuracy(args, tokenizer, models, orts)
    log(f"accuracy: {res['accuracy']}")
    res["load_end"] = run_peers.load_average()
    vers = run_peers.versions()
    vers.pop("ctranslate2", None)
    command = "~/.cache/brisk/pyref/bin/python benchmarks/peers/task_peers.py " + shlex.join(sys.argv[1:])
    section = render(args, res, run_peers.machine_info(), vers, time.time() - t_start, command.strip(), fused)
    print(section)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(res, indent=2, default=float))
    if args.write:
        write_section(Path(args.results), section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
