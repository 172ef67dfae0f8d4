#!/usr/bin/env python3
"""Runs a command and passes only when it exits 0 AND its stdout matches a regular expression.

ctest's PASS_REGULAR_EXPRESSION alone ignores the exit code, so a client that printed the right lines and then
crashed or returned an error would pass.
Usage: run_and_match.py REGEX -- COMMAND [ARGS...]
"""
import re
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    pattern, command = sys.argv[1], sys.argv[3:]
    proc = subprocess.run(command, capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        print(f"run_and_match: exit code is {proc.returncode}; expected 0", file=sys.stderr)
        return 1
    if not re.search(pattern, proc.stdout):
        print(f"run_and_match: stdout does not match {pattern!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
