#!/usr/bin/env python3
"""A tiny WordPiece tokenizer.json with added tokens of every flag, and golden ids for it from Hugging Face
`tokenizers`, for brisk's WordPieceTokenizer (added tokens matched in the raw or in the normalised text).

    ~/.cache/brisk/pyref/bin/python tests/data/make_wordpiece_added_golden.py

Writes tests/data/tiny_wordpiece_added/tokenizer.json: a WordPiece model over VOCAB, BertNormalizer (clean_text,
handle_chinese_chars, strip_accents null, lowercase), BertPreTokenizer, the [CLS] $A [SEP] template, the five
special tokens (normalized false, as transformers writes them) and ADDED: tokens with normalized true (what
transformers' tokenizer.add_tokens writes for a plain string; matched in the normalised text by their normalised
content, so "COVID19" matches "covid19", and "東京都" its CJK-padded form) and false (matched in the raw text,
byte for byte), some with lstrip / rstrip. Two tokens with normalized false are single lowercase words, so the text
that the raw pass leaves goes to WordPiece as that same word: "vaccines", absent from VOCAB (WordPiece keeps to its
own vocabulary, model.vocab, and gives vaccine ##s for "Vaccines"; the added token matches the raw "vaccines" only),
and "world", in VOCAB (add_tokens gives it its vocabulary id, and WordPiece still produces it for "WORLD"). Then tests/data/tiny_wordpiece_added/golden.json:
    {"versions": {python, tokenizers}, "max_length": MAX_LENGTH,
     "cases": [{"text", "ids", "tokens", "truncated_ids", "split_special_ids"}]}
ids: Tokenizer.encode(text) (template applied, no truncation); truncated_ids: the same truncated to MAX_LENGTH ids;
split_special_ids: with encode_special_tokens = True (transformers' split_special_tokens), which stops matching the
special tokens only (the added tokens that are not special still match).
The output is deterministic: running the script twice gives byte-identical files.
"""
import json
import os
import platform

import tokenizers
from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers, processors

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "tiny_wordpiece_added")
MAX_LENGTH = 6
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB = SPECIALS + ["a", "b", "c", "co", "##vid", "##19", "19", "pan", "##de", "##mic", "hello", "world", "new",
                    "york", "-", "!", "covid", "cafe", "##s", "x", "##x", "東", "京", "#", "vaccine", "##a", "##b"]
ADDED = [  # (content, normalized, lstrip, rstrip)
    ("COVID19", True, False, False),
    ("zqxj", True, False, False),
    ("Café", True, False, False),
    ("東京都", True, False, False),
    ("new york", True, False, False),
    ("ab", True, False, True),
    ("New-York", False, False, False),
    ("<raw>", False, True, True),
    ("[Mask2]", False, False, False),
    ("vaccines", False, False, False),
    ("world", False, False, False),
]
TEXTS = [
    "COVID19pandemic", "covid19pandemic", "#Covid19Vaccine", "xCOVID19x", "co vid19", "aZqxjb", "zqx j ZQXJ",
    "CAFÉ cafe café Cafés cafe\u0301", "東京都 東京 東京都庁", "New\tYork new  york NEW YORK", "abab c ab", "a b",
    "New-York new-york NEW-YORK", "x <raw> y", "x<raw>y", "  <raw>  ", "[MASK] [mask] [Mask2] [mask2]",
    "[CLS]covid19[SEP]", "hello world!", "", "covid19 covid19 covid19 covid19 covid19",
    "hello COVID19 world zqxj new york cafe",
    "vaccines Vaccines VACCINES vaccine", "xvaccines Vaccinesx", "World WORLD world worlds",
    # An rstrip token's whitespace holds the start of the next match (東京都 normalises to " 東  京  都 "): tokenizers
    # finds the matches before stripping, so both count.
    "ab東京都", "AB 東京都", "ab  東京都x", "<raw> <raw>", "<raw><raw>  <raw>", "ab ab", "abab東京都ab",
]


def versions():
    return {"python": platform.python_version(), "tokenizers": tokenizers.__version__}


def make_tokenizer():
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(VOCAB)}, unk_token="[UNK]",
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", VOCAB.index("[CLS]")), ("[SEP]", VOCAB.index("[SEP]"))])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in SPECIALS])
    tok.add_tokens([AddedToken(c, normalized=n, lstrip=l, rstrip=r, special=False) for c, n, l, r in ADDED])
    return tok


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, "tokenizer.json")
    make_tokenizer().save(path, pretty=True)
    tok = Tokenizer.from_file(path)  # what brisk reads
    cases = []
    for text in TEXTS:
        enc = tok.encode(text)
        tok.enable_truncation(MAX_LENGTH)
        truncated = tok.encode(text).ids
        tok.no_truncation()
        tok.encode_special_tokens = True
        split = tok.encode(text).ids
        tok.encode_special_tokens = False
        cases.append({"text": text, "ids": enc.ids, "tokens": enc.tokens, "truncated_ids": truncated,
                      "split_special_ids": split})
    with open(os.path.join(OUT_DIR, "golden.json"), "w", encoding="utf-8") as f:
        json.dump({"versions": versions(), "max_length": MAX_LENGTH, "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("versions:", versions())
    for c in cases:
        print(repr(c["text"]), c["tokens"])


if __name__ == "__main__":
    main()
