#!/usr/bin/env python3
"""Tiny TorchScript modules and torch's own pruning results, the independent reference for brisk's TorchScript
pruning tests (tests/prune/torchscript_test.cc):

    ~/.cache/brisk/pyref/bin/python tests/data/make_tiny_torchscript.py

Writes tests/data/tiny_torchscript/:
  module.pt         a seeded transformer-ish block, forward(input_ids, attention_mask) -> mask-mean-pooled [B, H]:
                    Embedding -> Linear -> GELU -> Linear (+ residual) -> LayerNorm. It also holds an integer
                    parameter ("step", torch.long, requires_grad=False) and an integer buffer ("position_ids"),
                    which are not floating-point parameters and must never be pruned.
  three_inputs.pt   forward(input_ids, attention_mask, token_type_ids) -> {"last_hidden_state": [B, T, H],
                    "pooled": [B, H]} (a dict output, three inputs)
  four_inputs.pt    forward(a, b, c, d) -> a + b + c + d (too many inputs for token_inputs)
  golden.json       {"versions", "inputs", "parameters" (name, shape, dtype, in module order),
                     "reference" (module.pt's output), "l1": torch.nn.utils.prune.l1_unstructured(amount=0.3) on
                     ffn_in.weight then prune.remove, "global": prune.global_unstructured(L1Unstructured,
                     amount=0.4) over both Linear weights then prune.remove; each with "output", "zeros" (exact
                     zeros per floating parameter) and "zero_indices" (flat indices of the pruned weights' zeros),
                     "three_inputs": its inputs and outputs}

Everything runs in float32 under torch.no_grad, on CPU, with fixed seeds: a rerun writes the same weights and the
same golden.json (the archives' generated code may list a module's constants in another order, after Python's
string hash seed).
"""
import json
import os
import platform
from typing import Dict

import torch
import torch.nn.functional as F
import torch.nn.utils.prune as prune
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "tiny_torchscript")
VOCAB, HIDDEN, INTER, MAX_LEN = 32, 16, 32, 16

# Three right-padded sequences (pad id 0, mask 0), as brisk's token_inputs builds them.
INPUT_IDS = [[1, 5, 7, 9, 2, 0], [1, 19, 3, 3, 8, 2], [1, 30, 2, 0, 0, 0]]
ATTENTION_MASK = [[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]]
TOKEN_TYPE_IDS = [[0, 0, 0, 1, 1, 0], [0, 0, 0, 0, 1, 1], [0, 1, 1, 0, 0, 0]]


class TinyBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.ffn_in = nn.Linear(HIDDEN, INTER)
        self.ffn_out = nn.Linear(INTER, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)
        self.step = nn.Parameter(torch.zeros(3, dtype=torch.long), requires_grad=False)
        self.register_buffer("position_ids", torch.arange(MAX_LEN, dtype=torch.long))

    def hidden(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(input_ids)
        return self.norm(x + self.ffn_out(F.gelu(self.ffn_in(x))))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.hidden(input_ids)
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp(min=1.0)


class ThreeInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.types = nn.Embedding(2, HIDDEN)
        self.dense = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor) -> Dict[str, torch.Tensor]:
        h = torch.tanh(self.dense(self.embed(input_ids) + self.types(token_type_ids)))
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        return {"last_hidden_state": h, "pooled": (h * m).sum(1) / m.sum(1).clamp(min=1.0)}


class FourInputs(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        return a + b + c + d


def versions():
    return {"python": platform.python_version(), "torch": torch.__version__}


def floats(t):
    return [float(f"{v:.9g}") for v in t.reshape(-1).tolist()]


def widen(module):
    # Default initialisations are small; N(0, 0.5) weights make the outputs depend visibly on every weight.
    with torch.no_grad():
        for p in module.parameters():
            if p.is_floating_point():
                p.normal_(0.0, 0.5)


def pruned_record(module, ids, mask, pruned_names):
    params = dict(module.named_parameters())
    with torch.no_grad():
        out = module(ids, mask)
    return {
        "output": floats(out),
        "zeros": {n: int((p == 0).sum()) for n, p in params.items() if p.is_floating_point()},
        "zero_indices": {n: (params[n].reshape(-1) == 0).nonzero().reshape(-1).tolist() for n in pruned_names},
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(20261203)
    block = TinyBlock().eval()
    widen(block)
    ids = torch.tensor(INPUT_IDS, dtype=torch.long)
    mask = torch.tensor(ATTENTION_MASK, dtype=torch.long)
    types = torch.tensor(TOKEN_TYPE_IDS, dtype=torch.long)

    scripted = torch.jit.script(block)
    scripted.save(os.path.join(OUT, "module.pt"))
    with torch.no_grad():
        reference = block(ids, mask)
        assert torch.allclose(scripted(ids, mask), reference)
    golden = {
        "versions": versions(),
        "inputs": {"input_ids": INPUT_IDS, "attention_mask": ATTENTION_MASK, "token_type_ids": TOKEN_TYPE_IDS},
        "output_shape": list(reference.shape),
        "parameters": [{"name": n, "shape": list(p.shape), "dtype": str(p.dtype).replace("torch.", "")}
                       for n, p in block.named_parameters()],
        "reference": floats(reference),
    }

    # l1_unstructured on one Linear weight, made permanent with prune.remove.
    one = TinyBlock().eval()
    one.load_state_dict(block.state_dict())
    prune.l1_unstructured(one.ffn_in, name="weight", amount=0.3)
    prune.remove(one.ffn_in, "weight")
    golden["l1"] = {"parameter": "ffn_in.weight", "amount": 0.3, **pruned_record(one, ids, mask, ["ffn_in.weight"])}

    # global_unstructured over both Linear weights.
    both = TinyBlock().eval()
    both.load_state_dict(block.state_dict())
    targets = [(both.ffn_in, "weight"), (both.ffn_out, "weight")]
    prune.global_unstructured(targets, pruning_method=prune.L1Unstructured, amount=0.4)
    for m, n in targets:
        prune.remove(m, n)
    golden["global"] = {"parameters": ["ffn_in.weight", "ffn_out.weight"], "amount": 0.4,
                        **pruned_record(both, ids, mask, ["ffn_in.weight", "ffn_out.weight"])}

    torch.manual_seed(7)
    three = ThreeInputs().eval()
    widen(three)
    three_scripted = torch.jit.script(three)
    three_scripted.save(os.path.join(OUT, "three_inputs.pt"))
    with torch.no_grad():
        outs = three(ids, mask, types)
    golden["three_inputs"] = {"outputs": {k: {"shape": list(v.shape), "values": floats(v)} for k, v in outs.items()}}

    torch.jit.script(FourInputs().eval()).save(os.path.join(OUT, "four_inputs.pt"))

    with open(os.path.join(OUT, "golden.json"), "w") as f:
        json.dump(golden, f)
        f.write("\n")


if __name__ == "__main__":
    main()
