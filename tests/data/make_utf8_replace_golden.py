#!/usr/bin/env python3
"""Golden data for replace_invalid_utf8: how Python decodes bytes that are not UTF-8 with errors="replace", and
what Hugging Face `tokenizers` makes of the result.

    ~/.cache/brisk/pyref/bin/python tests/data/make_utf8_replace_golden.py

(tokenizers 0.19.1 and transformers 4.44.2, as make_bpe_golden.py uses; the pyref venv has them.)

Python replaces each maximal subpart of an ill-formed sequence with one U+FFFD (Unicode chapter 3, "U+FFFD
substitution of maximal subparts"), as Rust's String::from_utf8_lossy does: e2 82 is one U+FFFD, not two.
Writes utf8_replace_golden.json (UTF-8, compact):
    {"versions": {python, tokenizers, transformers}, "tokenizer": "tiny_qwen_tokenizer/tokenizer.json",
     "cases": [{"hex", "text", "ids"}]}
hex: the bytes; text: bytes.fromhex(hex).decode("utf-8", "replace"); ids: the tokenizer's encode(text).ids
(byte-level BPE, so every U+FFFD shows as tokens). The cases are the ill-formed sequences of the Unicode standard's
tables 3-7 and 3-8, truncations of well-formed sequences, and 400 random byte strings built from valid
characters, their prefixes and stray bytes (random.Random(SEED)).

The output is deterministic: running the script twice gives byte-identical files.
"""
import json
import os
import platform
import random

import tokenizers
import transformers
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER = "tiny_qwen_tokenizer/tokenizer.json"
OUT_JSON = os.path.join(HERE, "utf8_replace_golden.json")
SEED = 20240612

FIXED = [
    "e282", "e28241", "41e282", "e282e282", "f09f98", "f09f", "f0", "f09f9841", "f4", "f48fbf", "efbf",
    "c3", "c328", "c3c3a9", "80", "8080", "bf", "80bf80", "c0af", "c1bf", "c080", "e080af", "e09f80", "e0a0",
    "eda080", "edbfbf", "ed9fbf", "ed9f", "ed", "f08080af", "f08f", "f090", "f4908080", "f48f", "f5808080", "f8",
    "fc", "fe", "ff", "feff", "61f18080e180c2628063" "80bf64",  # table 3-8's example
    "e4b8ade4b8", "e4b8e4b8ad", "f0f09f9880", "616263e2", "e2828261", "20e28220",
]


def pieces(rng):
    """A random byte string: valid characters, their prefixes, and stray bytes."""
    out = b""
    for _ in range(rng.randint(0, 12)):
        kind = rng.randrange(5)
        if kind == 0:
            out += rng.choice(b"ab \n").to_bytes(1, "big")
        elif kind in (1, 2):
            cp = rng.choice([rng.randint(0x80, 0x7FF), rng.randint(0x800, 0xD7FF), rng.randint(0xE000, 0xFFFF),
                             rng.randint(0x10000, 0x10FFFF)])
            enc = chr(cp).encode("utf-8")
            out += enc if kind == 1 else enc[:rng.randint(1, len(enc) - 1)]
        elif kind == 3:
            out += rng.randint(0x80, 0xFF).to_bytes(1, "big")
        else:
            out += rng.choice([b"\xed\xa0", b"\xed\xbf\xbf", b"\xe0\x80", b"\xf0\x80", b"\xf4\x90", b"\xc0", b"\xc1"])
    return out


def main():
    rng = random.Random(SEED)
    tok = Tokenizer.from_file(os.path.join(HERE, TOKENIZER))
    hexes = list(FIXED) + [pieces(rng).hex() for _ in range(400)]
    cases = []
    for h in hexes:
        text = bytes.fromhex(h).decode("utf-8", "replace")
        cases.append({"hex": h, "text": text, "ids": tok.encode(text).ids})
    assert cases[0]["text"] == "\ufffd", cases[0]
    out = {
        "versions": {
            "python": platform.python_version(),
            "tokenizers": tokenizers.__version__,
            "transformers": transformers.__version__,
        },
        "tokenizer": TOKENIZER,
        "cases": cases,
    }
    with open(OUT_JSON, "w", encoding="utf-8", newline="\n") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
