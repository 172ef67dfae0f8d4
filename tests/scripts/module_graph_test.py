#!/usr/bin/env python3
"""tests/check_module_graph.py catches what it is for: on a copy of the tree's headers, sources, lib/CMakeLists.txt
and docs/architecture.md, each planted defect (a wrong-way #include, a relative path into another module's private
folder, a cycle of DEPS, a table that says something else than the DEPS) makes it fail with a message naming it,
and the clean copy passes.

  module_graph_test.py SOURCE_ROOT
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "tests", "check_module_graph.py")


def copy_tree(dst):
    for folder in ("include", "lib"):
        shutil.copytree(os.path.join(ROOT, folder), os.path.join(dst, folder))
    os.makedirs(os.path.join(dst, "docs"))
    shutil.copy(os.path.join(ROOT, "docs", "architecture.md"), os.path.join(dst, "docs"))


def run(tree):
    p = subprocess.run([sys.executable, CHECK, tree], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def edit(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text, f"{path} lacks {old!r}"
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))


def append(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


CASES = [
    ("a public kernels header includes the runtime",
     lambda t: append(os.path.join(t, "include/brisk/kernels/linear.h"), '#include "brisk/runtime/runtime.h"'),
     "kernels reaches runtime"),
    ("the model reaches into the runtime's private folder",
     lambda t: append(os.path.join(t, "lib/model/encoder.cc"), '#include "../runtime/runtime_impl.h"'),
     "model reaches lib/runtime"),
    ("the batcher includes the cache",
     lambda t: append(os.path.join(t, "include/brisk/batch/batcher.h"), '#include "brisk/cache/cache.h"'),
     "batch reaches cache"),
    ("a module loses a dependency it uses",
     lambda t: edit(os.path.join(t, "lib/CMakeLists.txt"), "brisk_module(model DEPS core kernels)",
                    "brisk_module(model DEPS core)"),
     "model reaches kernels"),
    ("the DEPS form a cycle",
     lambda t: edit(os.path.join(t, "lib/CMakeLists.txt"), "brisk_module(kernels DEPS core)",
                    "brisk_module(kernels DEPS core model)"),
     "the modules form a cycle: "),
    ("the table says more than the DEPS",
     lambda t: edit(os.path.join(t, "docs/architecture.md"), "| core, metrics |", "| core, metrics, model |"),
     "docs/architecture.md says "),
]


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean")
        copy_tree(clean)
        rc, out = run(clean)
        if rc != 0:
            print(f"FAIL the clean copy does not pass (rc {rc}):\n{out}")
            failures += 1
        for i, (what, plant, expected) in enumerate(CASES):
            tree = os.path.join(tmp, f"case{i}")
            copy_tree(tree)
            plant(tree)
            rc, out = run(tree)
            if rc == 0 or expected not in out:
                print(f"FAIL {what}: rc {rc}, expected 1 and a message with {expected!r}; got:\n{out}")
                failures += 1
            else:
                print(f"ok   {what}: {out.splitlines()[0]}")
    print(f"{len(CASES) + 1 - failures} of {len(CASES) + 1} cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
