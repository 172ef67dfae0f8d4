#!/usr/bin/env python3
"""Golden data for brisk's structured pruning, from Hugging Face transformers' own head pruning (prune_heads).

    ~/.cache/brisk/pyref/bin/python tests/data/make_pruned_golden.py

Writes:
  tiny_bert4/               a random 3-layer BERT with 4 heads a layer (hidden 16, intermediate 32), and
                            golden_hidden.json: its last hidden states
  tiny_bert4_pruned_hf/     the same model after model.prune_heads(PRUNED_HEADS), saved by save_pretrained (its
                            config.json carries "pruned_heads"), reloaded by from_pretrained, and golden_hidden.json
                            from the reloaded model

golden_hidden.json: {"versions": {...}, "pruned_heads": {...}, "items": [{"ids", "token_type_ids",
"hidden": [[...] per token]}]}, each sequence run alone under torch.no_grad in float32.
"""
import json
import os
import platform

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
PRUNED_HEADS = {0: [1, 3], 2: [0]}
SEQUENCES = [
    ([1, 5, 7, 2], [0, 0, 0, 0]),
    ([1, 19, 3, 3, 8, 11, 2], [0, 0, 0, 1, 1, 1, 1]),
    ([1] + list(range(3, 17)) + [2], [0] * 8 + [1] * 8),
]


def versions():
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__}


def write_golden(model, folder):
    items = []
    with torch.no_grad():
        for ids, types in SEQUENCES:
            hidden = model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types])).last_hidden_state[0]
            items.append({"ids": ids, "token_type_ids": types,
                          "hidden": [[float(f"{v:.8g}") for v in row] for row in hidden.tolist()]})
    pruned = {str(k): sorted(v) for k, v in model.config.pruned_heads.items()}
    with open(os.path.join(folder, "golden_hidden.json"), "w") as f:
        json.dump({"versions": versions(), "pruned_heads": pruned, "items": items}, f)
        f.write("\n")


def main():
    torch.manual_seed(2024)
    config = transformers.BertConfig(vocab_size=20, hidden_size=16, num_hidden_layers=3, num_attention_heads=4,
                                     intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
    with torch.no_grad():  # BERT initialises with std 0.02; widen so that every head matters to the output
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    full_dir = os.path.join(HERE, "tiny_bert4")
    model.save_pretrained(full_dir, safe_serialization=True)
    write_golden(model, full_dir)

    model.prune_heads(PRUNED_HEADS)
    pruned_dir = os.path.join(HERE, "tiny_bert4_pruned_hf")
    model.save_pretrained(pruned_dir, safe_serialization=True)
    reloaded = transformers.BertModel.from_pretrained(pruned_dir, add_pooling_layer=False).eval()
    write_golden(reloaded, pruned_dir)
    print("versions:", versions())


if __name__ == "__main__":
    main()
