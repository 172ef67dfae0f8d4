#!/usr/bin/env python3
"""The module graph, checked on every #include (issue 26, item 1): a file of module M under include/brisk/M/ or lib/M/
may include brisk/X/... (or reach lib/X/ by a relative path) only when X is M or a module M may use, and no file
includes another module's private lib/ header by a "../X/..." path. The graph is MAY_USE below; docs/architecture.md
says what each module owns. Known crossings not yet cut are listed in KNOWN, a list that may only shrink.

  check_module_graph.py [SOURCE_ROOT]
"""
import os
import re
import sys

# What each module may use. A module uses only the modules below it: text -> caches -> batcher -> backend -> kernels.
MAY_USE = {
    "core": set(),
    "metrics": {"core"},
    "kernels": {"core"},
    "model": {"core", "kernels"},
    "quant": {"core", "kernels", "model"},
    "prune": {"core", "kernels", "model", "quant"},  # quant: a pruned model is written in the brisk model file format
    "batch": {"core", "metrics"},
    "cache": {"core", "metrics", "kernels"},
    "runtime": {"core", "metrics", "kernels", "model", "quant", "batch", "cache"},
    "cli": {"core", "metrics", "kernels", "model", "quant", "prune", "batch", "cache", "runtime"},
}

# The crossings issue 26 found and has yet to cut (item 2), as (file, what it reaches). Each is allowed until it is
# cut; once it no longer occurs the check fails until it is removed from here too, so this list only shrinks.
KNOWN = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def crossings(root):
    """(file, reached) for every include that leaves its module: reached is the module of a brisk/X/ include or
    "lib/X" for a relative path into another module's private folder."""
    found = {}
    for top in ("include/brisk", "lib"):
        base = os.path.join(root, top)
        for module in sorted(os.listdir(base)):
            if module not in MAY_USE:
                continue
            for folder, _, files in os.walk(os.path.join(base, module)):
                for name in sorted(files):
                    path = os.path.join(folder, name)
                    rel = os.path.relpath(path, root)
                    with open(path, errors="replace") as f:
                        for number, line in enumerate(f, 1):
                            m = INCLUDE.match(line)
                            if not m:
                                continue
                            target = m.group(1)
                            if target.startswith("brisk/"):
                                reached = target.split("/")[1]
                                if reached != module and reached not in MAY_USE[module]:
                                    found.setdefault((rel, reached), f"{rel}:{number}: {line.strip()}")
                            elif target.startswith(".."):
                                parts = os.path.normpath(os.path.join(os.path.dirname(rel), target)).split(os.sep)
                                if parts[0] == "lib" and len(parts) > 2 and parts[1] != module:
                                    found.setdefault((rel, f"lib/{parts[1]}"), f"{rel}:{number}: {line.strip()}")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    found = crossings(root)
    new = {k: v for k, v in found.items() if k not in KNOWN}
    gone = [k for k in KNOWN if k not in found]
    for (rel, reached), where in sorted(new.items()):
        module = rel.split("/")[2] if rel.startswith("include/") else rel.split("/")[1]
        allowed = ", ".join(sorted(MAY_USE[module])) or "nothing"
        print(f"FAIL {where}\n     {module} reaches {reached}; expected only {allowed} (tests/check_module_graph.py)")
    for rel, reached in gone:
        print(f"FAIL {rel} no longer reaches {reached}: remove it from KNOWN in tests/check_module_graph.py")
    print(f"{len(found)} crossings, {len(found) - len(new)} of them known (issue 26); {len(new)} new, {len(gone)} cut")
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(main())
