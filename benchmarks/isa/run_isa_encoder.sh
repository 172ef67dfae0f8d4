#!/usr/bin/env bash
# brisk fp32 against brisk int8 on all-MiniLM-L6-v2, at each ISA level given (BRISK_ISA caps brisk's kernels and
# oneDNN), in one interleaved run: per round, every (level, model, shape) once, so that the machine's load moves all
# of them alike. Prints one line per run (seq/s, median ms) and, at the end, the medians over the rounds and the
# same-run ratios int8 / fp32. "int8fa" is the same int8 file with --float-attention (float self-attention), on the
# levels where int8 attention would run.
#   benchmarks/isa/run_isa_encoder.sh BUILD_DIR INT8_FILE [rounds] [levels...]
#   benchmarks/isa/run_isa_encoder.sh build/release /tmp/minilm.int8.safetensors 3 avx2 avx512_vnni
set -euo pipefail
build="${1:?build dir}"
int8="${2:?int8 model file (brisk quantize --plan int8)}"
rounds="${3:-3}"
shift 3 || true
levels=("$@")
[ ${#levels[@]} -gt 0 ] || levels=(avx2 avx512_vnni)
model="${BRISK_MODEL_DIR:-$HOME/.cache/brisk/models/all-MiniLM-L6-v2}"
out=$(mktemp)
for round in $(seq "$rounds"); do
  for isa in "${levels[@]}"; do
    for m in fp32 int8 int8fa; do
      path="$model"; [ "$m" != fp32 ] && path="$int8"
      extra=(); [ "$m" = int8fa ] && extra=(--float-attention)
      for shape in 1x16 32x128; do
        b=${shape%x*}; t=${shape#*x}
        iters=$([ "$b" = 1 ] && echo 300 || echo 12)
        BRISK_ISA=$isa "$build/lib/brisk" bench --model "$path" --threads 2 --batch "$b" --seq "$t" --iters "$iters" \
          --warmup 3 --json "${extra[@]}" | python3 -c "import json,sys; j=json.load(sys.stdin); print('$round $isa $m $shape', round(j['seq_per_s'],1), round(j['p50_ms'],3))" | tee -a "$out"
      done
    done
  done
done
python3 - "$out" <<'PY'
import statistics, sys, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, isa, m, shape, sps, ms = line.split()
    runs[(isa, m, shape)].append(float(sps))
print("\nmedian seq/s over the rounds (and int8 / fp32 of the same round, median):")
for (isa, m, shape), v in sorted(runs.items()):
    line = f"{isa:12s} {m:6s} {shape:7s} {statistics.median(v):8.1f}"
    if m.startswith("int8"):
        ratios = [a / b for a, b in zip(v, runs[(isa, 'fp32', shape)])]
        line += f"   /fp32 {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
        if m == "int8":
            ratios = [a / b for a, b in zip(v, runs[(isa, 'int8fa', shape)])]
            line += f"   /int8fa {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
    print(line)
PY
rm -f "$out"
