#!/usr/bin/env python3
"""A model directory written by `brisk prune` loads in Hugging Face transformers 4.x (config.pruned_heads, a uniform
feed-forward width as intermediate_size) and gives the same sentence embeddings as brisk: all-MiniLM-L6-v2, and the
tiny XLM-RoBERTa of tests/data/make_tiny_xlmr.py (positions after the padding id, its Unigram tokenizer.json).

    ~/.cache/brisk/pyref/bin/python tests/cli/hf_pruned_check.py BRISK_BINARY
Needs torch and transformers (the reference venv); exits non-zero on any mismatch."""
import json
import os
import subprocess
import sys
import tempfile

import torch
import transformers

TEXTS = ["How do I block my card?", "opening hours of the branch", "The train to Lyon leaves at 7:45.",
         "my laptop will not connect to the office wifi since the update"]


def main():
    brisk = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    calib_lines = open(os.path.join(here, "../../benchmarks/data/calibration_texts.txt"), encoding="utf-8").read()
    with tempfile.TemporaryDirectory() as tmp:
        calib = os.path.join(tmp, "calib.txt")
        with open(calib, "w", encoding="utf-8") as f:
            f.write("\n".join(calib_lines.splitlines()[:16]) + "\n")
        out = os.path.join(tmp, "pruned")
        r = subprocess.run([brisk, "prune", "--calib", calib, "--heads", "0.25", "--ffn", "0.2", "--units",
                            "encoder.layer.5.attention.head.0", "--reconstruct", "--out", out, "--threads", "2"],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            print("brisk prune failed:", r.stderr)
            return 1
        r = subprocess.run([brisk, "embed", "--model", out, "--threads", "2"] + TEXTS, capture_output=True, text=True,
                           timeout=600)
        ours = torch.tensor([json.loads(line)["embedding"] for line in r.stdout.splitlines()])

        model = transformers.BertModel.from_pretrained(out, add_pooling_layer=False).eval()
        tok = transformers.AutoTokenizer.from_pretrained(out)
        heads = {int(k): sorted(v) for k, v in model.config.pruned_heads.items()}
        q = model.encoder.layer[5].attention.self.query.weight
        with torch.no_grad():
            batch = tok(TEXTS, padding=True, truncation=True, max_length=128, return_tensors="pt")
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            theirs = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
        diff = (ours - theirs).abs().max().item()
        print(f"transformers {transformers.__version__}: pruned_heads {heads}; layer 5 query {tuple(q.shape)}; "
              f"intermediate {model.config.intermediate_size}; max |brisk - transformers| = {diff:.2e}")
        ok = (len(heads) == 6 and all(len(h) == 3 for l, h in heads.items() if l != 5) and 0 in heads[5]
              and tuple(q.shape) == (32 * len([h for h in range(12) if h not in heads[5]]), 384)
              and model.config.intermediate_size == 1229 and diff < 1e-4)
        ok = ok and check_xlmr(brisk, calib, tmp)
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1


def check_xlmr(brisk, calib, tmp):
    here = os.path.dirname(os.path.abspath(__file__))
    model = os.path.join(here, "../data/tiny_xlmr")
    texts = ["How do I block my card?", "Как заблокировать карту?", "如何冻结我的银行卡？", "Wie sperre ich meine Karte?"]
    out = os.path.join(tmp, "pruned_xlmr")
    r = subprocess.run([brisk, "prune", "--model", model, "--calib", calib, "--heads", "0.25", "--ffn", "0.25",
                        "--out", out, "--threads", "2"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print("brisk prune (xlm-roberta) failed:", r.stderr)
        return False
    r = subprocess.run([brisk, "embed", "--model", out, "--threads", "2"] + texts, capture_output=True, text=True,
                       timeout=600)
    ours = torch.tensor([json.loads(line)["embedding"] for line in r.stdout.splitlines()])
    m = transformers.XLMRobertaModel.from_pretrained(out, add_pooling_layer=False).eval()
    tok = transformers.AutoTokenizer.from_pretrained(out)
    with torch.no_grad():
        batch = tok(texts, padding=True, truncation=True, max_length=64, return_tensors="pt")
        hidden = m(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        theirs = (hidden * mask).sum(1) / mask.sum(1)  # the tiny model's pooling: mean, no Normalize module
    diff = (ours - theirs).abs().max().item()
    heads = {int(k): sorted(v) for k, v in m.config.pruned_heads.items()}
    print(f"xlm-roberta: pruned_heads {heads}; intermediate {m.config.intermediate_size}; "
          f"max |brisk - transformers| = {diff:.2e}")
    return len(heads) == 2 and m.config.intermediate_size == 48 and diff < 1e-4


if __name__ == "__main__":
    sys.exit(main())
