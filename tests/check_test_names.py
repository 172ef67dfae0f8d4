#!/usr/bin/env python3
"""Fails when a test name would break ctest's registration or listing.

    check_test_names.py --ctest CTEST --build-dir DIR [--max-length N] -- CATCH_PROGRAM...

Checks (1) every name `ctest -N` lists for DIR, and (2) every test case name of each Catch2 program
(--list-test-names-only). A name must hold no '[' or ']': catch_discover_tests reads the names as a CMake list, in
which brackets group, so a bracket in a case name glues several cases into one ctest entry (tags, the second
argument of TEST_CASE, are fine). A name must hold no ';' (a CMake list separator) and be at most N characters."""
import argparse
import re
import subprocess
import sys


def problems(name, max_length):
    out = []
    if "[" in name or "]" in name:
        out.append("holds a bracket")
    if ";" in name:
        out.append("holds a ';'")
    if len(name) > max_length:
        out.append(f"is {len(name)} characters long (at most {max_length})")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctest", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--max-length", type=int, default=250)
    ap.add_argument("programs", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    programs = a.programs[1:] if a.programs[:1] == ["--"] else a.programs
    bad = []

    r = subprocess.run([a.ctest, "-N", "--test-dir", a.build_dir], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: {a.ctest} -N --test-dir {a.build_dir} exited {r.returncode}:\n{r.stderr}")
        return 1
    ctest_names = [m.group(1) for m in re.finditer(r"^\s*Test\s+#\d+: (.*)$", r.stdout, re.M)]
    if not ctest_names:
        print(f"FAIL: ctest -N listed no tests in {a.build_dir}:\n{r.stdout[-2000:]}")
        return 1
    for name in ctest_names:
        for p in problems(name, a.max_length):
            bad.append(f"ctest entry {name[:200]!r}... {p}")

    cases = 0
    for prog in programs:
        r = subprocess.run([prog, "--list-test-names-only"], capture_output=True, text=True)
        names = [line for line in r.stdout.splitlines() if line.strip()]
        if not names:
            bad.append(f"{prog} --list-test-names-only listed nothing (exit {r.returncode}): {r.stderr[-500:]}")
        cases += len(names)
        for name in names:
            for p in problems(name, a.max_length):
                bad.append(f"{prog}: TEST_CASE {name[:200]!r} {p}")

    for b in bad:
        print("FAIL:", b)
    print(f"checked {len(ctest_names)} ctest names and {cases} test case names of {len(programs)} Catch programs: "
          f"{len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
