#!/usr/bin/env python3
"""Golden last hidden states for brisk's encoder tests, from Hugging Face transformers, on two tiny models:

  tiny_bert/            the random BERT written by make_tiny_checkpoint.py (gelu, token types)
  tiny_distilbert/      a random DistilBERT written here with save_pretrained (relu, no token types)

    ~/.cache/brisk/pyref/bin/python tests/data/make_tiny_golden.py

Each model folder gets golden_hidden.json: {"versions": {...}, "items": [{"ids", "token_type_ids",
"hidden": [[...] per token]}]}, every sequence run alone (no padding) under torch.no_grad in float32.
"""
import json
import os
import platform

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
SEQUENCES = [
    ([1, 5, 7, 2], [0, 0, 0, 0]),
    ([1, 19, 3, 3, 8, 11, 2], [0, 0, 0, 1, 1, 1, 1]),
    ([1, 2], [0, 0]),
    ([1] + list(range(3, 17)) + [2], [0] * 8 + [1] * 8),  # 16 tokens: max_position_embeddings
]


def versions():
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__}


def write_golden(model, folder, use_token_types):
    items = []
    with torch.no_grad():
        for ids, types in SEQUENCES:
            kwargs = {"input_ids": torch.tensor([ids])}
            if use_token_types:
                kwargs["token_type_ids"] = torch.tensor([types])
            hidden = model(**kwargs).last_hidden_state[0]
            items.append({"ids": ids, "token_type_ids": types if use_token_types else [],
                          "hidden": [[float(f"{v:.8g}") for v in row] for row in hidden.tolist()]})
    with open(os.path.join(folder, "golden_hidden.json"), "w") as f:
        json.dump({"versions": versions(), "items": items}, f)
        f.write("\n")


def main():
    bert_dir = os.path.join(HERE, "tiny_bert")
    bert = transformers.BertModel.from_pretrained(bert_dir, add_pooling_layer=False).eval()
    write_golden(bert, bert_dir, use_token_types=True)

    torch.manual_seed(4321)
    config = transformers.DistilBertConfig(vocab_size=20, dim=8, n_layers=2, n_heads=2, hidden_dim=16,
                                           max_position_embeddings=16, activation="relu", dropout=0.0,
                                           attention_dropout=0.0)
    distil = transformers.DistilBertModel(config).eval()
    with torch.no_grad():  # DistilBERT initialises small; widen the weights so the test is sensitive
        for p in distil.parameters():
            p.normal_(0.0, 0.5)
    distil_dir = os.path.join(HERE, "tiny_distilbert")
    distil.save_pretrained(distil_dir, safe_serialization=True)
    write_golden(distil, distil_dir, use_token_types=False)
    print("versions:", versions())


if __name__ == "__main__":
    main()
