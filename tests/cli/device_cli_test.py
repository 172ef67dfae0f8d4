#!/usr/bin/env python3
"""The device flags of the `brisk` tool and the FAQ assistant (--device, --dtype, --no-remove-padding,
--device-memory-limit) and `brisk bench --mixed`, run as a user would.

    device_cli_test.py BRISK_BINARY [FAQ_ASSISTANT_BINARY]
Prints 'N passed, N failed' and exits non-zero on any failure. On a machine without a GPU (or a build without
CUDA), --device cuda:0 must fail cleanly naming cuda; where `nvidia-smi -L` lists a GPU it must embed as the CPU
does."""
import json
import shutil
import subprocess
import sys

from cli_harness import check, run, summary


def gpu_listed():
    """Whether this machine shows an NVIDIA GPU (the CUDA path must then work, not just fail cleanly)."""
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and "GPU" in r.stdout


def not_a_crash(r):
    return r.returncode >= 0 and "Aborted" not in r.stderr and "Segmentation" not in r.stderr


def test_bad_values(brisk):
    r = run([brisk, "bench", "--device", "gpu", "--batch", "1", "--seq", "8"])
    check(r.returncode == 2 and "--device 'gpu' is not a device; expected cpu, cuda or cuda:N" in r.stderr,
          f"bench --device gpu exits 2 naming the value and the accepted forms (rc {r.returncode}, stderr: {r.stderr})")
    for cmd in (["embed", "hi"], ["info"]):
        for bad in ("cuda:", "cuda:-1", "cuda:x", "CPU0", ""):
            r = run([brisk, *cmd, "--device", bad])
            check(r.returncode == 2 and f"--device '{bad}' is not a device" in r.stderr and not_a_crash(r),
                  f"{cmd[0]} --device '{bad}' exits 2 with a message (rc {r.returncode}, stderr: {r.stderr})")
    for dtype in ("f16", "bf16"):
        r = run([brisk, "embed", "--dtype", dtype, "hi"])
        check(r.returncode == 2 and f"--dtype {dtype} is for cuda" in r.stderr,
              f"--dtype {dtype} on the cpu is refused naming the flag (rc {r.returncode}, stderr: {r.stderr})")
    r = run([brisk, "embed", "--dtype", "f32", "--threads", "2", "hi"])
    check(r.returncode == 0, f"--dtype f32 on the cpu embeds (stderr: {r.stderr})")
    r = run([brisk, "embed", "--dtype", "f64", "hi"])
    check(r.returncode == 2 and "--dtype" in r.stderr, f"--dtype f64 is refused (stderr: {r.stderr[:300]})")
    r = run([brisk, "embed", "--device-memory-limit", "-1", "hi"])
    check(r.returncode == 2 and not_a_crash(r), f"--device-memory-limit -1 is refused ({r.stderr[:300]})")
    for bad in ("12X", "1.5G", "G"):
        r = run([brisk, "embed", "--device-memory-limit", bad, "hi"])
        check(r.returncode == 2 and f"--device-memory-limit '{bad}' is not a size in bytes" in r.stderr,
              f"--device-memory-limit {bad} is refused (rc {r.returncode}, stderr: {r.stderr})")
    r = run([brisk, "embed", "--device-memory-limit", "99999999999T", "hi"])
    check(r.returncode == 2 and "is too large" in r.stderr, f"a limit past 2^64 is refused ({r.stderr})")
    r = run([brisk, "bench", "--help"])
    check(r.returncode == 0 and all(f in r.stdout for f in ("--device", "--dtype", "--no-remove-padding",
                                                            "--device-memory-limit", "--mixed")),
          "bench --help lists the device flags and --mixed")


def test_cuda(brisk, gpu):
    cmd = [brisk, "embed", "--device", "cuda:0", "--threads", "2", "hi"]
    r = run(cmd)
    if not gpu:
        # A build without CUDA: UNIMPLEMENTED naming BRISK_WITH_CUDA; with CUDA but no GPU: NOT_FOUND naming cuda:0.
        check(r.returncode == 1 and "brisk: error:" in r.stderr and "cuda" in r.stderr.lower() and not_a_crash(r),
              f"embed --device cuda:0 without a GPU exits 1 naming cuda (rc {r.returncode}, stderr: {r.stderr})")
        check(r.stdout == "", "embed --device cuda:0 without a GPU prints no embedding")
        r = run([brisk, "embed", "--device", "cuda:0", "--device-memory-limit", "1G", "--dtype", "bf16", "hi"])
        check(r.returncode == 1 and "cuda" in r.stderr.lower(), f"the other device flags change nothing ({r.stderr})")
        r = run([brisk, "bench", "--device", "cuda", "--batch", "1", "--seq", "8", "--json"])
        check(r.returncode == 1 and "cuda" in r.stderr.lower() and r.stdout == "",
              f"bench --device cuda without a GPU exits 1 naming cuda ({r.stderr})")
        return
    texts = ["How do I block my card?", "opening hours of the branch", "x"]
    cpu = run([brisk, "embed", "--threads", "2", *texts])
    for dtype in ("f16", "bf16", "f32"):
        g = run([brisk, "embed", "--device", "cuda:0", "--dtype", dtype, *texts])
        check(g.returncode == 0, f"embed --device cuda:0 --dtype {dtype} exits 0 (stderr: {g.stderr})")
        if g.returncode == 0 and cpu.returncode == 0:
            gv = [json.loads(line)["embedding"] for line in g.stdout.splitlines()]
            cv = [json.loads(line)["embedding"] for line in cpu.stdout.splitlines()]
            cos = [sum(a * b for a, b in zip(x, y)) for x, y in zip(gv, cv)]
            floor = 0.9999 if dtype == "f32" else 0.999 if dtype == "f16" else 0.995
            check(len(cos) == 3 and min(cos) > floor, f"cuda {dtype} embeddings match the CPU's: cosine {cos}")
    r = run([brisk, "bench", "--device", "cuda:0", "--batch", "8", "--seq", "64", "--mixed", "--iters", "3", "--json"])
    check(r.returncode == 0 and json.loads(r.stdout or "{}").get("device") == "cuda:0",
          f"bench --device cuda:0 --mixed runs ({r.stderr})")
    r = run([brisk, "info", "--device", "cuda:0"])
    check(r.returncode == 0 and json.loads(r.stdout or "{}").get("device") == "cuda:0", f"info on cuda ({r.stderr})")


def test_bench_json(brisk):
    r = run([brisk, "bench", "--batch", "2", "--seq", "16", "--iters", "2", "--warmup", "1", "--threads", "2",
             "--json", "--device", "cpu"])
    check(r.returncode == 0, f"bench --device cpu exits 0 (stderr: {r.stderr})")
    if r.returncode == 0:
        b = json.loads(r.stdout)
        check(b["device"] == "cpu" and b["dtype"] == "f32" and b["remove_padding"] is True and not b["mixed"],
              f"bench --json reports device, dtype, padding removal: {b}")
        check(b["tokens_per_call"] == 32, f"bench counts 2 x 16 tokens per call: {b['tokens_per_call']}")
    r = run([brisk, "bench", "--batch", "4", "--seq", "16", "--mixed", "--iters", "2", "--warmup", "0",
             "--threads", "2", "--json", "--no-remove-padding", "--device-memory-limit", "512M"])
    check(r.returncode == 0, f"bench --mixed exits 0 (stderr: {r.stderr})")
    if r.returncode == 0:
        b = json.loads(r.stdout)
        # Lengths 8, 11, 13, 16: spread evenly from 8 to --seq.
        check(b["mixed"] and b["tokens_per_call"] == 8 + 11 + 13 + 16, f"--mixed lengths: {b['tokens_per_call']}")
        check(b["remove_padding"] is False and b["device_memory_limit"] == 512 << 20,
              f"--no-remove-padding and --device-memory-limit reach the options: {b}")
        check(abs(b["tokens_per_s"] - b["tokens_per_call"] / (b["p50_ms"] / 1e3)) < 1e-6 * b["tokens_per_s"],
              "tokens_per_s counts the real tokens")
    r = run([brisk, "bench", "--batch", "3", "--seq", "12", "--mixed", "--iters", "1", "--warmup", "0",
             "--threads", "2"])
    check(r.returncode == 0 and "mixed: 8 to 12" in r.stdout and "device      cpu (f32)" in r.stdout,
          f"the bench report names the lengths and the device (stdout: {r.stdout}, stderr: {r.stderr})")
    r = run([brisk, "info", "--device", "cpu"])
    check(r.returncode == 0 and json.loads(r.stdout)["device"] == "cpu", f"info --device cpu ({r.stderr})")


def test_faq_assistant(faq, gpu):
    r = run([faq, "--limit", "2", "--threads", "2", "--device", "cpu"])
    check(r.returncode == 0 and "device cpu (f32 activations)" in r.stdout and "device: cpu, f32" in r.stdout,
          f"faq_assistant prints its device in the header and the report (stderr: {r.stderr})")
    r = run([faq, "--limit", "2", "--device", "gpu"])
    check(r.returncode == 2 and "--device 'gpu' is not a device; expected cpu, cuda or cuda:N" in r.stderr,
          f"faq_assistant --device gpu exits 2 with the message (stderr: {r.stderr})")
    r = run([faq, "--limit", "2", "--dtype", "f8"])
    check(r.returncode == 2, "faq_assistant --dtype f8 exits 2")
    r = run([faq, "--limit", "2", "--dtype", "bf16"])
    check(r.returncode == 2 and "--dtype bf16 is for cuda" in r.stderr, f"faq_assistant --dtype bf16 on cpu ({r.stderr})")
    r = run([faq, "--limit", "2", "--threads", "2", "--device", "cuda:0"])
    if gpu:
        check(r.returncode == 0 and "device cuda:0 (f16 activations)" in r.stdout,
              f"faq_assistant runs on cuda:0 (stderr: {r.stderr})")
    else:
        check(r.returncode == 1 and "cuda" in r.stderr.lower() and not_a_crash(r),
              f"faq_assistant --device cuda:0 without a GPU exits 1 naming cuda (stderr: {r.stderr})")


def main():
    brisk = sys.argv[1]
    gpu = gpu_listed()
    print(f"nvidia-smi lists a GPU: {gpu}")
    test_bad_values(brisk)
    test_cuda(brisk, gpu)
    test_bench_json(brisk)
    if len(sys.argv) > 2:
        test_faq_assistant(sys.argv[2], gpu)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
