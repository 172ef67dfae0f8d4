#!/usr/bin/env python3
"""Checks benchmarks/data: the calibration and held-out sets are disjoint from each other and from the project's
other text (shared/data/semantic_pairs.tsv, examples/faq_assistant/*), have no duplicates, no empty lines,
and the held-out sentences are 4-60 words long. Exit status 1 and one line per problem otherwise.

  python3 benchmarks/data/check_data.py [--shared /work/shared]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def norm(s: str) -> str:
    """Case, punctuation and spacing do not make two sentences different."""
    return " ".join(re.sub(r"[^\w]+", " ", s.lower()).split())


def lines(path: Path) -> list[str]:
    return [ln.rstrip("\n") for ln in path.read_text(encoding="utf-8").splitlines()]


def other_texts(shared: Path) -> set[str]:
    out: set[str] = set()
    pairs = shared / "data/semantic_pairs.tsv"
    if pairs.is_file():
        for row in lines(pairs)[1:]:
            out.update(norm(c) for c in row.split("\t")[2:])
    else:
        print(f"check_data: {pairs} not found; not checked against it", file=sys.stderr)
    for f in sorted((REPO / "examples/faq_assistant").glob("*")):
        if f.suffix in (".tsv", ".txt"):
            for row in lines(f):
                if not row.startswith("#"):
                    out.update(norm(c) for c in row.split("\t"))
    out.discard("")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shared", default="/work/shared", help="the shared folder holding data/semantic_pairs.tsv")
    args = p.parse_args()
    problems = []
    sets = {}
    for name in ("calibration_texts.txt", "heldout_sentences.txt"):
        rows = lines(HERE / name)
        seen: dict[str, int] = {}
        for i, row in enumerate(rows, 1):
            if not row.strip():
                problems.append(f"{name}:{i}: empty line")
                continue
            key = norm(row)
            if key in seen:
                problems.append(f"{name}:{i}: duplicate of line {seen[key]}")
            seen[key] = i
        sets[name] = seen
    cal, held = sets["calibration_texts.txt"], sets["heldout_sentences.txt"]
    for key in cal.keys() & held.keys():
        problems.append(f"in both files: calibration line {cal[key]}, held-out line {held[key]}")
    others = other_texts(Path(args.shared))
    for name, seen in sets.items():
        for key in seen.keys() & others:
            problems.append(f"{name}:{seen[key]}: also in semantic_pairs.tsv or examples/faq_assistant")
    for i, row in enumerate(lines(HERE / "heldout_sentences.txt"), 1):
        n = len(row.split())
        if not 4 <= n <= 60:
            problems.append(f"heldout_sentences.txt:{i}: {n} words, expected 4-60")
    if len(cal) < 200 or len(held) < 520:
        problems.append(f"sizes: {len(cal)} calibration, {len(held)} held-out; expected >= 200 and >= 520")
    for msg in problems:
        print(msg)
    print(f"check_data: {len(cal)} calibration texts, {len(held)} held-out sentences, "
          f"{len(others)} other project texts compared; {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
