#!/usr/bin/env python3
"""Checks benchmarks/data/faq_labels.tsv against examples/faq_assistant: every question of questions.txt appears
exactly once and in order, every faq_index is -1 or in range of faq.tsv, faq_question equals that faq.tsv entry's
question (empty for -1), and the optional alternative indices are in range, distinct and differ from faq_index.
Exit status 1 and one line per problem otherwise.

  python3 benchmarks/data/check_faq_labels.py
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAQ = REPO / "examples/faq_assistant/faq.tsv"
QUESTIONS = REPO / "examples/faq_assistant/questions.txt"
LABELS = REPO / "benchmarks/data/faq_labels.tsv"


def content(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of the lines that are neither empty nor # comments."""
    out = []
    for n, ln in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if ln.strip() and not ln.startswith("#"):
            out.append((n, ln))
    return out


def main() -> int:
    faq = [ln.split("\t")[0] for _, ln in content(FAQ)]
    questions = [ln.strip() for _, ln in content(QUESTIONS)]
    rows = content(LABELS)
    problems: list[str] = []
    if len(rows) != len(questions):
        problems.append(f"{len(rows)} label lines for {len(questions)} questions")
    for k, (n, ln) in enumerate(rows):
        where = f"faq_labels.tsv:{n}"
        cols = ln.split("\t")
        if len(cols) not in (3, 4):
            problems.append(f"{where}: {len(cols)} columns, expected 3 or 4")
            continue
        q, idx_s, faq_q = cols[:3]
        alt_s = cols[3] if len(cols) == 4 else ""
        if k < len(questions) and q != questions[k]:
            problems.append(f"{where}: question {q!r}, expected {questions[k]!r} (question {k + 1})")
        try:
            idx = int(idx_s)
        except ValueError:
            problems.append(f"{where}: faq_index {idx_s!r} is not an integer")
            continue
        if idx == -1:
            if faq_q or alt_s:
                problems.append(f"{where}: faq_index -1 needs empty faq_question and alternatives")
        elif not 0 <= idx < len(faq):
            problems.append(f"{where}: faq_index {idx} out of range 0..{len(faq) - 1}")
        elif faq_q != faq[idx]:
            problems.append(f"{where}: faq_question {faq_q!r} is not entry {idx} {faq[idx]!r}")
        if alt_s:
            try:
                alts = [int(a) for a in alt_s.split(",")]
            except ValueError:
                problems.append(f"{where}: alternatives {alt_s!r} are not comma-separated integers")
                continue
            if len(set(alts)) != len(alts) or idx in alts:
                problems.append(f"{where}: alternatives {alt_s!r} repeat an index")
            for a in alts:
                if not 0 <= a < len(faq):
                    problems.append(f"{where}: alternative {a} out of range 0..{len(faq) - 1}")
    for p in problems:
        print(p)
    if not problems:
        n_neg = sum(1 for _, ln in rows if ln.split("\t")[1] == "-1")
        n_alt = sum(1 for _, ln in rows if len(ln.split("\t")) == 4 and ln.split("\t")[3])
        print(f"ok: {len(rows)} questions, {len(rows) - n_neg} labelled, {n_neg} with -1, {n_alt} with alternatives")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
