#!/usr/bin/env python3
"""Parses brisk's Prometheus exposition with the reference client's parser (prometheus_client, Debian package
python3-prometheus-client) and checks families, types, label values (escaped ones too) and sample values.
Usage: prometheus_parse_test.py <brisk_metrics_prometheus_sample executable>"""
import math
import subprocess
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    # The apt package installs into the system interpreter's dist-packages; a pyenv or venv python found
    # by CMake does not see it. The parser is pure Python, so borrowing that path is safe.
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        print("FAIL: prometheus_client is not installed; run scripts/setup (apt: python3-prometheus-client)")
        sys.exit(1)

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)


def same(a, b):
    if isinstance(b, float) and math.isnan(b):
        return isinstance(a, float) and math.isnan(a)
    return a == b or (isinstance(b, float) and math.isclose(a, b, rel_tol=1e-12))


def main(exe):
    text = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    families = list(text_string_to_metric_families(text))
    # The parser yields a family again each time its samples resume after another family: grouping shows as
    # each name exactly once, in first-use order. Counters are named without _total by this parser.
    names = [(f.name, f.type) for f in families]
    want_names = [("brisk_requests", "counter"), ("brisk_queue_depth", "gauge"), ("brisk_temperature", "gauge"),
                  ("brisk_batch_size", "summary"), ("brisk_compute_seconds", "histogram")]
    check(names == want_names, f"families {names}, expected {want_names}")
    by_name = {f.name: f for f in families}

    def samples(name):
        f = by_name.get(name)
        return [(s.name, s.labels, s.value) for s in f.samples] if f else []

    def expect(name, want):
        got = samples(name)
        ok = len(got) == len(want) and all(
            g[0] == w[0] and g[1] == w[1] and same(g[2], w[2]) for g, w in zip(got, want))
        check(ok, f"{name}: samples {got}, expected {want}")

    if "brisk_requests" in by_name:
        check(by_name["brisk_requests"].documentation == "Requests completed.\nSecond line with a \\ backslash.",
              f"help unescaped to {by_name['brisk_requests'].documentation!r}")
    expect("brisk_requests", [
        ("brisk_requests_total", {"model": "minilm", "code": "ok"}, 1027.0),
        ("brisk_requests_total", {"model": 'path\\to "quoted"\nnext', "code": "error"}, 3.0),
    ])
    expect("brisk_queue_depth", [
        ("brisk_queue_depth", {}, 7.0),
        ("brisk_queue_depth", {"priority": "high"}, -2.0),
    ])
    expect("brisk_temperature", [
        ("brisk_temperature", {"kind": "pos"}, math.inf),
        ("brisk_temperature", {"kind": "neg"}, -math.inf),
        ("brisk_temperature", {"kind": "nan"}, math.nan),
        ("brisk_temperature", {"kind": "small"}, 1.5e-7),
    ])
    # 1..100 once each, exact: the rank-ceil(q*100) value is 50, 90, 95, 99 and 100.
    minilm = {"model": "minilm"}
    other = {"model": "other"}
    expect("brisk_batch_size", [
        ("brisk_batch_size", dict(minilm, quantile="0.5"), 50.0),
        ("brisk_batch_size", dict(minilm, quantile="0.9"), 90.0),
        ("brisk_batch_size", dict(minilm, quantile="0.95"), 95.0),
        ("brisk_batch_size", dict(minilm, quantile="0.99"), 99.0),
        ("brisk_batch_size", dict(minilm, quantile="0.999"), 100.0),
        ("brisk_batch_size_sum", minilm, 5050.0),
        ("brisk_batch_size_count", minilm, 100.0),
    ] + [("brisk_batch_size", dict(other, quantile=q), math.nan) for q in ("0.5", "0.9", "0.95", "0.99", "0.999")]
      + [("brisk_batch_size_sum", other, 0.0), ("brisk_batch_size_count", other, 0.0)])
    # 3 recordings at 4 ms and 2 at 20 ms, in seconds.
    gemm = {"stage": "gemm"}
    expect("brisk_compute_seconds", [
        ("brisk_compute_seconds_bucket", dict(gemm, le="0.001"), 0.0),
        ("brisk_compute_seconds_bucket", dict(gemm, le="0.005"), 3.0),
        ("brisk_compute_seconds_bucket", dict(gemm, le="0.01"), 3.0),
        ("brisk_compute_seconds_bucket", dict(gemm, le="0.05"), 5.0),
        ("brisk_compute_seconds_bucket", dict(gemm, le="+Inf"), 5.0),
        ("brisk_compute_seconds_sum", gemm, 0.052),
        ("brisk_compute_seconds_count", gemm, 5.0),
    ])
    # The text itself: one TYPE line per family, every line newline-terminated.
    type_lines = [l.split()[2] for l in text.splitlines() if l.startswith("# TYPE ")]
    check(len(type_lines) == len(set(type_lines)) == 5, f"TYPE lines {type_lines}")
    check(text.endswith("\n"), "exposition does not end with a newline")

    for f in FAILURES:
        print("FAIL:", f)
    print(f"{len(families)} families, {sum(len(f.samples) for f in families)} samples parsed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
