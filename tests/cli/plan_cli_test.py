#!/usr/bin/env python3
"""`brisk plan`, run as a user would: a plan from a curve file (table and --json), its bad inputs, and measuring
the default model's curve with --measure-out.

    plan_cli_test.py BRISK_BINARY
Prints 'N passed, N failed' and exits non-zero on any failure. The figures are checked against closed forms
computed here (Erlang C by its defining sum, independent of the tool's Erlang B recursion)."""
import json
import math
import os
import sys
import tempfile

from cli_harness import check, run, summary

CURVE = {"model": "toy", "seq": 16, "threads": 2, "jitter_cv": 0.05,
         "batch_ms": {"1": 4, "2": 6, "3": 8, "4": 9.5, "5": 11, "6": 12.5, "7": 14, "8": 16}}


def erlang_c(c, a):
    """P(wait) in M/M/c from its definition (a^c/c! c/(c-a)) / (sum_{k<c} a^k/k! + a^c/c! c/(c-a))."""
    top = a ** c / math.factorial(c) * c / (c - a)
    return top / (sum(a ** k / math.factorial(k) for k in range(c)) + top)


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def not_a_crash(r):
    return r.returncode in (0, 1, 2) and "Aborted" not in r.stderr and "Segmentation" not in r.stderr


def test_plan_from_file(brisk, d):
    curve = write(d, "curve.json", json.dumps(CURVE))
    r = run([brisk, "plan", "--rate", "1500", "--slo-p99-ms", "30", "--bench", curve, "--requests", "50000", "--json"])
    check(r.returncode == 0, f"plan --json exits 0 (stderr: {r.stderr})")
    if r.returncode != 0:
        return
    p = json.loads(r.stdout)
    mu = 1000 / 4
    check(abs(p["service_rate"] - mu) < 1e-9 and abs(p["replica_capacity"] - 500) < 1e-9,
          f"mu is the batch-1 rate 250/s and one replica batches up to 500/s ({p['service_rate']}, "
          f"{p['replica_capacity']})")
    rep = p["replicas"]
    check(rep["mmc"] > 0 and rep["simulated"] > 0 and rep["simulated"] <= rep["unbatched"],
          f"every model has an answer and batching needs no more replicas than no batching ({rep})")
    for row in p["rows"]:
        c = row["replicas"]
        if "mmc" in row:
            want = erlang_c(c, 1500 / mu)
            check(abs(row["mmc"]["p_wait"] - want) < 1e-9,
                  f"P(wait) at {c} replicas is Erlang C by its sum ({row['mmc']['p_wait']} vs {want})")
            wq = want / (c * mu - 1500) * 1e3
            check(abs(row["mmc"]["mean_wait_ms"] - wq) < 1e-6, f"Wq at {c} replicas is C / (c mu - lambda)")
            rho = 1500 / (c * mu)
            approx = (rho ** (math.sqrt(2 * (c + 1)) - 1) / (c * mu * (1 - rho))
                      * (1 + (1 - rho) * (c - 1) * math.sqrt(c / (c + 1)))) * 1e3
            check(abs(row["report_approximation"]["mean_wait_ms"] - approx) < 1e-6,
                  f"the report's Wq at {c} replicas is its formula ({approx} ms)")
        if c == rep["simulated"]:
            check(row["simulated"]["p99_ms"] <= 30, f"the simulated answer {c} meets the SLO")
        if c == rep["simulated"] - 1:
            check(not row["simulated"]["stable"] or row["simulated"]["p99_ms"] > 30,
                  f"one replica fewer ({c}) does not meet it")
    r = run([brisk, "plan", "--rate", "1500", "--slo-p99-ms", "30", "--bench", curve, "--requests", "50000"])
    check(r.returncode == 0 and "exact M/M/c" in r.stdout and "the report's approximation" in r.stdout
          and "simulation of brisk's batcher" in r.stdout and "check: the simulator run as M/M/c" in r.stdout,
          f"the table names the three models and the check (rc {r.returncode}, stdout: {r.stdout[:400]})")


def test_bad_input(brisk, d):
    curve = write(d, "ok.json", json.dumps(CURVE))
    for flags, message in [
        (["--rate", "0", "--slo-p99-ms", "30"], "--rate is 0; expected > 0 requests per second"),
        (["--rate", "-5", "--slo-p99-ms", "30"], "--rate is -5; expected > 0 requests per second"),
        (["--rate", "100", "--slo-p99-ms", "0"], "--slo-p99-ms is 0; expected > 0 milliseconds"),
        (["--rate", "100", "--slo-p99-ms", "-1"], "--slo-p99-ms is -1; expected > 0 milliseconds"),
        (["--slo-p99-ms", "30"], "--rate is missing"),
        (["--rate", "100"], "--slo-p99-ms is missing"),
    ]:
        r = run([brisk, "plan", "--bench", curve, *flags])
        check(r.returncode == 2 and message in r.stderr, f"plan {flags} exits 2 with '{message}' ({r.stderr})")
    bad = dict(CURVE, batch_ms=dict(CURVE["batch_ms"], **{"8": -1}))
    for name, text, message in [
        ("negative.json", json.dumps(bad), 'batch_ms["8"] is -1; expected > 0'),
        ("garbage.json", "{not json", "is not valid JSON"),
        ("decreasing.json", '{"batch_ms":{"1":5,"2":4}}', 'batch_ms["2"] is 4 ms, below batch_ms["1"] = 5 ms'),
        ("gap.json", '{"batch_ms":{"1":5,"4":9}}', "expected every size from 1 to the largest"),
    ]:
        r = run([brisk, "plan", "--rate", "100", "--slo-p99-ms", "30", "--bench", write(d, name, text)])
        check(r.returncode == 1 and message in r.stderr and name in r.stderr and not_a_crash(r),
              f"a curve file {name} is refused naming the file and '{message}' (rc {r.returncode}, {r.stderr})")
    r = run([brisk, "plan", "--rate", "100", "--slo-p99-ms", "30", "--bench", os.path.join(d, "missing.json")])
    check(r.returncode == 1 and "missing.json: file not found" in r.stderr, f"a missing file is named ({r.stderr})")
    # An endless file (issue 30: /dev/zero was read without a bound) is refused at the size cap.
    r = run([brisk, "plan", "--rate", "100", "--slo-p99-ms", "30", "--bench", "/dev/zero"])
    check(r.returncode == 1 and "/dev/zero: is larger than 4194304 bytes" in r.stderr and not_a_crash(r),
          f"--bench /dev/zero is refused at the size cap ({r.stderr})")
    r = run([brisk, "plan", "--rate", "100", "--slo-p99-ms", "2", "--bench", curve])
    check(r.returncode == 1 and "the P99 SLO (2.000 ms) is below the batch-1 service time (4.000 ms)" in r.stderr
          and "--slo-p99-ms 2" in r.stderr, f"an impossible SLO is reported with both numbers ({r.stderr})")


def test_measure(brisk, d):
    out = os.path.join(d, "measured.json")
    r = run([brisk, "plan", "--measure-out", out, "--seq", "8", "--max-batch", "4", "--iters", "3", "--warmup", "1",
             "--threads", "2"])
    check(r.returncode == 0 and os.path.exists(out), f"--measure-out writes the curve (rc {r.returncode}, {r.stderr})")
    if not os.path.exists(out):
        return
    with open(out) as f:
        c = json.load(f)
    ms = [c["batch_ms"][str(b)] for b in range(1, 5)]
    check(c["seq"] == 8 and len(c["batch_ms"]) == 4 and all(v > 0 for v in ms)
          and all(a <= b for a, b in zip(ms, ms[1:])), f"the measured curve has sizes 1..4, positive, non-decreasing {c}")
    check(c["jitter_cv"] >= 0 and "all-MiniLM-L6-v2" in c["model"], f"it names the model and its jitter ({c})")
    # An SLO far above the slowest batch (this shared machine's noise can make jitter_cv large), at a rate a
    # replica can carry: the simulation must find a fleet.
    slo = 200 * ms[-1]
    r = run([brisk, "plan", "--rate", f"{0.5 * 1000 / ms[0]:.3f}", "--slo-p99-ms", f"{slo:.3f}", "--bench", out,
             "--requests", "20000", "--json"])
    check(r.returncode == 0 and json.loads(r.stdout)["replicas"]["simulated"] >= 1,
          f"the measured curve plans (rc {r.returncode}, stdout {r.stdout[:300]}, stderr: {r.stderr})")


def main():
    brisk = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        test_plan_from_file(brisk, d)
        test_bad_input(brisk, d)
        test_measure(brisk, d)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
