#!/usr/bin/env python3
"""Runs a test script under an optional Python environment (a venv with packages the system Python lacks), or
reports the test Skipped when that environment is missing.

    run_with_python.py --python VENV/bin/python --imports torch,transformers --how "COMMAND" -- SCRIPT ARGS...

Exits with 77 (the tests' SKIP_RETURN_CODE) after printing why and how to create the environment when the
interpreter does not exist or cannot import the packages; otherwise exits with SCRIPT's own code. The check runs
when the test runs, so a venv made after configuring counts without reconfiguring."""
import argparse
import os
import subprocess
import sys

SKIP = 77


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True, help="the interpreter the script needs")
    ap.add_argument("--imports", default="", help="comma-separated modules that interpreter must import")
    ap.add_argument("--how", required=True, help="the command that creates the environment")
    ap.add_argument("script", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    script = a.script[1:] if a.script[:1] == ["--"] else a.script
    if not script:
        ap.error("no script given after --")
    if not os.access(a.python, os.X_OK):
        print(f"SKIP: no {a.python}, the Python this test needs. Create it with: {a.how}")
        return SKIP
    modules = [m for m in a.imports.split(",") if m]
    if modules:
        r = subprocess.run([a.python, "-c", "import " + ", ".join(modules)], capture_output=True, text=True)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["?"])[-1]
            print(f"SKIP: {a.python} cannot import {', '.join(modules)} ({last}). Install them with: {a.how}")
            return SKIP
    sys.stdout.flush()
    r = subprocess.run([a.python, *script])
    if r.returncode == SKIP:
        # The script itself skipped: that is its verdict, with its own reason above.
        return SKIP
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
