#!/usr/bin/env python3
"""An XLM-RoBERTa encoder of paraphrase-multilingual-MiniLM-L12-v2's shape with random weights, for timing brisk
against the peers on the XLM-R family where no real checkpoint is installed (none is: the machines that build brisk
reach no model hub).

    ~/.cache/brisk/pyref/bin/python benchmarks/peers/make_xlmr_bench_model.py [OUT_DIR]
    scripts/peers --model ~/.cache/brisk/models/xlmr-minilm-shape --shapes 32x128,1x16

Shape: hidden 384, 12 heads, intermediate 1536, gelu, 514 positions (512 tokens), type_vocab 1, and `--layers`
layers (default 6, all-MiniLM-L6-v2's depth, so the figures compare with the BERT rows; the real model has 12).
The vocabulary is the tiny SentencePiece Unigram of tests/data/tiny_xlmr_tokenizer (1,502 pieces, not 250,002):
the word-embedding lookup is a gather whose cost does not depend on the table's size, and the tokenizer is the
real XLM-R pipeline (Precompiled charsmap, Metaspace). Mean pooling files as the sentence-transformers model has.
Random weights (seed 0, transformers' init): the accuracy columns compare each engine with transformers on the same
weights, not the quality of a trained model.
"""
import argparse
import json
import os
import platform

import torch
import transformers

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "data", "tiny_xlmr_tokenizer")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", nargs="?", default=os.path.expanduser("~/.cache/brisk/models/xlmr-minilm-shape"))
    p.add_argument("--layers", type=int, default=6)
    args = p.parse_args()
    tok = transformers.AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    config = transformers.XLMRobertaConfig(
        vocab_size=len(tok), hidden_size=384, num_hidden_layers=args.layers, num_attention_heads=12,
        intermediate_size=1536, hidden_act="gelu", max_position_embeddings=514, type_vocab_size=1, pad_token_id=1,
        bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5)
    torch.manual_seed(0)
    model = transformers.XLMRobertaModel(config, add_pooling_layer=False).eval()
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    tok.save_pretrained(args.out)
    with open(os.path.join(args.out, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}], f)
    os.makedirs(os.path.join(args.out, "1_Pooling"), exist_ok=True)
    with open(os.path.join(args.out, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True}, f)
    with open(os.path.join(args.out, "versions.json"), "w") as f:
        json.dump({"python": platform.python_version(), "torch": torch.__version__,
                   "transformers": transformers.__version__}, f)
    print(f"wrote {args.out}: {args.layers} layers, vocab {len(tok)}")


if __name__ == "__main__":
    main()
