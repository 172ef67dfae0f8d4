#!/usr/bin/env python3
"""Golden data for brisk's SentencePiece-Unigram tokenizer (XLM-RoBERTa style), from Hugging Face `tokenizers`.

    python3 -m venv ~/.cache/brisk/tokref
    ~/.cache/brisk/tokref/bin/pip install sentencepiece protobuf tokenizers==0.19.1 transformers==4.44.2
    ~/.cache/brisk/tokref/bin/python tests/data/make_unigram_golden.py

Steps:
  1. Trains a tiny SentencePiece Unigram model (vocab_size VOCAB_SIZE, nmt_nfkc normalisation, add_dummy_prefix,
     remove_extra_whitespaces, no byte fallback, no digit splitting, single thread, no shuffling) in a temporary
     directory, on the FIRST 400 lines of multilingual_texts.txt only. The remaining lines deliberately hold words
     and characters (rare CJK, Georgian/Armenian/Amharic, runes, braille, math letters, newer emoji, ...) that the
     model never saw, so they exercise the <unk> path and the fallback segmentation.
  2. Converts it to a fast tokenizer exactly as transformers does for XLM-R (XLMRobertaTokenizerFast(vocab_file=...,
     from_slow=True), i.e. convert_slow_tokenizer's XLMRobertaConverter: fairseq ids <s>=0 <pad>=1 </s>=2 <unk>=3,
     SentencePiece pieces shifted by one, <mask> last) and saves tiny_xlmr_tokenizer/ (tokenizer.json,
     tokenizer_config.json, special_tokens_map.json; the SentencePiece .model file is not kept). tokenizer.json is
     re-saved by tokenizers itself with pretty=False to keep it small; its content is unchanged. With
     transformers 4.44.2 the normalizer is Sequence[Precompiled, Strip(right), Replace(" {2,}" -> "▁")] (older
     conversions, e.g. the Hub's xlm-roberta-base, have Sequence[Precompiled, Replace(" {2,}" -> " ")]).
  3. Loads tiny_xlmr_tokenizer/tokenizer.json with tokenizers.Tokenizer.from_file and writes unigram_golden.json:
       {"versions": {python, sentencepiece, tokenizers, transformers, protobuf},
        "tokenizer": "tiny_xlmr_tokenizer/tokenizer.json", "train_lines": 400, "vocab_size": ...,
        "cases":    [{"text", "ids", "tokens"}]  every line of multilingual_texts.txt, then synthetic edge cases,
        "pairs":    [{"first", "second", "ids"}]  30 deterministic line pairs, encode(first, second),
        "normalized": [{"text", "normalized"}]    tokenizer.normalizer.normalize_str for every line,
        "special_in_text": [{"text", "ids", "tokens"}] literal <s>, </s>, <mask>, <pad>, <unk> inside text}
     All encodings use add_special_tokens=True (post-processor applied). The JSON is UTF-8 (ensure_ascii=False).

The output is deterministic: running the script twice gives byte-identical files.
"""
import json
import os
import platform
import re
import shutil
import sys
import tempfile

import google.protobuf
import sentencepiece as spm
import tokenizers
import transformers
from transformers import XLMRobertaTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = os.path.join(HERE, "multilingual_texts.txt")
OUT_DIR = os.path.join(HERE, "tiny_xlmr_tokenizer")
OUT_JSON = os.path.join(HERE, "unigram_golden.json")
TRAIN_LINES = 400
VOCAB_SIZES = (1500, 1200, 1000, 800)  # first one that SentencePiece accepts for this corpus is used

EXTRA_CASES = [
    "",
    " ",
    "   leading",
    "trailing   ",
    "a\tb",
    "\u3000全角\u3000",
    "ｈｅｌｌｏ　ｗｏｒｌｄ",
    "e\u0301",
    "①②③",
    "ﬁnance",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "🇫🇷",
    "1\ufe0f\u20e3",
    "\u200d",
    "x\u200dy",
    "Ⅻ",
    "𝐀𝐁𝐂",
    "a" * 150 + "b" * 150,  # one 300-character word
    "English Français Deutsch Español Português Tiếng Việt Русский Українська Ελληνικά العربية עברית हिन्दी "
    "বাংলা தமிழ் ไทย 简体中文 繁體中文 日本語のテキスト 한국어 ＦＵＬＬ１２３ 👍🏽",
    "\u00a0\u2009\u3000",
    "  \t  ",
    "▁already▁has▁metaspace",
    "ＡＢＣ１２３",
]

SPECIAL_IN_TEXT = [
    "Hello <mask> world",
    "</s>x",
    "<s>",
    "<s> hi </s>",
    "a<pad>b",
    "<unk>",
    "before <unk> after",
    "<mask><mask>",
    " <mask> ",
    "x<s>y</s>z",
    "<MASK> is not special",
    "< s > neither",
]


def read_lines():
    with open(TEXTS, encoding="utf-8", newline="\n") as f:
        text = f.read()
    assert text.endswith("\n")
    lines = text[:-1].split("\n")
    for i, line in enumerate(lines):
        assert line, "empty line %d" % (i + 1)
        assert not re.search(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]", line), "control char in line %d" % (i + 1)
    return lines


def train_spm(lines, tmp):
    prefix = os.path.join(tmp, "tiny")
    last_error = None
    for vocab_size in VOCAB_SIZES:
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(lines[:TRAIN_LINES]),
                model_prefix=prefix,
                model_type="unigram",
                vocab_size=vocab_size,
                normalization_rule_name="nmt_nfkc",
                character_coverage=0.9995,
                byte_fallback=False,
                split_digits=False,
                add_dummy_prefix=True,
                remove_extra_whitespaces=True,
                num_threads=1,
                shuffle_input_sentence=False,
                input_sentence_size=0,
                seed_sentencepiece_size=1000000,
                max_sentence_length=1 << 16,
                unk_id=0,
                bos_id=1,
                eos_id=2,
                pad_id=-1,
                minloglevel=2,
            )
            return prefix + ".model", vocab_size
        except RuntimeError as e:  # "Vocabulary size is too high" and the like
            last_error = e
    raise SystemExit("SentencePiece training failed for every vocab size: %s" % last_error)


def scrub_config(path):
    """Drops machine-specific entries (temp paths) that save_pretrained may write."""
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    for key in ("name_or_path", "vocab_file", "tokenizer_file"):
        cfg.pop(key, None)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=2, sort_keys=True)
        f.write("\n")


def describe(tj):
    """One-line summaries of tokenizer.json's components (Precompiled charsmap and vocab elided)."""
    def short(node):
        if isinstance(node, dict):
            return {k: ("<%d chars>" % len(v) if k == "precompiled_charsmap" else short(v))
                    for k, v in node.items()}
        if isinstance(node, list):
            return [short(x) for x in node]
        return node

    model = dict(tj["model"])
    vocab = model.pop("vocab")
    model["vocab"] = "<%d pieces>" % len(vocab)
    return {
        "normalizer": short(tj["normalizer"]),
        "pre_tokenizer": short(tj["pre_tokenizer"]),
        "model": model,
        "post_processor": short(tj["post_processor"]),
        "decoder": short(tj["decoder"]),
        "added_tokens": tj["added_tokens"],
    }


def check_structure(tj):
    norm = tj["normalizer"]
    assert norm["type"] == "Sequence", norm["type"]
    types = [n["type"] for n in norm["normalizers"]]
    assert types[0] == "Precompiled", types
    assert "Replace" in types, types
    assert tj["pre_tokenizer"]["type"] == "Metaspace", tj["pre_tokenizer"]
    assert tj["pre_tokenizer"].get("prepend_scheme") == "always", tj["pre_tokenizer"]
    assert tj["model"]["type"] == "Unigram", tj["model"]["type"]
    assert tj["post_processor"]["type"] in ("TemplateProcessing", "RobertaProcessing"), tj["post_processor"]["type"]


def main():
    lines = read_lines()
    tmp = tempfile.mkdtemp(prefix="brisk_unigram_")
    try:
        model_path, vocab_size = train_spm(lines, tmp)
        fast = XLMRobertaTokenizerFast(vocab_file=model_path, from_slow=True, clean_up_tokenization_spaces=True)
        if os.path.isdir(OUT_DIR):
            shutil.rmtree(OUT_DIR)
        fast.save_pretrained(OUT_DIR, legacy_format=False)
    finally:
        shutil.rmtree(tmp)

    for name in sorted(os.listdir(OUT_DIR)):
        if name.endswith(".model"):
            os.remove(os.path.join(OUT_DIR, name))
        elif name in ("tokenizer_config.json", "special_tokens_map.json"):
            scrub_config(os.path.join(OUT_DIR, name))
    tok_path = os.path.join(OUT_DIR, "tokenizer.json")
    # Same content as save_pretrained wrote, re-serialised without pretty-printing (~60 KB smaller).
    tokenizers.Tokenizer.from_file(tok_path).save(tok_path, pretty=False)
    with open(tok_path, encoding="utf-8") as f:
        tj = json.load(f)
    check_structure(tj)
    print(json.dumps(describe(tj), ensure_ascii=False, indent=1))

    tok = tokenizers.Tokenizer.from_file(tok_path)

    def enc(text, pair=None):
        e = tok.encode(text, pair) if pair is not None else tok.encode(text)
        return e

    cases = []
    for text in lines + EXTRA_CASES:
        e = enc(text)
        cases.append({"text": text, "ids": e.ids, "tokens": e.tokens})

    # 30 pairs: line i with line (7 i + 101) mod n, i stepping by 17 across the file (train and held-out lines).
    n = len(lines)
    pairs = []
    for k in range(30):
        a = lines[(17 * k) % n]
        b = lines[(7 * (17 * k) + 101) % n]
        e = enc(a, b)
        pairs.append({"first": a, "second": b, "ids": e.ids, "tokens": e.tokens})

    normalized = [{"text": t, "normalized": tok.normalizer.normalize_str(t)} for t in lines + EXTRA_CASES]

    special = []
    for text in SPECIAL_IN_TEXT:
        e = enc(text)
        special.append({"text": text, "ids": e.ids, "tokens": e.tokens})

    unk_hits = sum(c["ids"].count(tj["model"]["unk_id"]) for c in cases)
    out = {
        "versions": {
            "python": platform.python_version(),
            "sentencepiece": spm.__version__,
            "tokenizers": tokenizers.__version__,
            "transformers": transformers.__version__,
            "protobuf": google.protobuf.__version__,
        },
        "tokenizer": "tiny_xlmr_tokenizer/tokenizer.json",
        "train_lines": TRAIN_LINES,
        "spm_vocab_size": vocab_size,
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "special_ids": {t: tok.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")},
        "cases": cases,
        "pairs": pairs,
        "normalized": normalized,
        "special_in_text": special,
    }
    with open(OUT_JSON, "w", encoding="utf-8", newline="\n") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print("cases %d (lines %d + extra %d), pairs %d, normalized %d, special_in_text %d, unk tokens in cases %d"
          % (len(cases), n, len(EXTRA_CASES), len(pairs), len(normalized), len(special), unk_hits),
          file=sys.stderr)


if __name__ == "__main__":
    main()
