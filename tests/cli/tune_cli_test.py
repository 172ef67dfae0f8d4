#!/usr/bin/env python3
"""`brisk tune` and --policy as a user runs them: a short real tune (a tiny budget, no speed asserted) writes a policy
file with its provenance; the runtime loads it (`brisk bench --policy` shows the policy's batch limit in its forward
passes per call); bad flags and bad policy files are refused with messages naming them.

    tune_cli_test.py BRISK_CLI
Prints 'N passed, N failed' and exits non-zero on any failure."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_harness import check, run, summary  # noqa: E402


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    brisk = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "policy.json")
        # A few seconds: 0.5 s per candidate, one round, one final repeat; the budget cuts the search short.
        r = run([brisk, "tune", "--rate", "8", "--slo-p99-ms", "500", "--duration-s", "0.5", "--budget-s", "12",
                 "--max-rounds", "1", "--final-repeats", "1", "--threads", "2", "--json", "--out", out])
        check(r.returncode == 0, f"brisk tune exits 0 ({r.returncode}: {r.stderr})")
        report = json.loads(r.stdout) if r.returncode == 0 else {}
        trials = report.get("trials", [])
        check(len(trials) >= 2 and trials[0]["dimension"] == "defaults",
              f"the defaults are measured first ({[t['dimension'] for t in trials]})")
        check(any(t["round"] == -1 and t["dimension"] == "final: defaults" for t in trials),
              "the defaults are measured again in the final comparison")
        check(report.get("evaluations", 0) < report.get("grid_size", 0), "fewer evaluations than the grid")
        check(report.get("stop_reason") in ("budget", "max rounds", "no improvement"),
              f"a stop reason ({report.get('stop_reason')})")
        check(os.path.exists(out), "the policy file is written")
        if os.path.exists(out):
            with open(out) as f:
                policy = json.load(f)
            check(policy["format"] == "brisk-serving-policy" and policy["version"] == 1, "the file's format")
            chosen = report.get("chosen", {})
            check(all(policy[k] == chosen.get(k) for k in ("max_batch_size", "preferred_batch_multiple",
                                                              "executor_threads", "num_threads")),
                  f"the file holds the chosen candidate ({policy}, {chosen})")
            prov = policy.get("provenance", {})
            check(prov.get("tool") == "brisk tune" and prov.get("rate_per_s") == 8 and prov.get("slo_p99_ms") == 500
                  and prov.get("mix") == "faq" and "date" in prov and "p99_ms" in prov and "defaults_p99_ms" in prov,
                  f"the provenance records how it was tuned ({prov})")
            # The runtime loads the file the tuner wrote.
            r = run([brisk, "embed", "--policy", out, "hello"])
            check(r.returncode == 0 and '"embedding"' in r.stdout, f"brisk embed --policy loads it ({r.stderr})")

        # --policy changes the runtime observably: a batch limit of 3 splits a bench call of 10 texts in 4 passes.
        p3 = os.path.join(tmp, "p3.json")
        with open(p3, "w") as f:
            json.dump({"max_batch_size": 3, "preferred_batch_multiple": 1}, f)
        common = ["bench", "--batch", "10", "--seq", "8", "--iters", "1", "--warmup", "0", "--threads", "2", "--json"]
        r = run([brisk] + common + ["--policy", p3])
        check(r.returncode == 0 and json.loads(r.stdout)["passes_per_call"] == 4.0,
              f"bench --policy: 4 passes per call ({r.stdout} {r.stderr})")
        r = run([brisk] + common)
        check(r.returncode == 0 and json.loads(r.stdout)["passes_per_call"] == 1.0,
              f"bench without a policy: 1 pass per call ({r.stdout})")

        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{"max_batch_size": 3, "batch": 4}')
        r = run([brisk, "info", "--policy", bad])
        check(r.returncode == 1 and "bad.json" in r.stderr and 'unknown key "batch"' in r.stderr,
              f"a bad policy file is named with the unknown key ({r.returncode}: {r.stderr})")
        r = run([brisk, "tune", "--rate", "0", "--slo-p99-ms", "50"])
        check(r.returncode == 2 and "--rate" in r.stderr, f"--rate 0 is a usage error ({r.stderr})")
        r = run([brisk, "tune", "--rate", "5", "--slo-p99-ms", "50", "--mix", os.path.join(tmp, "none.txt")])
        check(r.returncode == 1 and "none.txt" in r.stderr, f"a missing mix file is named ({r.stderr})")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
