#!/usr/bin/env python3
"""End-to-end checks of `brisk fit-verifier` on benchmarks/data/verifier_pairs.tsv (fit on the train split, evaluate
on the held-out split and the shared pairs) and of `faq_assistant --semantic-verifier`, run as a user would: the
outputs and files it promises, a verifier of another model refused, and bad input refused with a clear error.

    verifier_cli_test.py BRISK_BINARY [FAQ_ASSISTANT_BINARY]
Prints 'N passed, N failed' and exits non-zero on any failure."""
import os
import re
import sys
import tempfile

from cli_harness import check, run, summary
from intent_cli_test import metadata, write_metadata

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PAIRS = os.path.join(REPO, "benchmarks", "data", "verifier_pairs.tsv")
SHARED = os.path.join(REPO, "..", "shared", "data", "semantic_pairs.tsv")


def point(stdout, name):
    """(threshold, precision, recall) of the report line that starts with `name`."""
    m = re.search(re.escape(name) + r".*threshold ([0-9.]+): precision ([0-9.]+), recall ([0-9.]+)", stdout)
    return tuple(float(x) for x in m.groups()) if m else None


def test_fit(brisk, d):
    out = os.path.join(d, "verifier.safetensors")
    csv, svg = os.path.join(d, "curve.csv"), os.path.join(d, "curve.svg")
    args = [brisk, "fit-verifier", "--pairs", PAIRS, "--out", out, "--evaluate", "heldout", "--curve-csv", csv,
            "--curve-svg", svg, "--threads", "2"]
    if os.path.isfile(SHARED):
        args += ["--evaluate-pairs", SHARED]
    r = run(args)
    check(r.returncode == 0, f"fit-verifier exits 0 (stderr: {r.stderr})")
    cv = point(r.stdout, "cross-validated")
    held = point(r.stdout, "split heldout")
    check(cv is not None and cv[1] >= 0.95, f"the cross-validated precision reaches the 0.95 target ({r.stdout})")
    check(held is not None and held[1] >= 0.85 and held[2] >= 0.2,
          f"the held-out split, never fitted on, keeps most of it ({held})")
    check(cv is not None and held is not None and cv[0] == held[0], "the held-out point uses the stored threshold")
    for category in ("different_intent", "entity_swap", "negation", "number_change", "paraphrase"):
        check(category in r.stdout, f"the report names the category {category}")
    md = metadata(out)
    check(md.get("format") == "brisk-pair-verifier", "the file says its format")
    check(cv is not None and abs(float(md.get("threshold", "-1")) - cv[0]) < 1e-3, "the file stores the threshold")
    check(md.get("embedding_model_id", "").startswith("all-MiniLM-L6-v2"), "the file names the embedding model")
    with open(csv) as f:
        lines = f.read().splitlines()
    check(lines[0].startswith("threshold,precision,recall,chosen,accepted_"), f"the curve CSV's header ({lines[0]})")
    check(sum(1 for line in lines[1:] if line.split(",")[3] == "1") == 1, "the curve marks one chosen point")
    with open(svg) as f:
        check("<polyline" in f.read(), "the SVG plot has the curve")
    return out


def test_errors(brisk, d, verifier):
    bad = os.path.join(d, "bad.tsv")
    with open(bad, "w") as f:
        f.write("label\tcategory\tcached\tincoming\n1\tparaphrase\tHow do I reset my PIN?\n")
    r = run([brisk, "fit-verifier", "--pairs", bad, "--out", os.path.join(d, "x.safetensors")])
    check(r.returncode == 1 and "bad.tsv:2: has 3 tab-separated fields; expected 4" in r.stderr,
          f"a ragged pairs file is refused naming its line ({r.stderr})")
    r = run([brisk, "fit-verifier", "--pairs", PAIRS, "--split", "nope", "--out", os.path.join(d, "x.safetensors")])
    check(r.returncode == 1 and "no pair of split 'nope'" in r.stderr, f"an unknown split is refused ({r.stderr})")
    r = run([brisk, "fit-verifier", "--pairs", PAIRS, "--out", os.path.join(d, "x.safetensors"), "--target-precision",
             "1.5"])
    check(r.returncode == 2, f"a target precision above 1 is a usage error ({r.stderr})")


def test_faq(faq, d, verifier):
    r = run([faq, "--semantic-verifier", verifier, "--quiet", "--threads", "2"])
    check(r.returncode == 0, f"faq_assistant --semantic-verifier exits 0 (stderr: {r.stderr})")
    check(re.search(r"verifier +\d+ candidates scored: \d+ accepted", r.stdout) is not None,
          f"the report gives the verifier's counts ({r.stdout})")
    other = os.path.join(d, "other.safetensors")
    write_metadata(verifier, other, {"embedding_model_id": "another-model"})
    r = run([faq, "--semantic-verifier", other, "--quiet"])
    check(r.returncode != 0 and "another-model" in r.stderr and "fit-verifier" in r.stderr,
          f"a verifier fitted for another model is refused ({r.stderr})")


def main():
    brisk = sys.argv[1]
    faq = sys.argv[2] if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory() as d:
        verifier = test_fit(brisk, d)
        test_errors(brisk, d, verifier)
        if faq:
            test_faq(faq, d, verifier)
        else:
            print("note: partial skip: faq_assistant is not built (BRISK_BUILD_EXAMPLES=OFF): its checks are skipped")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
