#!/usr/bin/env python3
"""Tiny random Qwen3 and Qwen2 decoder embedders and golden outputs from Hugging Face transformers, for brisk's
decoder tests.

    ~/.cache/brisk/qwenref/bin/python tests/data/make_tiny_qwen.py     # rewrites tests/data/tiny_qwen{3,2}/

The venv: transformers 4.44 (pyref) has no Qwen3, and transformers >= 4.51 needs torch >= 2, which Debian's
python3-torch is not, so it is a venv of its own:
    /usr/bin/python3 -m venv ~/.cache/brisk/qwenref
    ~/.cache/brisk/qwenref/bin/pip install "torch==2.6.0" "transformers==4.51.3" "numpy<2"

Outputs (fixed seeds, float32, eager attention, everything under torch.no_grad):
  tiny_qwen3/model.safetensors, config.json   Qwen3Model as Qwen3-Embedding ships it (tensor names without a
      "model." prefix): q/k RMSNorms per head, no attention biases, grouped-query attention (4 query heads, 2 KV
      heads) with head_dim 16, so that the attention width (64) differs from hidden (32).
  tiny_qwen3/tokenizer.json, tokenizer_config.json   tiny_qwen_tokenizer/'s byte-level BPE with Qwen3-Embedding's
      post-processor (<|endoftext|> appended to every text; tokenizer_eos.json there).
  tiny_qwen3/modules.json, 1_Pooling/config.json (lasttoken), 2_Normalize, sentence_bert_config.json,
      config_sentence_transformers.json   Qwen3-Embedding's sentence-transformers layout, with its query prompt.
  tiny_qwen3/golden_qwen3.json   {"versions", "query_prompt", "items": [{"line", "text", "prompt", "ids",
      "hidden": [[32 floats] per token], "last_token": [32 floats], "normalized": [32 floats]}], "batch": {...}}.
      Items run alone; "prompt" true means the text was the query prompt + the line (what sentence-transformers'
      encode(prompt_name="query") tokenizes). "batch" is the same texts left-padded into one batch with an
      attention mask (as Qwen3-Embedding pads): "hidden" holds each text's real rows, "last_token" the pooled rows.
  tiny_qwen2/...   Qwen2Model (gte-Qwen2's family): biases on q/k/v, no q/k norms, head_dim = hidden / heads;
      golden_qwen2.json holds "items" only.
  tiny_qwen3_reranker/   Qwen3ForSequenceClassification with one label (the cross-encoder form of Qwen3-Reranker:
      "model."-prefixed body, score.weight, no bias), pad_token_id 0 (<|endoftext|>, which the template appends, so
      transformers' head reads the token before it); golden_qwen3_reranker.json {"versions", "pairs": [{"query",
      "document", "ids", "logit", "logit_without_pad_token_id"}], "texts": [{"text", "ids", "logit",
      "logit_without_pad_token_id"}]}: each input alone; the second logit with config.pad_token_id = None (the head on
      the last token whatever its id).

Shapes: hidden 32, 2 layers, intermediate 48, silu, vocab = the tokenizer's (1200), max_position 128, rope_theta
1e6 (Qwen3's), rms_norm_eps 1e-6. On top of the model's own init, every RMSNorm weight gets N(0, 0.1) noise and
every bias N(0, 0.05) so that none is trivially 1 or 0. Floats in the JSON are rounded to 7 significant digits.
"""
import json
import os
import platform
import shutil

import safetensors
import tokenizers
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER_DIR = os.path.join(HERE, "tiny_qwen_tokenizer")
TEXTS_FILE = os.path.join(HERE, "multilingual_texts.txt")
# 1-based lines of multilingual_texts.txt: English, French, Russian, Chinese, Portuguese, a long English line,
# a line holding only U+200C, ligatures, Arabic, Hindi.
LINES = [1, 50, 120, 200, 300, 410, 500, 600, 144, 166]
PROMPT_LINES = [1, 200]  # also encoded as queries, with the prompt in front
QUERY_PROMPT = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"
MAX_LEN = 96
HIDDEN = 32


def versions():
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "safetensors": safetensors.__version__}


def r7(values):
    if isinstance(values, list):
        return [r7(v) for v in values]
    return float(f"{values:.7g}")


def write_json(path, obj, indent=None):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=indent)
        f.write("\n")


def perturb(model, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn(p.shape, generator=gen) * 0.1)
            elif name.endswith(".bias"):
                p.add_(torch.randn(p.shape, generator=gen) * 0.05)


def write_tokenizer(folder):
    shutil.copyfile(os.path.join(TOKENIZER_DIR, "tokenizer_eos.json"), os.path.join(folder, "tokenizer.json"))
    shutil.copyfile(os.path.join(TOKENIZER_DIR, "tokenizer_config.json"),
                    os.path.join(folder, "tokenizer_config.json"))


def write_sentence_transformers(folder):
    write_json(os.path.join(folder, "modules.json"), [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ], indent=2)
    os.makedirs(os.path.join(folder, "1_Pooling"), exist_ok=True)
    os.makedirs(os.path.join(folder, "2_Normalize"), exist_ok=True)
    write_json(os.path.join(folder, "1_Pooling", "config.json"), {
        "word_embedding_dimension": HIDDEN,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": False,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": True,
        "include_prompt": True,
    }, indent=2)
    write_json(os.path.join(folder, "sentence_bert_config.json"),
               {"max_seq_length": MAX_LEN, "do_lower_case": False}, indent=2)
    write_json(os.path.join(folder, "config_sentence_transformers.json"), {
        "prompts": {"query": QUERY_PROMPT, "document": ""},
        "default_prompt_name": None,
        "similarity_fn_name": "cosine",
    }, indent=2)


def read_texts():
    with open(TEXTS_FILE, encoding="utf-8") as f:
        lines = f.read().split("\n")
    return [(n, lines[n - 1], False) for n in LINES] + [(n, QUERY_PROMPT + lines[n - 1], True) for n in PROMPT_LINES]


RERANK_PAIRS = [  # (query line, document line): a match, a near miss and other scripts
    (1, 2), (1, 410), (200, 201), (120, 50), (300, 600), (144, 166)]


def make_model(kind, vocab_size):
    common = dict(vocab_size=vocab_size, hidden_size=HIDDEN, intermediate_size=48, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, rope_theta=1e6,
                  rms_norm_eps=1e-6, hidden_act="silu", tie_word_embeddings=True, bos_token_id=0, eos_token_id=0,
                  attention_dropout=0.0, use_sliding_window=False, attn_implementation="eager")
    if kind == "qwen3":
        config = transformers.Qwen3Config(head_dim=16, attention_bias=False, **common)
        return transformers.Qwen3Model(config)
    if kind == "qwen3_reranker":
        config = transformers.Qwen3Config(head_dim=16, attention_bias=False, num_labels=1, pad_token_id=0, **common)
        return transformers.Qwen3ForSequenceClassification(config)
    config = transformers.Qwen2Config(**common)
    return transformers.Qwen2Model(config)


def make_reranker(tok, vocab_size):
    """The tiny cross-encoder and its logits, alone per input, with and without config.pad_token_id."""
    torch.manual_seed(30)
    model = make_model("qwen3_reranker", vocab_size).eval()
    perturb(model, 31)
    with torch.no_grad():
        model.score.weight.mul_(20.0)  # logits of order 1, not 0.05: a wrong token shows
    folder = os.path.join(HERE, "tiny_qwen3_reranker")
    model.save_pretrained(folder, safe_serialization=True)
    write_tokenizer(folder)
    with open(TEXTS_FILE, encoding="utf-8") as f:
        lines = f.read().split("\n")

    def logits(enc):
        with torch.no_grad():
            with_pad = model(input_ids=enc["input_ids"]).logits[0, 0].item()
            model.config.pad_token_id = None
            without = model(input_ids=enc["input_ids"]).logits[0, 0].item()
            model.config.pad_token_id = 0
        return r7(with_pad), r7(without)

    pairs, texts = [], []
    for q, d in RERANK_PAIRS:
        enc = tok(lines[q - 1], lines[d - 1], truncation=True, max_length=MAX_LEN, return_tensors="pt")
        with_pad, without = logits(enc)
        pairs.append({"query": lines[q - 1], "document": lines[d - 1], "ids": enc["input_ids"][0].tolist(),
                      "logit": with_pad, "logit_without_pad_token_id": without})
    for n in LINES[:4]:
        enc = tok(lines[n - 1], truncation=True, max_length=MAX_LEN, return_tensors="pt")
        with_pad, without = logits(enc)
        texts.append({"text": lines[n - 1], "ids": enc["input_ids"][0].tolist(), "logit": with_pad,
                      "logit_without_pad_token_id": without})
    assert any(abs(p["logit"] - p["logit_without_pad_token_id"]) > 0.05 for p in pairs), "the token must matter"
    write_json(os.path.join(folder, "golden_qwen3_reranker.json"),
               {"versions": versions(), "pairs": pairs, "texts": texts})
    print("qwen3_reranker: logits", [p["logit"] for p in pairs], [t["logit"] for t in texts])


def main():
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=os.path.join(TOKENIZER_DIR, "tokenizer_eos.json"))
    tok.pad_token = "<|endoftext|>"  # Qwen's padding token
    vocab_size = len(tok)
    texts = read_texts()
    print("versions:", versions())
    for seed, kind in ((10, "qwen3"), (20, "qwen2")):
        torch.manual_seed(seed)
        model = make_model(kind, vocab_size).eval()
        perturb(model, seed + 1)
        folder = os.path.join(HERE, f"tiny_{kind}")
        model.save_pretrained(folder, safe_serialization=True)
        write_tokenizer(folder)
        if kind == "qwen3":
            write_sentence_transformers(folder)
        items, alone = [], []
        with torch.no_grad():
            for line, text, prompt in texts:
                enc = tok(text, truncation=True, max_length=MAX_LEN, return_tensors="pt")
                ids = enc["input_ids"]
                assert ids[0, -1].item() == 0, "the template appends <|endoftext|>"
                hidden = model(input_ids=ids).last_hidden_state[0]
                last = hidden[-1]
                alone.append(hidden)
                items.append({"line": line, "text": text, "prompt": prompt, "ids": ids[0].tolist(),
                              "hidden": r7(hidden.tolist()), "last_token": r7(last.tolist()),
                              "normalized": r7(torch.nn.functional.normalize(last, dim=0).tolist())})
            golden = {"versions": versions(), "query_prompt": QUERY_PROMPT, "items": items}
            if kind == "qwen3":
                tok.padding_side = "left"
                batch = tok([t for _, t, _ in texts], truncation=True, max_length=MAX_LEN, padding=True,
                            return_tensors="pt")
                out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
                rows, lasts, max_diff = [], [], 0.0
                for i, item in enumerate(items):
                    n = int(batch["attention_mask"][i].sum())
                    assert batch["input_ids"][i, -n:].tolist() == item["ids"], "padding must be on the left"
                    real = out[i, -n:]
                    max_diff = max(max_diff, float((real - alone[i]).abs().max()))
                    rows.append(r7(real.tolist()))
                    lasts.append(r7(out[i, -1].tolist()))
                assert max_diff < 1e-4, max_diff
                golden["batch"] = {"input_ids": batch["input_ids"].tolist(),
                                   "attention_mask": batch["attention_mask"].tolist(), "hidden": rows,
                                   "last_token": lasts, "max_abs_diff_vs_alone": max_diff}
                print(f"{kind}: max |left-padded batch - alone| {max_diff:.3g}")
        write_json(os.path.join(folder, f"golden_{kind}.json"), golden)
        with safetensors.safe_open(os.path.join(folder, "model.safetensors"), framework="pt") as f:
            print(f"tiny_{kind}/model.safetensors:", sorted(f.keys())[:12], "...")
        print(f"{kind}: ids per text:", [len(it["ids"]) for it in items])
    make_reranker(tok, vocab_size)


if __name__ == "__main__":
    main()
