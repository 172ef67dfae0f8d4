#!/usr/bin/env python3
"""Tiny random XLM-RoBERTa models and golden outputs from Hugging Face transformers, for brisk's XLM-R tests.

    ~/.cache/brisk/pyref/bin/python tests/data/make_tiny_xlmr.py     # rewrites tests/data/tiny_xlmr{,_cls}/

Outputs (fixed seeds, float32, everything run under torch.no_grad):
  tiny_xlmr/model.safetensors, config.json   XLMRobertaModel (with its pooler, as real XLM-R checkpoints have;
      the encoder must ignore pooler.*), tensor names without a "roberta." prefix.
  tiny_xlmr/tokenizer.json, tokenizer_config.json, special_tokens_map.json   copied from tiny_xlmr_tokenizer/.
  tiny_xlmr/modules.json, 1_Pooling/config.json, sentence_bert_config.json   sentence-transformers layout,
      mean pooling, max_seq_length 64.
  tiny_xlmr/golden_xlmr.json   {"versions", "position_ids_first_text", "items": [{"line", "text", "ids",
      "hidden": [[32 floats] per token], "mean_pooled": [32 floats]}], "batch": {"input_ids", "attention_mask",
      "hidden": [per text, real tokens only], "mean_pooled", "max_abs_diff_vs_alone"}, "pad_items": [{"text", "ids",
      "position_ids", "hidden", "mean_pooled"}], "pad_batch_max_abs_diff_vs_alone"}. Items are each run alone (no
      padding); "batch" is the same texts as one right-padded batch with an attention mask. "pad_items" are texts
      with a literal "<pad>", which the tokenizer turns into the padding id 1: the model gives such a token
      position padding_idx and does not count it (create_position_ids_from_input_ids), their "position_ids"; each
      is run alone with an all-ones attention mask (the token is text, not padding: the tokenizer's own mask), and
      once more inside one right-padded batch with the first two texts (max |batch - alone| recorded).
  tiny_xlmr_cls/model.safetensors, config.json (+ the same tokenizer files)   XLMRobertaForSequenceClassification,
      3 labels, "roberta." prefix, no pooler, head classifier.dense -> tanh -> classifier.out_proj on <s>.
      Its encoder weights are the same as tiny_xlmr's; the head's two weight matrices are N(0, 0.3) instead of
      the 0.02 init, so that the logits depend on the text and the tanh is not a near-identity.
  tiny_xlmr_cls/golden_logits.json   {"versions", "id2label", "items": [{"line", "text", "ids", "logits"}]}.

Shapes: hidden 32, 4 heads, 2 layers, intermediate 64, gelu, vocab = the tokenizer's (1502), max_position 66
(= 64 tokens + padding_idx 1 + 1: XLM-R position ids start at padding_idx + 1 = 2), type_vocab 1.
On top of the model's own init, every LayerNorm weight/bias and every bias gets N(0, 0.05) noise so that none
is trivially 1 or 0. Floats in the JSON are rounded to 7 significant digits.
"""
import json
import os
import platform
import shutil

import safetensors
import tokenizers
import torch
import transformers
from safetensors import safe_open
from transformers.models.xlm_roberta.modeling_xlm_roberta import create_position_ids_from_input_ids

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER_DIR = os.path.join(HERE, "tiny_xlmr_tokenizer")
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]
TEXTS_FILE = os.path.join(HERE, "multilingual_texts.txt")
# 1-based lines of multilingual_texts.txt: English, French, Russian, Chinese, Portuguese, a long English line,
# a line holding only U+200C (encodes to <s></s>), ligatures; then Arabic (144) and Hindi (166), which the
# first eight lines lack.
LINES = [1, 50, 120, 200, 300, 410, 500, 600, 144, 166]
MAX_LEN = 64
# Texts holding a literal "<pad>": alone, twice in a row, at both ends, glued to words, and a longer text.
PAD_TEXTS = ["hello <pad> world", "<pad>", "<pad><pad> How do I reset my password? <pad>",
             "Wie setze ich<pad>meine PIN zurück?",
             "A longer question with <pad> in the middle, asked about my account, my card and my PIN <pad> again"]
HIDDEN = 32
ID2LABEL = {0: "negative", 1: "neutral", 2: "positive"}


def versions():
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "safetensors": safetensors.__version__}


def r7(values):
    """Rounds a (nested) list of floats to 7 significant digits."""
    if isinstance(values, list):
        return [r7(v) for v in values]
    return float(f"{values:.7g}")


def make_config(vocab_size, **extra):
    return transformers.XLMRobertaConfig(
        vocab_size=vocab_size, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=66, type_vocab_size=1, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, layer_norm_eps=1e-5, hidden_act="gelu", hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, **extra)


def perturb(model, seed):
    """Adds N(0, 0.05) to every LayerNorm weight/bias and every bias, in named_parameters order."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith(".bias"):
                p.add_(torch.randn(p.shape, generator=gen) * 0.05)


def tensor_names(folder):
    with safe_open(os.path.join(folder, "model.safetensors"), framework="pt") as f:
        return [(k, list(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()) for k in sorted(f.keys())]


def copy_tokenizer(folder):
    for name in TOKENIZER_FILES:
        shutil.copyfile(os.path.join(TOKENIZER_DIR, name), os.path.join(folder, name))


def write_json(path, obj, indent=None):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=indent)
        f.write("\n")


def write_sentence_transformers(folder):
    write_json(os.path.join(folder, "modules.json"), [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ], indent=2)
    os.makedirs(os.path.join(folder, "1_Pooling"), exist_ok=True)
    write_json(os.path.join(folder, "1_Pooling", "config.json"), {
        "word_embedding_dimension": HIDDEN,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": False,
    }, indent=2)
    write_json(os.path.join(folder, "sentence_bert_config.json"),
               {"max_seq_length": MAX_LEN, "do_lower_case": False}, indent=2)


def read_texts():
    with open(TEXTS_FILE, encoding="utf-8") as f:
        lines = f.read().split("\n")
    return [(n, lines[n - 1]) for n in LINES]


def main():
    vocab_size = tokenizers.Tokenizer.from_file(
        os.path.join(TOKENIZER_DIR, "tokenizer.json")).get_vocab_size(with_added_tokens=True)
    tok = transformers.XLMRobertaTokenizerFast.from_pretrained(TOKENIZER_DIR)
    texts = read_texts()

    # --- XLMRobertaModel -------------------------------------------------------------------------------
    torch.manual_seed(0)
    model = transformers.XLMRobertaModel(make_config(vocab_size)).eval()
    perturb(model, seed=1)
    xlmr_dir = os.path.join(HERE, "tiny_xlmr")
    model.save_pretrained(xlmr_dir, safe_serialization=True)
    copy_tokenizer(xlmr_dir)
    write_sentence_transformers(xlmr_dir)

    # --- XLMRobertaForSequenceClassification (same encoder weights) --------------------------------------
    torch.manual_seed(2)
    cls_config = make_config(vocab_size, num_labels=3, id2label=ID2LABEL,
                             label2id={v: k for k, v in ID2LABEL.items()},
                             problem_type="single_label_classification")
    cls = transformers.XLMRobertaForSequenceClassification(cls_config).eval()
    perturb(cls, seed=3)
    with torch.no_grad():  # the 0.02 init makes the head nearly linear and input-blind; widen it so tanh matters
        gen = torch.Generator().manual_seed(4)
        for w in (cls.classifier.dense.weight, cls.classifier.out_proj.weight):
            w.copy_(torch.randn(w.shape, generator=gen) * 0.3)
    encoder_state = {k: v for k, v in model.state_dict().items() if not k.startswith("pooler.")}
    missing, unexpected = cls.roberta.load_state_dict(encoder_state, strict=True)
    assert not missing and not unexpected
    cls_dir = os.path.join(HERE, "tiny_xlmr_cls")
    cls.save_pretrained(cls_dir, safe_serialization=True)
    copy_tokenizer(cls_dir)

    # --- goldens ------------------------------------------------------------------------------------------
    items, logit_items, alone_hidden, alone_mean = [], [], [], []
    with torch.no_grad():
        for line, text in texts:
            enc = tok(text, add_special_tokens=True, truncation=True, max_length=MAX_LEN, return_tensors="pt")
            ids = enc["input_ids"]
            hidden = model(input_ids=ids).last_hidden_state[0]
            mean = hidden.mean(dim=0)
            alone_hidden.append(hidden)
            alone_mean.append(mean)
            items.append({"line": line, "text": text, "ids": ids[0].tolist(),
                          "hidden": r7(hidden.tolist()), "mean_pooled": r7(mean.tolist())})
            logits = cls(input_ids=ids).logits[0]
            logit_items.append({"line": line, "text": text, "ids": ids[0].tolist(), "logits": r7(logits.tolist())})
            # Same ids through the classifier's encoder: must equal the base model's (shared weights).
            assert torch.equal(cls.roberta(input_ids=ids).last_hidden_state[0], hidden)

        first_ids = torch.tensor([items[0]["ids"]])
        position_ids_first = create_position_ids_from_input_ids(first_ids, model.config.pad_token_id)[0].tolist()

        batch = tok([t for _, t in texts], add_special_tokens=True, truncation=True, max_length=MAX_LEN,
                    padding=True, return_tensors="pt")
        batch_hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        batch_rows, batch_means, max_diff = [], [], 0.0
        for i, item in enumerate(items):
            n = int(batch["attention_mask"][i].sum())
            assert batch["input_ids"][i, :n].tolist() == item["ids"], "padding must be on the right"
            real = batch_hidden[i, :n]
            mask = batch["attention_mask"][i].unsqueeze(-1).to(batch_hidden.dtype)
            mean = (batch_hidden[i] * mask).sum(dim=0) / mask.sum()
            max_diff = max(max_diff, float((real - alone_hidden[i]).abs().max()),
                           float((mean - alone_mean[i]).abs().max()))
            batch_rows.append(r7(real.tolist()))
            batch_means.append(r7(mean.tolist()))
        assert max_diff < 1e-5, max_diff

        pad_items, pad_alone = [], []
        for text in PAD_TEXTS:
            enc = tok(text, add_special_tokens=True, truncation=True, max_length=MAX_LEN, return_tensors="pt")
            ids, mask = enc["input_ids"], enc["attention_mask"]
            assert int((ids == model.config.pad_token_id).sum()) > 0 and bool(mask.all()), (text, ids, mask)
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state[0]
            pad_alone.append(hidden)
            positions = create_position_ids_from_input_ids(ids, model.config.pad_token_id)[0].tolist()
            pad_items.append({"text": text, "ids": ids[0].tolist(), "position_ids": positions,
                              "hidden": r7(hidden.tolist()), "mean_pooled": r7(hidden.mean(dim=0).tolist())})
        mixed = PAD_TEXTS + [t for _, t in texts[:2]]
        pad_batch = tok(mixed, add_special_tokens=True, truncation=True, max_length=MAX_LEN, padding=True,
                        return_tensors="pt")
        pad_batch_hidden = model(**pad_batch).last_hidden_state
        pad_batch_diff = 0.0
        for i, want in enumerate(pad_alone + alone_hidden[:2]):
            n = int(pad_batch["attention_mask"][i].sum())
            assert n == want.shape[0], "padding must be on the right"
            pad_batch_diff = max(pad_batch_diff, float((pad_batch_hidden[i, :n] - want).abs().max()))
        assert pad_batch_diff < 1e-5, pad_batch_diff

    write_json(os.path.join(xlmr_dir, "golden_xlmr.json"), {
        "versions": versions(),
        "position_ids_first_text": position_ids_first,
        "items": items,
        "batch": {"input_ids": batch["input_ids"].tolist(), "attention_mask": batch["attention_mask"].tolist(),
                  "hidden": batch_rows, "mean_pooled": batch_means, "max_abs_diff_vs_alone": max_diff},
        "pad_items": pad_items,
        "pad_batch_max_abs_diff_vs_alone": pad_batch_diff,
    })
    write_json(os.path.join(cls_dir, "golden_logits.json"), {
        "versions": versions(), "id2label": {str(k): v for k, v in ID2LABEL.items()}, "items": logit_items})

    print("versions:", versions())
    print("vocab size:", vocab_size)
    for folder in (xlmr_dir, cls_dir):
        print(f"{os.path.relpath(folder, HERE)}/model.safetensors tensors:")
        for name, shape, dtype in tensor_names(folder):
            print(f"  {name} {shape} {dtype}")
    print("position ids of the first text:", position_ids_first)
    print("ids per text:", [len(it["ids"]) for it in items])
    print(f"max |batch - alone| (hidden and mean_pooled): {max_diff:.3g}")
    for item in pad_items:
        print(f"{item['text']!r}: ids {item['ids']}, position ids {item['position_ids']}")
    print(f"texts with <pad>, max |batch - alone|: {pad_batch_diff:.3g}")


if __name__ == "__main__":
    main()
