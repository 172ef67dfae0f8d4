#!/usr/bin/env bash
# Where one dynamic-int8 MiniLM layer's time goes, per ISA level, next to the peaks of that level, in one run:
# per round, brisk_peak_benchmark then brisk_int8_layer_benchmark at each level (BRISK_ISA caps brisk's kernels and
# oneDNN), 2 threads. Prints, per level, the medians over the rounds: each op's time (us), each GEMM's GOP/s as a
# fraction of that level's peaks, and the share of the layer's time per kind of op.
#   benchmarks/isa/run_isa_profile.sh BUILD_DIR [rounds] [levels...]
set -euo pipefail
build="${1:?build dir}"
rounds="${2:-3}"
shift 2 || true
levels=("$@")
[ ${#levels[@]} -gt 0 ] || levels=(avx2 avx512_vnni)
dir=$(mktemp -d)
for round in $(seq "$rounds"); do
  for isa in "${levels[@]}"; do
    BRISK_ISA=$isa "$build/benchmarks/brisk_peak_benchmark" --benchmark_filter='threads:2' --benchmark_min_time=0.2 \
      --benchmark_format=json > "$dir/peak_${isa}_$round.json" 2>/dev/null
    BRISK_ISA=$isa "$build/benchmarks/brisk_int8_layer_benchmark" --benchmark_min_time=0.3 \
      --benchmark_format=json > "$dir/ops_${isa}_$round.json" 2>/dev/null
  done
done
python3 - "$dir" "${levels[@]}" <<'PY'
import collections, glob, json, statistics, sys
d, levels = sys.argv[1], sys.argv[2:]
for isa in levels:
    peaks, ops = collections.defaultdict(list), collections.defaultdict(list)
    for f in glob.glob(f"{d}/peak_{isa}_*.json"):
        for b in json.load(open(f))["benchmarks"]:
            if b.get("error_occurred"): continue
            rate = b.get("GOP/s", b.get("GFLOP/s"))
            if rate: peaks[b["name"].split("/")[0]].append(rate / 1e9 if rate > 1e6 else rate)
    label = ""
    for f in glob.glob(f"{d}/ops_{isa}_*.json"):
        for b in json.load(open(f))["benchmarks"]:
            if b.get("error_occurred"): continue
            label = b.get("label", label) or label
            ops[b["name"].replace("/real_time", "")].append((b["real_time"], b.get("GOP/s", 0) / 1e9))
    print(f"\n== {isa} (int8 kernel: {label})")
    for name, v in sorted(peaks.items()):
        print(f"  peak {name:32s} {statistics.median(v):8.1f}")
    best_int = max((statistics.median(v) for k, v in peaks.items() if "int" in k), default=0)
    for shape in ("B:32/T:128", "B:1/T:16"):
        total = collections.Counter()
        print(f"  -- {shape}")
        for name, v in sorted(ops.items()):
            if shape + "/" not in name + "/": continue
            us = statistics.median(t for t, _ in v)
            gops = statistics.median(g for _, g in v)
            kind = name.split("/")[0]
            # per layer: QKV, attention output and FFN up read k=384 inputs, FFN down k=1536: 3 + 1 quantizations (in
            # the encoder, all but the attention output's made by their producer: two LayerNorms and the GeLU GEMM)
            count = 3 if (kind == "quantize" and "k:384" in name) else 2 if kind == "layer_norm" else 1
            # the encoder's attention at this level: int8 where int8_attention_preferred() (the AVX-512 levels)
            if kind.startswith("attention_"):
                count = int((kind == "attention_int8") == (isa in ("avx512", "avx512_vnni", "avx512_bf16")))
            total[kind] += us * count
            frac = f"  {gops:6.1f} GOP/s = {gops / best_int:.2f} of the best int peak" if gops else ""
            print(f"    {name:48s} {us:9.1f} us x{count}{frac}")
        layer = sum(total.values())
        print(f"    one layer {layer:.0f} us: " + ", ".join(f"{k} {100 * t / layer:.0f}%" for k, t in total.items()))
PY
rm -rf "$dir"
