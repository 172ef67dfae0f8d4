#!/usr/bin/env python3
"""Golden data for the order of brisk's byte-level BPE merges on long words, from Hugging Face `tokenizers`.

    ~/.cache/brisk/pyref/bin/python tests/data/make_bpe_merge_order_golden.py

(tokenizers 0.19.1 and transformers 4.44.2, as make_bpe_golden.py uses; the pyref venv has them.)

tokenizers merges a word with a heap of (rank, position) candidates (Word::merge_all): the pair of lowest rank
first, the leftmost first when the same pair stands at several places. The trained tiny tokenizer has no merge of
a character with itself, so this script also builds one whose merges make overlaps matter:

  1. bpe_merge_order/tokenizer.json: make_bpe_golden.py's pipeline (NFC, Split on Qwen2's pattern, ByteLevel, BPE
     without unk_token) over the 256 byte symbols and MERGE_COUNT random merges among tokens made of a, b, c and
     the byte-level pieces of U+4E2D (e4 b8 ad, "ä¸Ń"), from random.Random(SEED): a merge may repeat a token that
     another pair already makes ("a"+"bc" and "ab"+"c"), a pair is never listed twice. The first merges are fixed,
     so that runs of "a" overlap: "a a", then "aa a" after "a aa", and "aa aa" last.
  2. bpe_merge_order_golden.json (UTF-8, compact):
       {"versions", "tokenizer": "bpe_merge_order/tokenizer.json", "seed", "merge_count",
        "cases":   [{"text", "ids"}]   bpe_merge_order/tokenizer.json: runs "a" * n, "ab" * n, "aab" * n, random
                                       words over a, b, c and U+4E2D, and two words of 20000 characters (each
                                       text is one pre-token, so one BPE word),
        "runs":    [{"tokenizer", "unit", "repeat", "unit_ids"}]  tiny_qwen_tokenizer/tokenizer.json (which has
                                       no merge across these units): encode(unit * repeat), one word of 20000
                                       characters, is unit_ids repeated `repeat` times; the script asserts this
                                       of tokenizers' output, so only the unit's ids are stored,
        "long_mixed": {"tokenizer", "text", "ids"}  tiny_qwen_tokenizer/tokenizer.json: one word of 3000 CJK
                                       characters drawn from multilingual_texts.txt}
     All encodings use add_special_tokens=True (these tokenizers add none).

The output is deterministic: running the script twice gives byte-identical files.
"""
import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402

import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402

from make_bpe_golden import build_untrained  # noqa: E402  (the Qwen2 pipeline)

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = os.path.join(HERE, "multilingual_texts.txt")
TINY = "tiny_qwen_tokenizer/tokenizer.json"
OUT_TOKENIZER = "bpe_merge_order/tokenizer.json"
OUT_JSON = os.path.join(HERE, "bpe_merge_order_golden.json")
SEED = 20240611
MERGE_COUNT = 150
ZHONG = "\u4e2d"  # 中, bytes e4 b8 ad, byte-level "ä¸Ń"
LETTERS = ["a", "b", "c", "\u00e4", "\u00b8", "\u0143"]
FIXED_MERGES = [("a", "a"), ("a", "aa"), ("aa", "a"), ("\u00e4", "\u00b8"), ("\u00e4\u00b8", "\u0143")]


def build_merge_order(rng):
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {token: i for i, token in enumerate(alphabet)}
    merges = []
    seen = set()
    tokens = list(LETTERS)

    def add(left, right):
        if (left, right) in seen:
            return
        seen.add((left, right))
        merges.append((left, right))
        if left + right not in vocab:
            vocab[left + right] = len(vocab)
            tokens.append(left + right)

    for left, right in FIXED_MERGES:
        add(left, right)
    while len(merges) < MERGE_COUNT - 1:
        # Short tokens more often, so that most merges can fire.
        left, right = (min(rng.sample(tokens, 2), key=len) for _ in range(2))
        if len(left) + len(right) <= 8:
            add(left, right)
    add("aa", "aa")
    assert len(merges) == MERGE_COUNT
    tok = build_untrained()
    tok.model = models.BPE(vocab=vocab, merges=merges, unk_token=None, fuse_unk=False, byte_fallback=False)
    # The pre-tokenizer's trim_offsets flag set through the JSON, as make_bpe_golden.py does.
    tj = json.loads(tok.to_str())
    tj["pre_tokenizer"]["pretokenizers"][1]["trim_offsets"] = False
    path = os.path.join(HERE, OUT_TOKENIZER)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Tokenizer.from_str(json.dumps(tj, ensure_ascii=False)).save(path, pretty=False)
    return Tokenizer.from_file(path)


def cjk_chars():
    with open(TEXTS, encoding="utf-8") as f:
        text = f.read()
    return sorted(set(re.findall(r"[\u4e00-\u9fff]", text)))


def main():
    rng = random.Random(SEED)
    order = build_merge_order(rng)
    tiny = Tokenizer.from_file(os.path.join(HERE, TINY))

    texts = ["a" * n for n in list(range(1, 41)) + [63, 64, 65, 100, 1000, 4099]]
    texts += [unit * n for unit in ("ab", "aab", "ba", ZHONG, "a" + ZHONG) for n in (1, 2, 3, 7, 50, 501)]
    for _ in range(200):
        weights = [rng.random() for _ in range(4)]
        n = rng.randint(1, 200)
        texts.append("".join(rng.choices(["a", "b", "c", ZHONG], weights=weights, k=n)))
    texts.append("".join(rng.choices(["a", "b", "c", ZHONG], weights=[16, 2, 1, 1], k=20000)))
    texts.append("a" * 20000)
    cases = []
    for text in texts:
        assert len(order.pre_tokenizer.pre_tokenize_str(text)) == 1, text[:40]
        cases.append({"text": text, "ids": order.encode(text).ids})

    runs = []
    for name, tok, units in ((TINY, tiny, [ZHONG, "\U0001F600", ZHONG + "\u6587", "a", "ab"]),):
        for unit in units:
            repeat = 20000 // len(unit)
            text = unit * repeat
            assert len(tok.pre_tokenizer.pre_tokenize_str(text)) == 1, unit
            unit_ids = tok.encode(unit).ids
            assert tok.encode(text).ids == unit_ids * repeat, (name, unit)
            runs.append({"tokenizer": name, "unit": unit, "repeat": repeat, "unit_ids": unit_ids})

    mixed = "".join(rng.choices(cjk_chars(), k=3000))
    assert len(tiny.pre_tokenizer.pre_tokenize_str(mixed)) == 1
    out = {
        "versions": {
            "python": platform.python_version(),
            "tokenizers": tokenizers.__version__,
            "transformers": transformers.__version__,
        },
        "tokenizer": OUT_TOKENIZER,
        "seed": SEED,
        "merge_count": MERGE_COUNT,
        "cases": cases,
        "runs": runs,
        "long_mixed": {"tokenizer": TINY, "text": mixed, "ids": tiny.encode(mixed).ids},
    }
    with open(OUT_JSON, "w", encoding="utf-8", newline="\n") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
