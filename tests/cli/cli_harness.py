"""What the CLI test scripts share: a pass/fail tally, running a command as a user would, and the summary."""
import subprocess
import sys

passed = 0
failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}", file=sys.stderr)


def run(args, stdin=None):
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=300)


def summary():
    """Prints 'N passed, N failed'; the exit code: 1 on any failure."""
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
