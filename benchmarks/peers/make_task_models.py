#!/usr/bin/env python3
"""Real-size task models for the task benchmarks (benchmarks/peers/task_peers.py, brisk_task_driver,
brisk_torchscript_load), built from the real all-MiniLM-L6-v2 weights.

Writes, under ~/.cache/brisk/models (or --out-root):
  minilm-cls/            BertForSequenceClassification, 12 banking intents (the labels of
                         examples/intent_router/data/train.tsv); safetensors + tokenizer files, and model.pt: a
                         torch.jit.trace of forward(input_ids, attention_mask, token_type_ids) -> logits
  minilm-cross-encoder/  the same encoder with num_labels=1 (a cross-encoder's shape); safetensors + tokenizer
  minilm-ts/             model.pt: a trace of the MiniLM encoder, forward(...) -> last_hidden_state, with the
                         tokenizer, config.json and sentence-transformers pooling files of all-MiniLM-L6-v2
  task_models.json       versions, seed, and each trace's max abs difference from eager PyTorch at a second shape

The classification heads are randomly initialised (torch.manual_seed(--seed), weights and bias N(0, 1), so that the
logits are of order 1-10 as a trained head's are): these models are for speed and for agreement between engines on
the same weights, not for task accuracy; speed does not depend on the head's values.

  ~/.cache/brisk/pyref/bin/python benchmarks/peers/make_task_models.py [--minilm DIR] [--out-root DIR] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
from pathlib import Path

import torch
import transformers
from transformers import AutoModel, AutoTokenizer, BertForSequenceClassification

INTENTS = ["balance", "card_declined", "card_lost", "close_account", "loan_rates", "open_account", "opening_hours",
           "refund", "reset_pin", "statement", "transfer", "update_address"]
TOKENIZER_FILES = ["vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]


class LogitsOnly(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                          return_dict=False)[0]


def feeds(tokenizer, texts, pairs=None):
    enc = tokenizer(texts, pairs, padding=True, truncation=True, max_length=128, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]


def trace(module, tokenizer, path: Path) -> float:
    """Traces `module` on a 2 x 9 batch, saves it, and returns its max abs difference from eager at another shape
    (3 texts of different lengths, padded), so that a trace fixed to its example shape is caught here."""
    module.eval()
    with torch.no_grad():
        traced = torch.jit.trace(module, feeds(tokenizer, ["hello world", "a slightly longer example text"]),
                                 check_trace=False)
        args = feeds(tokenizer, ["one", "where is the nearest branch open on sunday", "my card was stolen"],
                     ["two", "", "block it now please"])
        diff = float((traced(*args) - module(*args)).abs().max())
    traced.save(str(path))
    return diff


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minilm", default=str(Path.home() / ".cache/brisk/models/all-MiniLM-L6-v2"))
    p.add_argument("--out-root", default=str(Path.home() / ".cache/brisk/models"))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    src, root = Path(args.minilm), Path(args.out_root)
    if not (src / "config.json").is_file():
        p.error(f"--minilm: '{src}' has no config.json; expected the all-MiniLM-L6-v2 directory (scripts/setup)")
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(src)
    record = {"versions": {"python": platform.python_version(), "torch": torch.__version__,
                           "transformers": transformers.__version__},
              "source": str(src), "seed": args.seed, "models": {}}

    for name, labels in (("minilm-cls", INTENTS), ("minilm-cross-encoder", ["LABEL_0"])):
        out = root / name
        out.mkdir(parents=True, exist_ok=True)
        model = BertForSequenceClassification.from_pretrained(
            src, num_labels=len(labels), id2label=dict(enumerate(labels)),
            label2id={l: i for i, l in enumerate(labels)}, attn_implementation="eager")
        with torch.no_grad():  # N(0, 1) instead of HF's N(0, 0.02): logits of order 1-10, so that the agreement
            model.classifier.weight.normal_(0.0, 1.0)  # checks compare numbers of a realistic size
            model.classifier.bias.normal_(0.0, 1.0)
        model.eval()
        model.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)
        entry = {"num_labels": len(labels), "labels": labels}
        if name == "minilm-cls":
            entry["model.pt max abs diff vs eager"] = trace(LogitsOnly(model), tokenizer, out / "model.pt")
        record["models"][name] = entry

    ts = root / "minilm-ts"
    ts.mkdir(parents=True, exist_ok=True)
    for f in TOKENIZER_FILES + ["config.json", "modules.json", "sentence_bert_config.json"]:
        if (src / f).exists():
            shutil.copy2(src / f, ts / f)
    if (src / "1_Pooling").is_dir():
        shutil.copytree(src / "1_Pooling", ts / "1_Pooling", dirs_exist_ok=True)
    encoder = AutoModel.from_pretrained(src, attn_implementation="eager")
    record["models"]["minilm-ts"] = {
        "output": "last_hidden_state",
        "model.pt max abs diff vs eager": trace(LogitsOnly(encoder), tokenizer, ts / "model.pt")}

    (root / "task_models.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
