#!/usr/bin/env python3
"""Golden data for a byte-level BPE tokenizer.json that lists the same merge twice, from Hugging Face `tokenizers`.

    ~/.cache/brisk/pyref/bin/python tests/data/make_bpe_duplicate_merges_golden.py

tokenizers builds its merge map in list order, so a merge listed again takes the rank of its LAST place (checked
here on tokenizers 0.19.1: with merges "b c", "a b", "c a", "b c", "abc" is ab + c, not a + bc). The tokenizer has
the 256 byte-level symbols plus "bc", "ab" and "ca"; tokenizers' own serialisation drops a repeated merge, so the
file is that serialisation with "b c" appended again.

Writes (UTF-8, compact, deterministic):
  bpe_duplicate_merges/tokenizer.json  the tokenizer, merges ["b c", "a b", "c a", "b c"]
  bpe_duplicate_merges/golden.json     {"versions", "merges", "cases": [{"text", "ids", "tokens"}]}: tokenizers'
                                       encoding of each text with the file as written
"""
import json
import os
import platform

import tokenizers
from tokenizers import Tokenizer, models, pre_tokenizers
from tokenizers.pre_tokenizers import ByteLevel

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "bpe_duplicate_merges")
TEXTS = ["abc", "bcab", "abcabc", "cabc", "bca", "a bc abc", "bcbcab", "cab"]


def main():
    vocab = {ch: i for i, ch in enumerate(sorted(ByteLevel.alphabet()))}
    for token in ("bc", "ab", "ca"):
        vocab[token] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[("b", "c"), ("a", "b"), ("c", "a")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    spec = json.loads(tok.to_str())
    spec["model"]["merges"].append(spec["model"]["merges"][0])  # "b c" again, last
    text = json.dumps(spec, ensure_ascii=False, separators=(",", ":"))
    dup = Tokenizer.from_str(text)
    assert dup.encode("abc").tokens == ["ab", "c"], "tokenizers no longer takes a repeated merge's last rank"
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "tokenizer.json"), "w", encoding="utf-8", newline="\n") as f:
        f.write(text + "\n")
    cases = []
    for t in TEXTS:
        enc = dup.encode(t)
        cases.append({"text": t, "ids": enc.ids, "tokens": enc.tokens})
    golden = {
        "versions": {"python": platform.python_version(), "tokenizers": tokenizers.__version__},
        "merges": spec["model"]["merges"],
        "cases": cases,
    }
    with open(os.path.join(OUT, "golden.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(golden, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
