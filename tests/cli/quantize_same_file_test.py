#!/usr/bin/env python3
"""`brisk quantize` writes the same file, byte for byte, whatever runs it: calibration, SmoothQuant's statistics and
the fidelity the file records run on reproducible arithmetic (EncoderOptions::reproducible). The tiny XLM-R and
Qwen3 models, three plans each (int8 with SmoothQuant, int8-static, mixed), at every BRISK_ISA cap this CPU has and
1 to 3 threads; with --emulated, on qemu-user's emulated CPUs instead (Nehalem-v1: no AVX; EPYC-Milan: AVX2, no
AVX-512), CPUID and all, against the file this machine writes.

    quantize_same_file_test.py BRISK_BINARY [--emulated]
Prints 'N passed, N failed'; exits 1 on any failure, 77 (ctest's skip) for --emulated without qemu-x86_64."""
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

from cli_harness import check, summary

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
MODELS = ["tiny_xlmr", "tiny_qwen3"]
PLANS = [["--plan", "int8", "--smoothquant", "0.5"], ["--plan", "int8-static"], ["--plan", "mixed"]]
ISA_LEVELS = ["scalar", "avx2", "avx_vnni", "avx512", "avx512_vnni", "avx512_bf16"]
EMULATED_CPUS = ["Nehalem-v1", "EPYC-Milan"]


def levels_here(brisk):
    """The caps up to brisk info's detected level (an AVX-512 CPU without AVX-VNNI runs avx2 when capped at
    avx_vnni: one level twice, which does no harm)."""
    r = subprocess.run([brisk, "info", "--model", os.path.join(DATA, "tiny_xlmr")], capture_output=True, text=True)
    detected = next(line.split('"')[3] for line in r.stdout.split("\n") if '"cpu_isa_detected"' in line)
    return ISA_LEVELS[:ISA_LEVELS.index(detected) + 1]


def quantize(command, model, plan, calib, out, threads, env=None):
    args = command + ["quantize", "--model", os.path.join(DATA, model), "--calib", calib, "--out", out,
                      "--threads", str(threads)] + plan
    r = subprocess.run(args, capture_output=True, text=True, timeout=1200, env=env)
    check(r.returncode == 0, f"{' '.join(args)} exits 0 (stderr: {r.stderr[-2000:]})")
    return r.returncode == 0


def main():
    brisk, emulated = sys.argv[1], "--emulated" in sys.argv[2:]
    if emulated and shutil.which("qemu-x86_64") is None:
        print("qemu-x86_64 is not installed; expected Debian's qemu-user (scripts/setup installs it)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        calib = os.path.join(tmp, "calib.txt")  # 64 texts: enough for every statistic, quick under emulation
        with open(os.path.join(DATA, "multilingual_texts.txt"), encoding="utf-8") as f:
            lines = f.read().splitlines()[:64]
        with open(calib, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        for model in MODELS:
            for i, plan in enumerate(PLANS):
                what = f"{model} {' '.join(plan)}"
                first = os.path.join(tmp, f"{model}.{i}.safetensors")
                if not quantize([brisk], model, plan, calib, first, 2):
                    continue
                if emulated:
                    runs = [(["qemu-x86_64", "-cpu", cpu, brisk], cpu, 2, None) for cpu in EMULATED_CPUS]
                else:
                    runs = [([brisk], f"BRISK_ISA={level}", threads, dict(os.environ, BRISK_ISA=level))
                            for level in levels_here(brisk) for threads in (1, 3)]
                for command, where, threads, env in runs:
                    out = os.path.join(tmp, "again.safetensors")
                    if quantize(command, model, plan, calib, out, threads, env):
                        check(filecmp.cmp(first, out, shallow=False),
                              f"{what}: the file written at {where} with {threads} threads is the one written here "
                              "with 2")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
