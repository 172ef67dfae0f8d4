#!/usr/bin/env python3
"""scripts/bench-compare (benchmark regression alerts) on the hand-written key-figure files of tests/scripts/data.

    bench_compare_test.py SCRIPT [BUILD_DIR]
With BUILD_DIR (a build with brisk_peak_benchmark and brisk_encoder_benchmark), --measure runs one short round
there, to check that the benchmark names the script filters on still exist (no speed is asserted).
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


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True, timeout=120)


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


class Measure(unittest.TestCase):
    def test_one_round_on_the_built_benchmarks(self):
        if not BUILD_DIR:
            self.skipTest("partial skip: brisk_peak_benchmark and brisk_encoder_benchmark are not built "
                          "(BRISK_BUILD_BENCHMARKS=OFF), so no --measure round; the other checks ran")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "figures.json"
            r = run("--measure", BUILD_DIR, "--rounds", "1", "--min-time", "0.01", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            figs = json.loads(out.read_text())["figures"]
            for name in ("encoder_32x128_fraction_of_fp32_peak", "gemm_ffn_up_4096x1536x384_fraction_of_fp32_peak",
                         "attention_32x128_fraction_of_fp32_peak"):
                self.assertIn(name, figs)
                self.assertGreater(figs[name]["ratio"], 0)
            self.assertEqual(run("--report", out, out).returncode, 0)


if __name__ == "__main__":
    SCRIPT = os.path.abspath(sys.argv[1])
    BUILD_DIR = sys.argv[2] if len(sys.argv) > 2 else None
    unittest.main(argv=[sys.argv[0], "-v"])
