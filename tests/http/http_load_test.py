"""benchmarks/http/http_load.cc (brisk_http_load) on a real examples/http_server: its argument errors, and one tiny
interleaved open-loop cell whose per-request records must show the same schedule sent both ways, every request
answered 200 (a 60 s deadline, so a slow shared machine gets no 429 or 504), and consistent times. No speed is
asserted (speed goes in benchmarks/RESULTS.md).
usage: http_load_test.py BRISK_HTTP_LOAD HTTP_SERVER"""
import csv
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from http_harness import FAILURES, Server, check  # noqa: E402

MODEL = os.environ.get("BRISK_MODEL_DIR", os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2"))


def run(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120)


def main():
    tool, server = sys.argv[1], sys.argv[2]
    r = run(tool, "--help")
    check(r.returncode == 0 and "--loads" in r.stdout and "--slo-ms" in r.stdout, "--help lists the options")
    r = run(tool, "--mode", "http")
    check(r.returncode == 2 and "--port is 0; expected http_server's port" in r.stderr, f"no --port: {r.stderr!r}")
    r = run(tool, "--port", "1", "--loads", "0.5,0")
    check(r.returncode != 0 and "--loads" in r.stderr, f"a zero load is refused: {r.stderr!r}")
    r = run(tool, "--port", "1", "--mode", "sideways")
    check(r.returncode != 0 and "--mode" in r.stderr, f"an unknown mode is refused: {r.stderr!r}")
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as empty:
        r = run(tool, "--port", "1", "--questions", empty.name)
        check(r.returncode == 2 and "holds no texts" in r.stderr, f"an empty question file: {r.stderr!r}")
    if not os.path.isdir(MODEL):
        print(f"SKIP: no model at {MODEL} (scripts/setup installs it; BRISK_MODEL_DIR overrides): only the option "
              "checks ran")
        return 77
    with Server(server, ["--model", MODEL, "--threads", "2", "--no-cache"]) as srv, \
            tempfile.TemporaryDirectory() as tmp:
        r = run(tool, "--port", str(srv.port), "--model", MODEL, "--threads", "2", "--rounds", "1", "--capacity", "40",
                "--loads", "0.5", "--duration-s", "1", "--pool", "4", "--slo-ms", "60000", "--records-dir", tmp)
        check(r.returncode == 0, f"one cell runs: {r.stderr[-500:]!r}")
        records = {}
        for mode in ("http", "in-process"):
            files = glob.glob(os.path.join(tmp, f"*_{mode}.csv"))
            check(len(files) == 1, f"{mode}: one record file")
            with open(files[0]) as f:
                records[mode] = list(csv.DictReader(f))
        h, i = records.get("http", []), records.get("in-process", [])
        check(len(h) > 0 and len(h) == len(i), f"the same number of requests both ways: {len(h)} and {len(i)}")
        check([x["scheduled_ns"] for x in h] == [x["scheduled_ns"] for x in i], "the same schedule both ways")
        for mode, rows in records.items():
            check(all(x["status"] == "200" for x in rows), f"{mode}: every request answered 200")
            check(all(int(x["scheduled_ns"]) <= int(x["sent_ns"]) <= int(x["done_ns"]) for x in rows),
                  f"{mode}: scheduled <= sent <= done")
        check("| 50% | http |" in r.stdout and "| 50% | in-process |" in r.stdout, "the medians table has both modes")
    print("FAIL" if FAILURES else "PASS", flush=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
