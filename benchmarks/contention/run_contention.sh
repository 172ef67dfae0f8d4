#!/usr/bin/env bash
# Latency when the host is busy (issue 25): brisk against ONNX Runtime at 1x16 and 32x128 on 2 threads, quiet and
# then with one competing busy process, for ROUNDS interleaved rounds. Each round runs scripts/peers for each
# condition (quiet, then --busy 1); with BASELINE set to another brisk binary (an older build), that binary runs
# too, right after, under the same condition. The summary gives the medians over the rounds of each engine's P50 and
# P99 and of the same-round ratios brisk / ORT and brisk / baseline.
#   benchmarks/contention/run_contention.sh [ROUNDS]
#   BASELINE=/tmp/old/brisk BASELINE_LIBS=/tmp/old benchmarks/contention/run_contention.sh 3
#   ITERS_SCALE=3 benchmarks/contention/run_contention.sh 3   # 3x the calls (30 at 32x128: a P99 that is not the max)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ROUNDS="${1:-3}"
OUT="$(mktemp -d /tmp/brisk-contention.XXXXXX)"
peers() { "$ROOT/scripts/peers" --shapes 1x16,32x128 --rounds 1 --no-accuracy --no-write \
  --iters-scale "${ITERS_SCALE:-1}" "$@" > /dev/null; }
for r in $(seq 1 "$ROUNDS"); do
  for busy in 0 1; do
    echo "contention: round $r, busy processes $busy" >&2
    peers --only brisk,ort --busy "$busy" --json-out "$OUT/r${r}_busy${busy}_main.json"
    if [ -n "${BASELINE:-}" ]; then
      LD_LIBRARY_PATH="${BASELINE_LIBS:-}" peers --only brisk --brisk "$BASELINE" --busy "$busy" \
        --json-out "$OUT/r${r}_busy${busy}_baseline.json"
    fi
  done
done
python3 "$ROOT/benchmarks/contention/summarize.py" "$OUT"
