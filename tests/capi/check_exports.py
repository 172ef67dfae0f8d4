#!/usr/bin/env python3
"""Checks libbrisk.so's dynamic symbol table: the C symbols are exactly the functions brisk.h declares, and every
C++ symbol belongs to namespace brisk (or is the typeinfo/vtable of a brisk class)."""
import re
import subprocess
import sys


# The ABI v1 surface: functions may be added, never removed.
V1_FUNCTIONS = {
    "brisk_abi_version", "brisk_version_string", "brisk_last_error", "brisk_status_string",
    "brisk_runtime_options_init", "brisk_default_model_dir", "brisk_runtime_create", "brisk_runtime_destroy", "brisk_embedding_dim",
    "brisk_embed",
    # added in 0.2 with the batcher
    "brisk_submit_embed", "brisk_cancel", "brisk_stats_json", "brisk_metrics_prometheus",
    # added in 0.3 with the caches
    "brisk_cache_invalidate_tag", "brisk_cache_stats_json",
    # added with the pruner's sensitivity analysis
    "brisk_sensitivity_options_init", "brisk_prune_sensitivity",
}


def main(lib: str, header: str) -> int:
    declared = set(re.findall(r"BRISK_C_API\s+[^;(]*?\b(brisk_\w+)\s*\(", open(header).read()))
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    c_symbols = {n for n in names if not n.startswith("_Z")}
    mangled = [n for n in names if n.startswith("_Z")]
    demangled = subprocess.run(["c++filt"], input="\n".join(mangled), check=True, capture_output=True,
                               text=True).stdout.splitlines() if mangled else []
    failures = []
    if c_symbols != declared:
        failures.append(f"C symbols exported but not declared in brisk.h: {sorted(c_symbols - declared)}")
        failures.append(f"declared in brisk.h but not exported: {sorted(declared - c_symbols)}")
    # Template specialisations demangle with their return type first ("void brisk::layer_norm<...>(...)").
    allowed = re.compile(r"^(typeinfo for |typeinfo name for |vtable for |VTT for |guard variable for )?"
                         r"([\w:]+(<[^()]*>)? )?brisk::")
    foreign = [d for d in demangled if not allowed.match(d)]
    if foreign:
        failures.append(f"{len(foreign)} exported C++ symbols outside namespace brisk, e.g. {foreign[:5]}")
    missing_v1 = V1_FUNCTIONS - declared
    if missing_v1:
        failures.append(f"brisk.h no longer declares {sorted(missing_v1)} (ABI v1 functions are never removed)")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(declared)} C functions, {len(demangled)} C++ symbols checked")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
