#!/usr/bin/env bash
# The HTTP service's load measurements (benchmarks/RESULTS.md, "HTTP service"): starts examples/http_server on a free
# loopback port, runs brisk_http_load (closed-loop capacity, then open-loop Poisson cells at 50/80/120% of it, each
# interleaved with the same schedule through in-process Runtime::submit()), then a closed-loop wrk run with
# benchmarks/http/embed.lua, and stops the server (SIGTERM). Build first:
#   cmake --build --preset cpu-only -j2 --target http_server brisk_http_load
#   benchmarks/http/run_http_load.sh [OUT_DIR]        # default /tmp/brisk_http_load
# Environment: OMP_WAIT_POLICY (default passive: libgomp's spinning workers lose badly on a shared 2-core machine;
# `default` unsets it),
# CAPACITY (req/s taken as 100%; unset: measured by the closed loop), THREADS (2), ROUNDS (5), DURATION_S (8), CAPACITY_S (3), WINDOWS (16,32), SLO_MS (100), DEADLINE_MS (SLO_MS), POOL (192), LOADS (0.5,0.8,1.2), WRK_S (10), WRK_C (16).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build/cpu-only}
out=${1:-/tmp/brisk_http_load}
mkdir -p "$out"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
[ "$OMP_WAIT_POLICY" = default ] && unset OMP_WAIT_POLICY  # libgomp's own default (spin, then sleep)
threads=${THREADS:-2}

"$build/examples/http_server" --port 0 --threads "$threads" --no-cache --http-threads 256 >"$out/server.out" \
  2>"$out/server.err" &
server=$!
trap 'kill -TERM $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q listening "$out/server.out" 2>/dev/null && break
  sleep 0.2
done
port=$(grep -o '[0-9]*$' "$out/server.out")
echo "http_server pid $server port $port, OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-(unset)}, $(date -u +%FT%TZ), load: $(cut -d' ' -f1-3 /proc/loadavg)"

timeout 900 "$build/benchmarks/brisk_http_load" --port "$port" --threads "$threads" --rounds "${ROUNDS:-5}" \
  --duration-s "${DURATION_S:-8}" --capacity-s "${CAPACITY_S:-3}" --slo-ms "${SLO_MS:-100}" \
  --loads "${LOADS:-0.5,0.8,1.2}" --windows "${WINDOWS:-16,32}" ${CAPACITY:+--capacity "$CAPACITY"} --pool "${POOL:-192}" --deadline-ms "${DEADLINE_MS:-${SLO_MS:-100}}" --out "$out/http_load.md" --records-dir "$out/records"

echo "wrk: load before $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 120 wrk -t2 -c"${WRK_C:-16}" -d"${WRK_S:-10}s" --latency -s "$root/benchmarks/http/embed.lua" \
  "http://127.0.0.1:$port" -- "$root/examples/faq_assistant/questions.txt" | tee "$out/wrk.txt"
echo "wrk: load after $(cut -d' ' -f1-3 /proc/loadavg)"
