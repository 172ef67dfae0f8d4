#!/usr/bin/env python3
"""Checks benchmarks/data/verifier_pairs.tsv, the labelled (cached, incoming) pairs for the semantic-cache verifier:
header and 5 tab-separated columns; label 0/1 consistent with the category; every category in both splits with at
least 20 pairs held out; no duplicated pair and no pair of a sentence with itself (case, punctuation and spacing
ignored); no sentence shared with shared/data/semantic_pairs.tsv, examples/faq_assistant/*, calibration_texts.txt or
heldout_sentences.txt; no sentence (cached or incoming) in both splits; at least 600 pairs; at least 15% of the
distinct questions 20 words or longer and 15% 6 words or shorter. Exit status 1 and one line per problem otherwise.

  python3 benchmarks/data/check_pairs.py [--shared DIR] [--pairs FILE]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from check_data import HERE, REPO, lines, norm, other_texts

HEADER = ["label", "category", "cached", "incoming", "split"]
LABEL = {"paraphrase": "1", "negation": "0", "entity_swap": "0", "number_change": "0", "different_intent": "0"}
SPLITS = ("train", "heldout")
MIN_PAIRS, MIN_HELDOUT_PER_CATEGORY = 600, 20
LONG_WORDS, SHORT_WORDS, MIN_SHARE = 20, 6, 0.15


def check(rows: list[str], others: set[str], name: str) -> tuple[list[str], dict]:
    problems: list[str] = []
    if not rows or rows[0].split("\t") != HEADER:
        problems.append(f"{name}:1: header must be {' '.join(HEADER)} (tab-separated)")
    seen: dict[tuple[str, str], int] = {}
    split_of: dict[str, tuple[str, int]] = {}
    per: Counter = Counter()
    sentences: dict[str, str] = {}
    n = 0
    for i, row in enumerate(rows[1:], 2):
        cols = row.split("\t")
        if len(cols) != 5:
            problems.append(f"{name}:{i}: {len(cols)} columns, expected 5")
            continue
        label, cat, cached, incoming, split = cols
        n += 1
        if cat not in LABEL:
            problems.append(f"{name}:{i}: unknown category {cat!r}")
        elif label != LABEL[cat]:
            problems.append(f"{name}:{i}: label {label!r} but category {cat} needs {LABEL[cat]}")
        if split not in SPLITS:
            problems.append(f"{name}:{i}: split {split!r}, expected train or heldout")
        per[(cat, split)] += 1
        for text in (cached, incoming):
            if not text.strip() or text != text.strip():
                problems.append(f"{name}:{i}: empty field or space at an end: {text!r}")
        a, b = norm(cached), norm(incoming)
        if a == b:
            problems.append(f"{name}:{i}: cached and incoming are the same sentence")
        key = (min(a, b), max(a, b))
        if key in seen:
            problems.append(f"{name}:{i}: same pair as line {seen[key]}")
        seen.setdefault(key, i)
        for text, k in ((cached, a), (incoming, b)):
            sentences.setdefault(k, text)
            if k in others:
                problems.append(f"{name}:{i}: {text!r} is also in semantic_pairs.tsv, examples/faq_assistant or "
                                f"calibration/held-out sentences")
            if split in SPLITS:
                first = split_of.setdefault(k, (split, i))
                if first[0] != split:
                    problems.append(f"{name}:{i}: {text!r} is in both splits (line {first[1]} is {first[0]})")
    for cat in LABEL:
        if per[(cat, "train")] == 0:
            problems.append(f"category {cat}: no train pairs")
        if per[(cat, "heldout")] < MIN_HELDOUT_PER_CATEGORY:
            problems.append(f"category {cat}: {per[(cat, 'heldout')]} held-out pairs, expected >= "
                            f"{MIN_HELDOUT_PER_CATEGORY}")
    if n < MIN_PAIRS:
        problems.append(f"{n} pairs, expected >= {MIN_PAIRS}")
    words = [len(t.split()) for t in sentences.values()]
    long_share = sum(w >= LONG_WORDS for w in words) / max(len(words), 1)
    short_share = sum(w <= SHORT_WORDS for w in words) / max(len(words), 1)
    if long_share < MIN_SHARE:
        problems.append(f"{long_share:.1%} of questions have >= {LONG_WORDS} words, expected >= {MIN_SHARE:.0%}")
    if short_share < MIN_SHARE:
        problems.append(f"{short_share:.1%} of questions have <= {SHORT_WORDS} words, expected >= {MIN_SHARE:.0%}")
    return problems, {"pairs": n, "per": per, "sentences": len(words), "long": long_share, "short": short_share}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shared", default=str(REPO.parent / "shared"),
                   help="the shared folder holding data/semantic_pairs.tsv (default: ../shared beside the repo)")
    p.add_argument("--pairs", default=str(HERE / "verifier_pairs.tsv"), help="the pairs file to check")
    args = p.parse_args()
    others = other_texts(Path(args.shared))
    for extra in ("calibration_texts.txt", "heldout_sentences.txt"):
        others.update(norm(row) for row in lines(HERE / extra))
    others.discard("")
    path = Path(args.pairs)
    problems, stats = check(lines(path), others, path.name)
    for msg in problems:
        print(msg)
    per = stats["per"]
    counts = ", ".join(f"{c} {per[(c, 'train')]}/{per[(c, 'heldout')]}" for c in LABEL)
    print(f"check_pairs: {stats['pairs']} pairs (train/heldout: {counts}); {stats['sentences']} distinct questions, "
          f"{stats['long']:.1%} >= {LONG_WORDS} words, {stats['short']:.1%} <= {SHORT_WORDS} words; "
          f"{len(others)} other project texts compared; {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
