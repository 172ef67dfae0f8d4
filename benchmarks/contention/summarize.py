"""Summarizes benchmarks/contention/run_contention.sh's rounds (r<round>_busy<n>_<main|baseline>.json): per
(condition, shape, engine) the median over the rounds of P50 and P99 in ms, and the medians of the same-round ratios
brisk / ORT and brisk / baseline (the other brisk binary)."""
import json
import re
import statistics
import sys
from pathlib import Path


def main(folder: str) -> int:
    runs = sorted(Path(folder).glob("r*_busy*_*.json"))
    if not runs:
        print(f"summarize: no r*_busy*_*.json in {folder}", file=sys.stderr)
        return 2
    rounds: dict = {}  # (round, condition, shape) -> {engine: result}
    for path in runs:
        m = re.match(r"r(\d+)_busy(\d+)_(main|baseline)\.json", path.name)
        if not m:
            continue
        condition = "busy" if int(m[2]) > 0 else "quiet"
        data = json.loads(path.read_text())
        for shape, entry in data["shapes"].items():
            row = rounds.setdefault((int(m[1]), condition, shape), {})
            for engine, r in entry["results"].items():
                name = "baseline" if m[3] == "baseline" else ("brisk" if engine.startswith("brisk_") else engine)
                row[name] = r
    table: dict = {}
    for (_, condition, shape), row in rounds.items():
        cells = {e: (r["p50_ms"], r["p99_ms"]) for e, r in row.items()}
        for other in ("ort", "baseline"):
            if "brisk" in row and other in row:
                cells[f"brisk/{other}"] = (row["brisk"]["p50_ms"] / row[other]["p50_ms"],
                                           row["brisk"]["p99_ms"] / row[other]["p99_ms"])
        for e, (p50, p99) in cells.items():
            cell = table.setdefault((condition, shape, e), ([], []))
            cell[0].append(p50)
            cell[1].append(p99)
    print("| condition | shape | engine | P50 ms (ratio) | P99 ms (ratio) | rounds |")
    print("|---|---|---|---|---|---|")
    for (condition, shape, engine), (p50s, p99s) in sorted(table.items()):
        digits = 3 if "/" in engine else 2
        print(f"| {condition} | {shape} | {engine} | {statistics.median(p50s):.{digits}f} | "
              f"{statistics.median(p99s):.{digits}f} | {len(p50s)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
