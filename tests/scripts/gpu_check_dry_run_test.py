#!/usr/bin/env python3
"""scripts/gpu-check --dry-run, on a machine without a GPU: the logic of the GPU check with its CUDA steps stubbed.

    gpu_check_dry_run_test.py SCRIPT
Checks what can go wrong before a GPU machine is lent: bad arguments exit 2 with "X is Y; expected Z"; each mode's
step limits add up to no more than its budget (and a smaller budget makes a dry run fail); scripts/gpu_check_model.py
rebuilds the carried model faithfully (pure Python and numpy alike); the dry run packs what a device call would
carry, and that is at most 56 MiB in exact bytes (recounted here); results.md lists every step of both modes.
Skipped (exit 77) without the model (scripts/setup installs it), and, after every other check, when apt-get could not
download the Debian packages: the pack's size then comes from the recorded sizes (scripts/gpu-carry-debs.tsv), not
from a fresh download."""
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SKIP = 77
SCRIPT = None
LIMIT = 56 * 1024 * 1024
MODEL_DIR = Path(os.environ.get("BRISK_MODEL_DIR", os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2")))


def run(*args, env=None, timeout=60):
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return h


def exact_bytes(paths):
    total = 0
    for p in paths:
        if os.path.lexists(p) and not (os.path.isdir(p) and not os.path.islink(p)):
            total += os.lstat(p).st_size
    return total


class Arguments(unittest.TestCase):
    def bad(self, args, env=None, says=None):
        r = run(*args, env=env, timeout=20)
        self.assertEqual(r.returncode, 2, f"{args} {env}: {r.stdout} {r.stderr}")
        self.assertRegex(r.stderr, r"^gpu-check: .+ is .+; expected .+", f"{args} {env}")
        if says:
            self.assertIn(says, r.stderr)

    def test_bad_arguments_exit_2_naming_the_value_and_what_is_expected(self):
        self.bad(["--bogus"], says="--bogus is not an option; expected --dry-run, --pack")
        self.bad(["correctness", "figures"], says="the mode is correctness and figures; expected one mode")
        self.bad(["--dry-run", "/tmp/a", "/tmp/b"], says="the output directory is /tmp/a and /tmp/b")
        self.bad(["--pack", "--dry-run"], says="--pack with --dry-run is two actions")
        self.bad(["--pack", "figures"], says="the mode with --pack is figures; expected --pack [CARRY_DIR] alone")
        self.bad(["--dry-run"], env={"GPU_CHECK_BUDGET_S": "abc"}, says="GPU_CHECK_BUDGET_S is 'abc'; expected a whole")
        self.bad(["--dry-run"], env={"GPU_CHECK_BUDGET_S": "10"}, says="GPU_CHECK_BUDGET_S is '10'; expected a whole "
                                                                        "number, at least 30")
        self.bad(["--dry-run"], env={"GPU_CHECK_JOBS": "0"}, says="GPU_CHECK_JOBS is '0'")
        self.bad(["--pack"], env={"GPU_CHECK_PACK_LIMIT_MIB": "56M"}, says="GPU_CHECK_PACK_LIMIT_MIB is '56M'")

    def test_help_prints_the_header(self):
        r = run("--help", timeout=20)
        self.assertEqual(r.returncode, 0)
        self.assertIn("scripts/gpu-check correctness [OUTDIR]", r.stdout)
        self.assertIn("scripts/gpu-check figures [OUTDIR]", r.stdout)

    def test_a_budget_under_the_step_limits_fails_a_dry_run_before_anything_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run("--dry-run", "correctness", tmp, env={"GPU_CHECK_BUDGET_S": "100"}, timeout=20)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertRegex(r.stderr, r"correctness's step limits add up to \d+ s; expected at most its budget, 100 s")
            self.assertFalse((Path(tmp) / "carry").exists(), "nothing was packed")


class CarriedModel(unittest.TestCase):
    """scripts/gpu_check_model.py on a small made-up model: the word table as int8 rows, the rest fp16."""

    def test_pack_then_unpack_gives_fp16_weights_close_to_the_fp32_ones(self):
        helper = Path(SCRIPT).parent / "gpu_check_model.py"
        rng = random.Random(7)
        tensors = {"embeddings.word_embeddings.weight": [50, 24],
                   "encoder.layer.0.attention.self.query.weight": [24, 24], "embeddings.LayerNorm.bias": [24]}
        hdr, blobs, off, values = {}, [], 0, {}
        for name, shape in tensors.items():
            vals = [rng.gauss(0, 0.05) for _ in range(math.prod(shape))]
            if name.startswith("embeddings.word"):
                vals[24:48] = [0.0] * 24  # an all-zero row
            data = struct.pack(f"<{len(vals)}f", *vals)
            values[name] = struct.unpack(f"<{len(vals)}f", data)
            hdr[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(data)]}
            blobs.append(data)
            off += len(data)
        ids = struct.pack("<4q", 0, 1, 2, 3)
        hdr["embeddings.position_ids"] = {"dtype": "I64", "shape": [1, 4], "data_offsets": [off, off + len(ids)]}
        blobs.append(ids)
        h = json.dumps(hdr).encode()
        h += b" " * (-len(h) % 8)
        pythons = [sys.executable]
        pyref = Path.home() / ".cache/brisk/pyref/bin/python"
        if pyref.exists() and subprocess.run([pyref, "-c", "import numpy"], capture_output=True).returncode == 0:
            pythons.append(str(pyref))
        outs = []
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "model.safetensors"
            src.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))
            for i, py in enumerate(pythons):
                carried, rebuilt = Path(tmp) / f"carried{i}.safetensors.gz", Path(tmp) / f"rebuilt{i}.safetensors"
                for cmd in (["pack", src, carried], ["unpack", carried, rebuilt]):
                    r = subprocess.run([py, helper, *cmd, *(["--pure"] if i == 0 else [])], capture_output=True,
                                       text=True, timeout=60)
                    self.assertEqual(r.returncode, 0, r.stderr)
                outs.append((carried.read_bytes(), rebuilt.read_bytes()))
            rebuilt = Path(tmp) / "rebuilt0.safetensors"
            got = header(rebuilt)
            self.assertEqual(set(got), set(hdr), "every tensor is back, no scale tensor is left")
            raw = rebuilt.read_bytes()
            base = 8 + struct.unpack("<Q", raw[:8])[0]
            for name, shape in tensors.items():
                self.assertEqual((got[name]["dtype"], got[name]["shape"]), ("F16", shape), name)
                lo, hi = got[name]["data_offsets"]
                back = struct.unpack(f"<{math.prod(shape)}e", raw[base + lo:base + hi])
                if name.startswith("embeddings.word"):
                    for row in range(shape[0]):
                        x = values[name][row * shape[1]:(row + 1) * shape[1]]
                        y = back[row * shape[1]:(row + 1) * shape[1]]
                        step = max(map(abs, x)) / 127
                        # half an int8 step, then one fp16 rounding (relative 2^-11)
                        self.assertTrue(all(abs(a - b) <= step / 2 * 1.0001 + abs(b) * 2 ** -11 for a, b in zip(x, y)),
                                        f"{name} row {row}")
                else:
                    want = struct.unpack(f"<{len(values[name])}e", struct.pack(f"<{len(values[name])}e",
                                                                               *values[name]))
                    self.assertEqual(back, want, f"{name} is the fp16 rounding of the fp32 values")
            lo, hi = got["embeddings.position_ids"]["data_offsets"]
            self.assertEqual(raw[base + lo:base + hi], ids, "non-float tensors are carried as they are")
        if len(outs) == 2:
            self.assertEqual(outs[0], outs[1], "pure Python and numpy write the same bytes")


class DryRun(unittest.TestCase):
    stubbed = False

    @classmethod
    def setUpClass(cls):
        cls.tmpdir = tempfile.TemporaryDirectory(prefix="gpu_check_dry_run_")
        cls.out = Path(cls.tmpdir.name)
        cls.r = run("--dry-run", cls.out, timeout=170)
        cls.text = cls.r.stdout
        DryRun.stubbed = "the .debs were stubbed from" in cls.text
        sys.stderr.write(cls.r.stdout[-3000:] + ("\n--- stderr:\n" + cls.r.stderr[-3000:] if cls.r.returncode else ""))

    @classmethod
    def tearDownClass(cls):
        cls.tmpdir.cleanup()

    def test_the_dry_run_passes(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr[-3000:])
        self.assertIn("gpu-check --dry-run: ok", self.text)

    def plans(self):
        plans = re.findall(r"^gpu-check plan (\w+): (.*) = (\d+) s of the (\d+) s budget$", self.text, re.M)
        self.assertEqual([p[0] for p in plans], ["correctness", "figures"])
        return {mode: ([(t.rsplit(" ", 1)[0], int(t.rsplit(" ", 1)[1])) for t in terms.split(" + ")], int(s), int(b))
                for mode, terms, s, b in plans}

    def test_each_modes_step_limits_add_up_to_no_more_than_its_budget(self):
        for mode, (steps, total, budget) in self.plans().items():
            self.assertEqual(sum(limit for _, limit in steps), total, mode)
            self.assertLessEqual(total, budget, mode)
            self.assertLessEqual(budget, 360, f"{mode}: a call must fit in 6 minutes")
            self.assertIn(("summary", dict(steps)["summary"]), steps)

    def test_the_pack_is_at_most_56_mib_in_exact_bytes(self):
        m = re.search(r"^gpu-check pack: total (\d+) bytes .* of the (\d+) bytes", self.text, re.M)
        self.assertIsNotNone(m, "the pack prints its total")
        total, limit = int(m.group(1)), int(m.group(2))
        self.assertEqual(limit, LIMIT)
        self.assertLessEqual(total, LIMIT, f"the call would carry {total / 2**20:.2f} MiB")
        breakdown = self.text[:m.start()]  # (results.md repeats it after)
        rows = re.findall(r"^  ((?:tree|debs|model|carry): .+?) +([\d,]+) B ", breakdown, re.M)
        self.assertEqual(sum(int(b.replace(",", "")) for _, b in rows), total, "the breakdown adds up to the total")
        # Recounted here: the carry's files plus the tree that a device call sends (git's tracked and
        # untracked-but-not-ignored files), in exact bytes.
        carry = self.out / "carry"
        carried = [os.path.join(d, f) for d, _, fs in os.walk(carry) for f in fs]
        root = Path(SCRIPT).resolve().parent.parent
        ls = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.decode().split("\0")
        tree = exact_bytes(root / p for p in sorted(set(ls)) if p)
        self.assertEqual(exact_bytes(carried) + tree, total, "the script's total is the exact bytes")
        self.assertFalse(any(os.path.basename(p) == "model.safetensors" for p in carried),
                         "the carried model is not a model.safetensors (nothing reads it before its rebuild)")
        groups = {Path(p).relative_to(carry / "debs").parts[0] for p in carried if "/debs/" in p}
        self.assertTrue({"absl", "dnnl", "openssl", "catch2", "benchmark"} <= groups, groups)

    def test_results_md_lists_every_step_of_both_modes(self):
        md = (self.out / "results.md").read_text()
        self.assertIn("# brisk GPU check (dry run", md)
        for mode, (steps, _, budget) in self.plans().items():
            block = re.search(rf"## Steps: {mode}\n\n```\n(.*?)```", md, re.S)
            self.assertIsNotNone(block, mode)
            lines = {l.split()[0]: l.split()[1] for l in block.group(1).splitlines() if l.strip()}
            for name, _ in steps:
                self.assertIn(name, lines, f"{mode}: {name}")
                self.assertIn(lines[name], ("ok", "dry"), f"{mode}: {name}")
            real = ["env", "model", "summary"] + ([] if self.stubbed else ["deps"])
            for name in real:
                self.assertEqual(lines[name], "ok", f"{mode}: {name} runs for real in a dry run")
            self.assertRegex(block.group(1), rf"total: \d+ s of the {budget} s budget")
        self.assertIn("## What a device call carries", md)

    def test_the_carried_model_is_rebuilt_with_every_tensor_in_fp16(self):
        rebuilt = header(self.out / "model" / "model" / "model.safetensors")
        source = header(MODEL_DIR / "model.safetensors")
        self.assertEqual(set(rebuilt), set(source))
        for name, t in rebuilt.items():
            self.assertEqual(t["shape"], source[name]["shape"], name)
            self.assertEqual(t["dtype"], "F16" if source[name]["dtype"] == "F32" else source[name]["dtype"], name)
        self.assertRegex(self.text, r"rebuilt rows' cosine vs fp32: mean 0\.9999\d+, worst 0\.99\d+")


if __name__ == "__main__":
    SCRIPT = Path(sys.argv[1]).resolve()
    if not (MODEL_DIR / "model.safetensors").is_file():
        print(f"SKIP: no model in {MODEL_DIR} (scripts/setup installs it; BRISK_MODEL_DIR overrides): the dry run "
              "packs the real model")
        sys.exit(SKIP)
    result = unittest.main(argv=[sys.argv[0], "-v"], exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if DryRun.stubbed:
        print("SKIP: apt-get could not download the Debian packages here, so the pack's .debs were stubs of the "
              "recorded sizes (scripts/gpu-carry-debs.tsv): every other check passed, the real download was not "
              "checked")
        sys.exit(SKIP)
    sys.exit(0)
