#!/usr/bin/env python3
"""scripts/bench-compare (benchmark regression alerts) on the hand-written key-figure files of tests/scripts/data.

    bench_compare_test.py SCRIPT [BUILD_DIR]
With BUILD_DIR (a build with brisk_peak_benchmark and brisk_encoder_benchmark), --measure runs one short round
there, at the CPU's level and under BRISK_ISA=avx2, to check that the benchmark names the script filters on still
exist and that each ISA level divides by its own peak (no speed is asserted).
Every expected ratio below is worked out by hand from the fixture's numbers (shown beside it)."""
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
SCRIPT = BUILD_DIR = None


def run(*args, isa=None):
    """Runs the script; isa: BRISK_ISA for it and the benchmarks it starts (None: this process's own)."""
    env = dict(os.environ, **({"BRISK_ISA": isa} if isa else {}))
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True, timeout=120,
                          env=env)


def subset(path: Path, names, tmp: str) -> Path:
    """A copy of the fixture `path` with only the figures `names` (same values)."""
    doc = json.loads(path.read_text())
    doc["figures"] = {n: f for n, f in doc["figures"].items() if n in names}
    out = Path(tmp) / f"{path.stem}_{'_'.join(names)}.json"
    out.write_text(json.dumps(doc))
    return out


class Compare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bench_compare_test_")
        out = Path(cls.tmp) / "rows.json"
        cls.result = run(DATA / "base_figures.json", DATA / "new_figures.json", "--json", out)
        cls.rows = {r["figure"]: r for r in json.loads(out.read_text())["rows"]}

    def verdict(self, name):
        return self.rows[name]["verdict"], self.rows[name]["decided_by"], self.rows[name]["alert"]

    def test_alert_mode_exits_1_on_the_fixture_regressions(self):
        self.assertEqual(self.result.returncode, 1, self.result.stderr)
        self.assertIn("| figure | base | new | change | verdict | decided by |", self.result.stdout)
        self.assertIn("| hib_drop_6pct | 1.000 [0.990–1.010, n=3] | 0.940 [0.930–0.950, n=3] | -6.0% | "
                      "**regression** | threshold 5% + sample ranges disjoint |", self.result.stdout)

    def test_a_6pct_drop_of_a_higher_is_better_figure_is_a_regression(self):
        self.assertEqual(self.verdict("hib_drop_6pct"), ("regression", "threshold 5% + sample ranges disjoint", True))
        self.assertAlmostEqual(self.rows["hib_drop_6pct"]["change"], -0.06)

    def test_a_4pct_drop_is_not_flagged(self):
        self.assertEqual(self.verdict("hib_drop_4pct"), ("ok", "within ±5%", False))

    def test_a_6pct_rise_of_a_lower_is_better_figure_is_a_regression(self):
        self.assertEqual(self.verdict("lib_rise_6pct"), ("regression", "threshold 5% only (no samples)", True))
        self.assertEqual(self.verdict("lib_rise_4pct")[0], "ok")

    def test_improvements_are_not_flagged(self):
        self.assertEqual(self.verdict("hib_rise_20pct"), ("improved", "threshold 5% + sample ranges disjoint", False))
        self.assertEqual(self.verdict("lib_fall_6pct"), ("improved", "threshold 5% only (no samples)", False))

    def test_noisy_overlapping_samples_are_not_flagged(self):
        verdict, decided_by, alert = self.verdict("noisy_drop_10pct")  # -10%, but [0.80, 1.02] meets [0.85, 1.15]
        self.assertEqual((verdict, alert), ("within noise", False))
        self.assertIn("sample ranges overlap", decided_by)

    def test_a_figure_missing_from_new_is_reported(self):
        self.assertEqual(self.verdict("missing_in_new"), ("missing in NEW", "figure absent", True))
        self.assertEqual(self.verdict("only_in_new")[0], "new figure")
        r = run("--allow-missing", subset(DATA / "base_figures.json", ["missing_in_new"], self.tmp),
                subset(DATA / "new_figures.json", ["missing_in_new"], self.tmp))
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_an_absolute_figure_is_refused(self):
        # 100 -> 50 seq/s would be a 50% drop if absolute times were compared.
        self.assertEqual(self.verdict("absolute_seq_per_s"),
                         ("refused: absolute", "no same-run denominator in BASE", False))
        self.assertIsNone(self.rows["absolute_seq_per_s"]["change"])
        self.assertIn("absolute_seq_per_s: refused", self.result.stderr)

    def test_a_changed_denominator_is_not_comparable(self):
        self.assertEqual(self.verdict("denominator_changed"), ("not comparable", "denominator differs", False))

    def test_report_mode_exits_0_with_the_same_table(self):
        r = run("--report", DATA / "base_figures.json", DATA / "new_figures.json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("**regression**", r.stdout)
        self.assertIn("3 alert(s): hib_drop_6pct, lib_rise_6pct, missing_in_new", r.stdout)

    def test_exit_codes_on_one_figure(self):
        base, new = DATA / "base_figures.json", DATA / "new_figures.json"
        self.assertEqual(run(subset(base, ["hib_drop_4pct"], self.tmp), subset(new, ["hib_drop_4pct"], self.tmp))
                         .returncode, 0)
        self.assertEqual(run(subset(base, ["hib_drop_6pct"], self.tmp), subset(new, ["hib_drop_6pct"], self.tmp))
                         .returncode, 1)
        self.assertEqual(run("--threshold", "7", subset(base, ["hib_drop_6pct"], self.tmp),
                             subset(new, ["hib_drop_6pct"], self.tmp)).returncode, 0)

    def test_mann_whitney_decides_when_asked(self):
        out = Path(self.tmp) / "mw.json"
        r = run("--spread-test", "mannwhitney", "--json", out, DATA / "base_figures.json", DATA / "new_figures.json")
        rows = {row["figure"]: row for row in json.loads(out.read_text())["rows"]}
        # 3 vs 3 samples, all NEW below all BASE: 1 of C(6,3) = 20 splits is as extreme, p = 0.05, not < 0.05.
        self.assertEqual(rows["hib_drop_6pct"]["verdict"], "within noise", r.stdout)
        self.assertIn("Mann-Whitney p=0.05 ≥ 0.05", rows["hib_drop_6pct"]["decided_by"])
        r = run("--spread-test", "mannwhitney", "--alpha", "0.06", "--json", out, DATA / "base_figures.json",
                DATA / "new_figures.json")
        rows = {row["figure"]: row for row in json.loads(out.read_text())["rows"]}
        self.assertEqual(rows["hib_drop_6pct"]["verdict"], "regression")
        self.assertIn("Mann-Whitney p=0.05 < 0.06", rows["hib_drop_6pct"]["decided_by"])


class BadInput(unittest.TestCase):
    def check_refused(self, name, *needles, report=False):
        path = DATA / name
        r = run(*(["--report"] if report else []), DATA / "base_figures.json", path)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(str(path), r.stderr)
        for needle in needles:
            self.assertIn(needle, r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_truncated_json(self):
        self.check_refused("malformed_truncated.json", "is not valid JSON", report=True)

    def test_a_ratio_that_is_not_a_number(self):
        self.check_refused("malformed_ratio.json", 'figures.encoder_vs_peak.ratio is "fast"; expected a positive',
                           report=True)

    def test_a_negative_sample(self):
        self.check_refused("malformed_sample.json", "figures.encoder_vs_peak.samples[1] is -0.5; expected a positive")

    def test_missing_run_threads(self):
        self.check_refused("malformed_threads.json", "run.threads is null; expected an integer >= 1")

    def test_wrong_schema(self):
        self.check_refused("malformed_schema.json", 'schema is "brisk-key-figures/2"; expected "brisk-key-figures/1"')

    def test_a_missing_file(self):
        r = run(DATA / "base_figures.json", DATA / "no_such_file.json")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no_such_file.json: cannot be read", r.stderr)

    def test_random_corruptions_never_crash(self):
        """Bounded (400 mutations or 20 s, seeded): every corrupted file exits 0, 1 or 2, never with a traceback."""
        loader = importlib.machinery.SourceFileLoader("bench_compare", SCRIPT)
        spec = importlib.util.spec_from_loader("bench_compare", loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        text = (DATA / "new_figures.json").read_text()
        rng = random.Random(15)
        pieces = ['"', "{", "}", "[", "]", ",", ":", "-1", "0", "1e999", "NaN", "null", "true", '"x"', "\\u00ff", ""]
        start = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "mutated.json"
            for i in range(400):
                if time.monotonic() - start > 20:
                    break
                chars = list(text)
                for _ in range(rng.randint(1, 4)):
                    pos = rng.randrange(len(chars))
                    chars[pos:pos + rng.randint(0, 3)] = rng.choice(pieces)
                target.write_text("".join(chars))
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    code = module.main([str(DATA / "base_figures.json"), str(target)])
                self.assertIn(code, (0, 1, 2), f"mutation {i}")


class Extract(unittest.TestCase):
    def extract(self, *files):
        r = run("--extract", *[DATA / f for f in files])
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_run_peers_json(self):
        doc = self.extract("run_peers_small.json")
        self.assertEqual(doc["run"]["commit"], "ccccccc")
        self.assertEqual(doc["run"]["threads"], 2)
        figs = doc["figures"]
        f = figs["peers_32x128_brisk_fp32_vs_ort"]
        self.assertEqual(f["ratio"], 1.25)  # 100 / 80 seq/s
        self.assertEqual(f["samples"], [1.25, 1.27273])  # per round, ORT ms / brisk ms: 400/320, 420/330
        self.assertTrue(f["higher_is_better"])
        self.assertEqual(figs["peers_1x16_brisk_fp32_vs_ort"]["samples"], [1.25, 1.2])  # 2.5/2.0, 2.4/2.0
        p99 = figs["peers_1x16_p99_brisk_fp32_vs_ort"]
        self.assertEqual((p99["ratio"], p99["higher_is_better"]), (0.75, False))  # 3.0 / 4.0 ms
        self.assertNotIn("samples", p99)

    def test_google_benchmark_json_interleaved_with_the_peak(self):
        doc = self.extract("gbench_peak_1.json", "gbench_encoder_1.json", "gbench_peak_2.json")
        figs = doc["figures"]
        # The round's peak: (200 + 220) / 2 = 210 GFLOP/s. MiniLM-L6 at T=128 per sequence: 6 layers x (linear
        # 2*128*384*(3*384 + 384 + 2*1536) = 452,984,832 + attention 4*128^2*384 = 25,165,824) = 2,868,903,936
        # FLOP; 60 seq/s x 2.868903936 = 172.134 GFLOP/s; / 210 = 0.819687.
        self.assertAlmostEqual(figs["encoder_32x128_fraction_of_fp32_peak"]["ratio"], 0.81969, places=5)
        self.assertAlmostEqual(figs["gemm_ffn_up_4096x1536x384_fraction_of_fp32_peak"]["ratio"], 0.7619, places=4)
        self.assertNotIn("attention_32x128_fraction_of_fp32_peak", figs)  # its only run was skipped (error)
        self.assertEqual(figs["encoder_32x128_fraction_of_fp32_peak"]["denominator_values"], [210.0])

    def test_a_cpu_without_avx512_gives_no_figures_and_no_error(self):
        r = run("--extract", DATA / "gbench_peak_skipped.json", DATA / "gbench_encoder_1.json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("lacks AVX-512", r.stderr)
        self.assertEqual(json.loads(r.stdout)["figures"], {})

    def test_extracted_figures_compare_cleanly_with_themselves(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "figures.json"
            r = run("--extract", DATA / "run_peers_small.json", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = run(out, out)
            self.assertEqual(r.returncode, 0, r.stdout)
            self.assertIn("0 alert(s)", r.stdout)

    def test_mismatched_rounds_are_refused(self):
        r = run("--extract", DATA / "gbench_peak_1.json", DATA / "gbench_peak_2.json", DATA / "gbench_peak_1.json",
                DATA / "gbench_encoder_1.json")
        self.assertEqual(r.returncode, 2)
        self.assertIn("3 peak run(s)", r.stderr)
        r = run("--extract", DATA / "base_figures.json")
        self.assertEqual(r.returncode, 2)
        self.assertIn("has neither shapes", r.stderr)


class IsaClasses(unittest.TestCase):
    """Fractions of the peak of the ISA level in use, and baselines per ISA class (avx2, avx512)."""

    def extract(self, *files):
        r = run("--extract", *[DATA / f for f in files])
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout), r.stderr

    def test_an_avx2_run_divides_by_the_avx2_peak(self):
        doc, _ = self.extract("gbench_peak_avx2_1.json", "gbench_encoder_1.json", "gbench_peak_avx2_2.json")
        run_ = doc["run"]
        self.assertEqual((run_["isa"], run_["isa_class"]), ("avx2", "avx2"))
        self.assertEqual(run_["cpu"], "AMD EPYC 7B13 64-Core Processor (family 25, model 1)")
        figs = doc["figures"]
        # Round peak (180 + 200) / 2 = 190 GFLOP/s; 60 seq/s x 2.868903936 GFLOP = 172.134 / 190 = 0.905968;
        # FFN up 160 / 190 = 0.842105.
        enc = figs["encoder_32x128_fraction_of_fp32_peak"]
        self.assertAlmostEqual(enc["ratio"], 0.90597, places=5)
        self.assertEqual(enc["denominator_values"], [190.0])
        self.assertIn("BM_fp32_fma_peak_avx2/threads:2", enc["denominator"])
        self.assertAlmostEqual(figs["gemm_ffn_up_4096x1536x384_fraction_of_fp32_peak"]["ratio"], 0.84211, places=5)

    def test_an_avx512_run_divides_by_the_avx512_peak_even_where_the_avx2_one_ran(self):
        doc, _ = self.extract("gbench_peak_avx512_both.json", "gbench_encoder_1.json")
        self.assertEqual((doc["run"]["isa"], doc["run"]["isa_class"]), ("avx512_vnni", "avx512"))
        enc = doc["figures"]["encoder_32x128_fraction_of_fp32_peak"]
        self.assertAlmostEqual(enc["ratio"], 0.57378, places=5)  # 172.134 / 300, not / 150
        self.assertIn("BM_fp32_fma_peak_avx512/threads:2", enc["denominator"])

    def test_files_of_older_binaries_are_class_avx512(self):
        doc, _ = self.extract("gbench_peak_1.json", "gbench_encoder_1.json", "gbench_peak_2.json")
        self.assertEqual(doc["run"]["isa_class"], "avx512")
        self.assertNotIn("isa", doc["run"])

    def test_the_scalar_level_gives_no_figures_and_no_error(self):
        doc, stderr = self.extract("gbench_peak_scalar.json")
        self.assertEqual(doc["figures"], {})
        self.assertEqual((doc["run"]["isa"], doc["run"]["isa_class"]), ("scalar", "scalar"))
        self.assertIn("scalar", stderr)

    def test_rounds_at_different_levels_are_refused(self):
        r = run("--extract", DATA / "gbench_peak_avx2_1.json", DATA / "gbench_encoder_1.json",
                DATA / "gbench_peak_avx512_both.json")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("peak runs at different ISA levels", r.stderr)

    def test_new_avx2_figures_are_compared_with_the_avx2_baseline(self):
        out = Path(tempfile.mkdtemp(prefix="bench_compare_isa_")) / "rows.json"
        # BASE names the avx512 baseline, as .ci/run does; NEW is class avx2: key_figures_avx2.json beside it is used.
        r = run(DATA / "baseline.json", DATA / "new_figures_avx2.json", "--json", out)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # 0.80 -> 0.70, ranges disjoint: a regression
        self.assertIn(f"comparing with `{DATA / 'baseline_avx2.json'}`", r.stderr)
        self.assertIn(f"- BASE `{DATA / 'baseline_avx2.json'}`", r.stdout)
        self.assertIn("ISA avx2 (class avx2)", r.stdout)
        self.assertIn("ISA avx_vnni (class avx2)", r.stdout)
        self.assertIn("CPU AMD EPYC 9B45 (family 26, model 2)", r.stdout)
        row = json.loads(out.read_text())["rows"][0]
        self.assertEqual((row["base"], row["new"], row["verdict"]), (0.8, 0.7, "regression"))

    def test_new_avx512_figures_are_compared_with_the_avx512_baseline(self):
        r = run(DATA / "baseline_avx2.json", DATA / "baseline.json")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"- BASE `{DATA / 'baseline.json'}`", r.stdout)
        self.assertIn("0 alert(s)", r.stdout)
        r = run(DATA / "baseline.json", DATA / "baseline.json")  # same class: BASE itself, no note
        self.assertEqual(r.returncode, 0)
        self.assertNotIn("comparing with", r.stderr)

    def test_a_baseline_of_the_same_cpu_is_preferred(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp) / "key_figures.json"  # class avx512, measured on another CPU
            base.write_text((DATA / "baseline.json").read_text())
            new = json.loads((DATA / "baseline.json").read_text())
            new["run"]["cpu"] = "Intel(R) Xeon(R) Processor (family 6, model 207)"
            new_path = Path(tmp) / "new.json"
            new_path.write_text(json.dumps(new))
            same_cpu = json.loads(json.dumps(new))
            for figure in same_cpu["figures"].values():  # this CPU's own level: NEW is far below it
                figure["ratio"] *= 2
                figure.pop("samples", None)
            mine = Path(tmp) / "key_figures_avx512_emerald_rapids.json"
            mine.write_text(json.dumps(same_cpu))
            other = json.loads(json.dumps(same_cpu))
            other["run"]["cpu"] = "AMD EPYC (family 25, model 17)"
            (Path(tmp) / "key_figures_avx512_a_zen4.json").write_text(json.dumps(other))
            r = run(base, new_path)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # halved against its own CPU's baseline
            self.assertIn(f"comparing with `{mine}`", r.stderr)
            self.assertIn(f"- BASE `{mine}`", r.stdout)
            new["run"]["cpu"] = "a CPU with no baseline of its own"
            new_path.write_text(json.dumps(new))
            r = run(base, new_path)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)  # the class baseline: BASE itself, unchanged
            self.assertIn(f"- BASE `{base}`", r.stdout)

    def test_no_baseline_of_the_class(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp) / "key_figures.json"  # an avx512 baseline with no key_figures_avx2.json beside it
            base.write_text((DATA / "baseline.json").read_text())
            r = run("--report", base, DATA / "new_figures_avx2.json")
            self.assertEqual(r.returncode, 0, r.stderr)  # report mode (CI): said, never a failure
            self.assertIn("no baseline of ISA class avx2", r.stdout)
            self.assertIn(str(Path(tmp) / "key_figures_avx2.json"), r.stdout)
            self.assertIn("nothing compared", r.stdout)
            r = run(base, DATA / "new_figures_avx2.json")
            self.assertEqual(r.returncode, 2, r.stdout)  # alert mode: an error, named
            self.assertIn("error: no baseline of ISA class avx2", r.stderr)
            self.assertNotIn("Traceback", r.stderr)

    def test_a_bad_isa_class_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            doc = json.loads((DATA / "new_figures_avx2.json").read_text())
            doc["run"]["isa_class"] = "avx1024"
            bad = Path(tmp) / "bad.json"
            bad.write_text(json.dumps(doc))
            r = run("--report", DATA / "baseline.json", bad)
            self.assertEqual(r.returncode, 2)
            self.assertIn('run.isa_class is "avx1024"; expected one of avx2, avx512, scalar', r.stderr)


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


class Measure(unittest.TestCase):
    """One short round on the built benchmarks, at the CPU's own level and capped at avx2 (BRISK_ISA=avx2): the
    names the script filters on still exist, and each level divides by its own peak (no speed is asserted)."""

    def setUp(self):
        if not BUILD_DIR:
            self.skipTest("partial skip: brisk_peak_benchmark and brisk_encoder_benchmark are not built "
                          "(BRISK_BUILD_BENCHMARKS=OFF), so no --measure round; the other checks ran")

    def measure_one_round(self, isa):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "figures.json"
            r = run("--measure", BUILD_DIR, "--rounds", "1", "--min-time", "0.01", "-o", out, isa=isa)
            self.assertEqual(r.returncode, 0, r.stderr)
            doc = json.loads(out.read_text())
            figs = doc["figures"]
            cls = doc["run"]["isa_class"]
            for name in ("encoder_32x128_fraction_of_fp32_peak", "gemm_ffn_up_4096x1536x384_fraction_of_fp32_peak",
                         "attention_32x128_fraction_of_fp32_peak"):
                self.assertIn(name, figs)
                self.assertGreater(figs[name]["ratio"], 0)
                self.assertIn(f"BM_fp32_fma_peak_{cls}/threads:2", figs[name]["denominator"])
            self.assertIn("family", doc["run"]["cpu"])
            self.assertEqual(run("--report", out, out).returncode, 0)
            # What CI runs: the committed baseline of this class (benchmarks/key_figures*.json) is found.
            r = run("--report", Path(SCRIPT).resolve().parent.parent / "benchmarks" / "key_figures.json", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("no baseline", r.stdout)
            return doc["run"]

    def test_one_round_at_the_cpus_level(self):
        flags = cpu_flags()
        expected = ("avx512" if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags else
                    "avx2" if {"avx2", "fma"} <= flags else None)
        if expected is None or os.environ.get("BRISK_ISA") == "scalar":
            self.skipTest("no AVX2/FMA (CPU or BRISK_ISA): no peak to divide by")
        run_ = self.measure_one_round(None)
        if not os.environ.get("BRISK_ISA"):  # else the cap decides
            self.assertEqual(run_["isa_class"], expected)

    def test_one_round_capped_at_avx2(self):
        if not {"avx2", "fma"} <= cpu_flags():
            self.skipTest("this CPU lacks AVX2/FMA")
        run_ = self.measure_one_round("avx2")
        self.assertEqual((run_["isa"], run_["isa_class"]), ("avx2", "avx2"))
        self.assertTrue(run_["command"].startswith("BRISK_ISA=avx2 "))

    def test_the_peaks_above_the_level_in_use_are_skipped(self):
        if not {"avx2", "fma"} <= cpu_flags():
            self.skipTest("this CPU lacks AVX2/FMA")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "peaks.json"
            r = subprocess.run([str(Path(BUILD_DIR) / "benchmarks" / "brisk_peak_benchmark"),
                                "--benchmark_filter=threads:1", "--benchmark_min_time=0.001",
                                f"--benchmark_out={out}", "--benchmark_out_format=json"],
                               capture_output=True, text=True, timeout=60, env=dict(os.environ, BRISK_ISA="avx2"))
            self.assertEqual(r.returncode, 0, r.stderr)
            doc = json.loads(out.read_text())
            self.assertEqual(doc["context"]["brisk_isa"], "avx2")
            self.assertEqual(doc["context"]["brisk_fp32_peak"], "BM_fp32_fma_peak_avx2")
            ran = {b["run_name"]: not b.get("error_occurred") for b in doc["benchmarks"]}
            self.assertTrue(ran["BM_fp32_fma_peak_avx2/threads:1/real_time"])
            self.assertTrue(ran["BM_int8_peak_avx2/threads:1/real_time"])
            self.assertTrue(ran["BM_int16_peak_avx2/threads:1/real_time"])
            for name, ok in ran.items():
                if "avx512" in name or "vnni" in name:
                    self.assertFalse(ok, f"{name} ran under BRISK_ISA=avx2")
            r = subprocess.run([str(Path(BUILD_DIR) / "benchmarks" / "brisk_peak_benchmark")], capture_output=True,
                               text=True, timeout=60, env=dict(os.environ, BRISK_ISA="avx3"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("BRISK_ISA is 'avx3'", r.stderr)


if __name__ == "__main__":
    SCRIPT = os.path.abspath(sys.argv[1])
    BUILD_DIR = sys.argv[2] if len(sys.argv) > 2 else None
    unittest.main(argv=[sys.argv[0], "-v"])
