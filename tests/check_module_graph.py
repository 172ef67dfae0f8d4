#!/usr/bin/env python3
"""The module graph (issue 26, item 1). The graph itself is lib/CMakeLists.txt's: one `brisk_module(M DEPS ...)` line
per module, the modules M may use. This check reads it and fails when

- a file of module M (include/brisk/M/ or lib/M/) includes brisk/X/... or reaches lib/X/ by a relative path, and X is
  neither M nor one of M's DEPS (the CLI, lib/cli/, may use every module);
- the DEPS form a cycle (CMake's generate step refuses one too);
- docs/architecture.md's table does not say, module for module, what the DEPS say (or lists another set of modules).

It runs as a build step of libbrisk.so (brisk_module_graph) and as the ctest tests.module_graph.

  check_module_graph.py [SOURCE_ROOT]
"""
import os
import re
import sys

MODULE_LINE = re.compile(r"^brisk_module\((\w+)(?:\s+DEPS((?:\s+\w+)+))?\)", re.M)


def module_graph(root):
    """{module: set of modules it may use} from lib/CMakeLists.txt's brisk_module lines, plus the CLI's."""
    with open(os.path.join(root, "lib", "CMakeLists.txt")) as f:
        text = f.read()
    graph = {m.group(1): set((m.group(2) or "").split()) for m in MODULE_LINE.finditer(text)}
    graph["cli"] = set(graph)
    return graph


def find_cycle(graph):
    """A list of modules forming a cycle of DEPS (first == last), or None."""
    state = {}

    def visit(m, path):
        state[m] = "open"
        for d in sorted(graph.get(m, ())):
            if state.get(d) == "open":
                return path[path.index(d):] + [d] if d in path else [m, d]
            if d not in state:
                cycle = visit(d, path + [d])
                if cycle:
                    return cycle
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            cycle = visit(m, [m])
            if cycle:
                return cycle
    return None


def documented_graph(root, modules):
    """{module: set} from docs/architecture.md's table rows "| module | owns | may use |"; parenthetical remarks in the
    may-use cell are ignored, "nothing" is the empty set and "every module" all of them."""
    graph = {}
    with open(os.path.join(root, "docs", "architecture.md")) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 3 or cells[0] not in modules:
                continue
            uses = re.sub(r"\([^)]*\)", "", cells[2]).strip()
            if uses == "nothing":
                graph[cells[0]] = set()
            elif uses == "every module":
                graph[cells[0]] = set(modules) - {"cli"}
            else:
                graph[cells[0]] = {u.strip() for u in uses.split(",") if u.strip()}
    return graph


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def crossings(root, graph):
    """(file, reached) for every include that leaves its module: reached is the module of a brisk/X/ include or
    "lib/X" for a relative path into another module's private folder."""
    found = {}
    for top in ("include/brisk", "lib"):
        base = os.path.join(root, top)
        for module in sorted(os.listdir(base)):
            if module not in graph:
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
                                if reached != module and reached not in graph[module]:
                                    found.setdefault((rel, reached), f"{rel}:{number}: {line.strip()}")
                            elif target.startswith(".."):
                                parts = os.path.normpath(os.path.join(os.path.dirname(rel), target)).split(os.sep)
                                if parts[0] == "lib" and len(parts) > 2 and parts[1] != module:
                                    found.setdefault((rel, f"lib/{parts[1]}"), f"{rel}:{number}: {line.strip()}")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    graph = module_graph(root)
    failures = 0
    if len(graph) < 2:
        print("FAIL lib/CMakeLists.txt has no brisk_module(...) lines; expected one per module")
        return 1
    cycle = find_cycle(graph)
    if cycle:
        print(f"FAIL lib/CMakeLists.txt: the modules form a cycle: {' -> '.join(cycle)}; expected a graph without one")
        failures += 1
    documented = documented_graph(root, graph)
    for module in sorted(graph):
        if module not in documented:
            print(f"FAIL docs/architecture.md has no row for module {module}; expected one (lib/CMakeLists.txt)")
            failures += 1
        elif documented[module] != graph[module]:
            print(f"FAIL docs/architecture.md says {module} may use {', '.join(sorted(documented[module])) or 'nothing'}"
                  f"; lib/CMakeLists.txt says {', '.join(sorted(graph[module])) or 'nothing'}")
            failures += 1
    found = crossings(root, graph)
    for (rel, reached), where in sorted(found.items()):
        module = rel.split("/")[2] if rel.startswith("include/") else rel.split("/")[1]
        allowed = ", ".join(sorted(graph[module])) or "nothing"
        print(f"FAIL {where}\n     {module} reaches {reached}; expected only {allowed} (lib/CMakeLists.txt)")
    print(f"{len(graph)} modules; {len(found)} crossings; {failures} differences from docs/architecture.md")
    return 1 if found or failures else 0


if __name__ == "__main__":
    sys.exit(main())
