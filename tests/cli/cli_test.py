#!/usr/bin/env python3
"""End-to-end checks of the `brisk` command-line tool and the FAQ assistant demo, run as a user would.

    cli_test.py BRISK_BINARY [FAQ_ASSISTANT_BINARY]
Prints 'N passed, N failed' and exits non-zero on any failure."""
import filecmp
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from cli_harness import check, run, summary


def test_embed(brisk):
    r = run([brisk, "embed", "--threads", "2", "How do I block my card?", "I lost my debit card", "opening hours"])
    check(r.returncode == 0, f"embed exits 0 (stderr: {r.stderr})")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    check(len(rows) == 3, "embed prints one JSON line per text")
    check(rows[0]["text"] == "How do I block my card?", "embed echoes the text")
    vecs = [row["embedding"] for row in rows]
    check(all(len(v) == 384 for v in vecs), "embeddings have 384 dimensions")
    check(all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-4 for v in vecs), "embeddings are L2-normalised")
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))
    check(dot(vecs[0], vecs[1]) > dot(vecs[0], vecs[2]) + 0.1, "a paraphrase is closer than an unrelated text")

    # One output line per input line, empty lines included ([CLS] [SEP] has an embedding too).
    r = run([brisk, "embed"], stdin="first line\n\nsecond line\n\n")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    check(r.returncode == 0 and [row["text"] for row in rows] == ["first line", "", "second line", ""],
          f"embed keeps one output line per stdin line, empty lines included (stderr: {r.stderr})")
    check(all(len(row["embedding"]) == 384 for row in rows), "empty stdin lines get an embedding")

    raw = subprocess.run([brisk, "embed"], input=b"ok\n\nbad \xff byte\nlast\n", capture_output=True, timeout=300)
    check(raw.returncode == 1, "invalid UTF-8 on stdin exits 1")
    check(raw.stderr.startswith(b"brisk: error: stdin line 3:") and b"UTF-8" in raw.stderr,
          f"invalid UTF-8 is named in the error with its line (stderr: {raw.stderr!r})")
    check(b"replace_invalid_utf8" in raw.stderr and b"TokenizerOptions" not in raw.stderr,
          "the invalid UTF-8 advice names only what a CLI or C API user can reach")
    lines = raw.stdout.splitlines()
    check(len(lines) == 4 and json.loads(lines[2]).get("line") == 3 and "error" in json.loads(lines[2])
          and json.loads(lines[3])["text"] == "last", "the bad line gets its error on its own line, in place")
    raw = subprocess.run([brisk, "embed", "--replace-invalid-utf8"], input=b"ok\nbad \xff byte\n",
                         capture_output=True, timeout=300)
    rows = [json.loads(line) for line in raw.stdout.splitlines()]
    check(raw.returncode == 0 and len(rows) == 2 and len(rows[1]["embedding"]) == 384,
          f"--replace-invalid-utf8 embeds invalid UTF-8 (stderr: {raw.stderr!r})")


def test_embed_prompt(brisk):
    """--prompt-name query embeds the model's query prompt + the text, as sentence-transformers' encode does
    (tests/data/make_tiny_qwen.py's golden: transformers on the prompted text); the printed text is the one given."""
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
    model = os.path.join(data, "tiny_qwen3")
    golden = json.load(open(os.path.join(model, "golden_qwen3.json")))
    query = next(it for it in golden["items"] if it["prompt"])
    bare = query["text"][len(golden["query_prompt"]):]
    r = run([brisk, "embed", "--model", model, "--prompt-name", "query", bare])
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    check(r.returncode == 0 and len(rows) == 1 and rows[0]["text"] == bare,
          f"embed --prompt-name query prints the text as given (stderr: {r.stderr})")
    got = rows[0]["embedding"] if rows else []
    check(len(got) == len(query["normalized"]) and
          max(abs(a - b) for a, b in zip(got, query["normalized"])) <= 5e-5,
          "embed --prompt-name query gives transformers' embedding of the prompted text")
    for name, model_dir, expect in (("passage", model, 'prompt_name is "passage"; expected one of the model\'s '
                                                       'prompts: "document", "query"'),
                                    ("query", os.path.join(data, "tiny_xlmr"), "this model has no prompts")):
        r = run([brisk, "embed", "--model", model_dir, "--prompt-name", name, "text"])
        check(r.returncode != 0 and expect in r.stderr,
              f"--prompt-name {name} on {os.path.basename(model_dir)} is refused naming it ({r.stderr.strip()})")


def test_info_and_errors(brisk):
    r = run([brisk, "info"])
    check(r.returncode == 0, f"info exits 0 (stderr: {r.stderr})")
    info = json.loads(r.stdout)
    check(info["num_layers"] == 6 and info["hidden_size"] == 384 and info["vocab_size"] == 30522,
          "info reports the MiniLM-L6 shape")
    check(info["weights_file"].endswith("model.safetensors"), "info names the weights file")

    r = run([brisk, "info", "--model", "/nonexistent/brisk-model"])
    check(r.returncode == 1 and "brisk: error:" in r.stderr and "/nonexistent/brisk-model" in r.stderr,
          "a missing model directory exits 1 naming the directory")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write('{"model_type": "bert", "hidden_size": 384}')
        r = run([brisk, "info", "--model", d])
        check(r.returncode == 1 and "config.json" in r.stderr, "a config missing keys exits 1 naming config.json")
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        for cmd in (["info"], ["embed", "x"], ["bench", "--batch", "1", "--seq", "4"]):
            r = run([brisk, *cmd, "--model", f.name])
            check(r.returncode == 1 and "is a file but not a quantized model file" in r.stderr and "does not exist" not in r.stderr,
                  f"{cmd[0]} --model naming a file says so (stderr: {r.stderr})")
    r = run([brisk, "info", "--threads", "100000"])
    check(r.returncode == 2 and "1024" in r.stderr and re.search(r"\d{20}", r.stderr) is None,
          f"an out-of-range --threads prints a readable bound (stderr: {r.stderr[:300]})")

    # Control bytes and ANSI escapes from arguments and files are escaped, not sent to the terminal.
    r = run([brisk, "info", "--model", "/nonexistent/\x1b[2J\x1b]0;title\x07dir"])
    check(r.returncode == 1 and "\x1b" not in r.stderr and "\x07" not in r.stderr and "\\x1B[2J" in r.stderr,
          f"escape sequences in a path are escaped (stderr: {r.stderr!r})")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write('{"model_type": "\\u001b[31mred\\u009b2J\\u007f"}')
        r = run([brisk, "info", "--model", d])
        check(r.returncode == 1 and "model_type" in r.stderr and "red" in r.stderr
              and not any(c in r.stderr for c in "\x1b\x9b\x7f"),
              f"control characters from a file are escaped (stderr: {r.stderr!r})")
    r = run([brisk, "embed", "--bogus-\x1b[31m"])
    check(r.returncode == 2 and "\x1b" not in r.stderr, f"CLI11's errors are escaped (stderr: {r.stderr!r})")

    r = run([brisk, "bench", "--bogus-flag"])
    check(r.returncode == 2, "an unknown flag exits 2 with usage")
    r = run([brisk, "bench", "--batch", "0", "--seq", "8"])
    check(r.returncode == 2, "an out-of-range --batch exits 2")


def test_bench(brisk):
    r = run([brisk, "bench", "--batch", "2", "--seq", "16", "--iters", "3", "--warmup", "1", "--threads", "2",
             "--json"])
    check(r.returncode == 0, f"bench exits 0 (stderr: {r.stderr})")
    b = json.loads(r.stdout)
    check(b["batch"] == 2 and b["seq"] == 16 and b["iters"] == 3, "bench echoes its shape")
    check(b["seq_per_s"] > 0 and 0 < b["p50_ms"] <= b["p99_ms"] <= b["max_ms"], "bench percentiles are ordered")
    check(b["word"] == "hello", f"bench repeats 'hello' on a WordPiece model ({b.get('word')})")
    # tiny_xlmr's SentencePiece vocabulary splits "hello" in two (tokenizers: hello hello -> 574 468 574 468): bench
    # takes the next word that is one token, and --word hello is refused naming the counts.
    xlmr = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "tiny_xlmr")
    r = run([brisk, "bench", "--model", xlmr, "--batch", "2", "--seq", "16", "--iters", "2", "--json"])
    check(r.returncode == 0 and json.loads(r.stdout)["word"] == "the",
          f"bench on tiny_xlmr picks 'the' (stdout: {r.stdout} stderr: {r.stderr})")
    r = run([brisk, "bench", "--model", xlmr, "--batch", "2", "--seq", "16", "--iters", "2", "--word", "hello"])
    check(r.returncode == 1 and "tokenizes to at least 24 tokens" in r.stderr and "expected exactly 16" in r.stderr,
          f"bench --word hello on tiny_xlmr is refused with the counts ({r.stderr.strip()})")


def test_faq_assistant(faq):
    r = run([faq, "--limit", "12", "--threads", "2"])
    check(r.returncode == 0, f"faq_assistant exits 0 (stderr: {r.stderr})")
    check("p99" in r.stdout and "questions/s" in r.stdout, "faq_assistant prints the latency report")
    check("matched (" in r.stdout, "faq_assistant prints matches with scores")
    # Caches: a paraphrase and a repeat come from the semantic cache, the repeat's embedding from the result
    # cache; "unlock" is close to "lock" but the polarity guard vetoes the cached answer.
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("How do I reset my PIN?\nhow do i reset my pin\nHow do I reset my PIN?\n"
                "How do I lock my card?\nHow do I unlock my card?\n")
    r = run([faq, "--questions", f.name, "--clients", "0", "--threads", "2"])
    check(r.returncode == 0, f"faq_assistant with caches exits 0 (stderr: {r.stderr})")
    check("semantic cache 2 of 5 questions answered without a search" in r.stdout, "two semantic-cache hits")
    check("polarity 1" in r.stdout, "the polarity guard vetoes lock -> unlock")
    check(", semantic cache)" in r.stdout, "semantic-cache answers are marked")
    check(re.search(r"result cache   1 of \d+ texts not embedded again", r.stdout) is not None,
          "the repeated question is not embedded again")
    r = run([faq, "--questions", f.name, "--clients", "0", "--threads", "2", "--no-cache"])
    os.unlink(f.name)
    check(r.returncode == 0 and "caches         off" in r.stdout and ", semantic cache)" not in r.stdout,
          "--no-cache turns both caches off")
    r = run([faq, "--limit", "1", "--redis", "localhost"])
    check(r.returncode == 1 and "HOST:PORT" in r.stderr, "a malformed --redis address is refused")
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
        f.write("a question without an answer column\n")
    r = run([faq, "--faq", f.name, "--limit", "1"])
    os.unlink(f.name)
    check(r.returncode == 1 and f"{f.name}:1:" in r.stderr and "TAB" in r.stderr,
          "a malformed FAQ line is reported with its file and line number")


def test_quantize(brisk, faq):
    """brisk quantize writes one file that embed, info, bench and the FAQ assistant load through --model."""
    here = os.path.dirname(os.path.abspath(__file__))
    calib_all = open(os.path.join(here, "../../benchmarks/data/calibration_texts.txt"), encoding="utf-8").read()
    model_dir = os.environ.get("BRISK_MODEL_DIR", os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2"))
    fp32_size = os.path.getsize(os.path.join(model_dir, "model.safetensors"))
    with tempfile.TemporaryDirectory() as tmp:
        calib = os.path.join(tmp, "calib.txt")
        with open(calib, "w", encoding="utf-8") as f:
            f.write("\n".join(calib_all.splitlines()[:24]) + "\n")
        out = os.path.join(tmp, "int8.safetensors")
        csv = os.path.join(tmp, "report.csv")
        r = run([brisk, "quantize", "--plan", "int8", "--calib", calib, "--out", out, "--threads", "2",
                 "--report-csv", csv])
        check(r.returncode == 0, f"quantize int8 exits 0 (stderr: {r.stderr})")
        check("calibration-set cosine vs fp32" in r.stdout and "size " in r.stdout, "quantize prints cosine and sizes")
        check("encoder.layer.5.output.dense" in r.stdout, "quantize prints the per-layer report")
        check(os.path.getsize(out) <= 0.30 * fp32_size, "the int8 file is at most 30% of the fp32 file")
        rows = open(csv, encoding="utf-8").read().splitlines()
        check(len(rows) == 38 and rows[0].startswith("layer,precision"), "the CSV report has one row per layer")

        texts = ["How do I block my card?", "opening hours of the branch"]
        q = run([brisk, "embed", "--model", out, "--threads", "2"] + texts)
        f32 = run([brisk, "embed", "--threads", "2"] + texts)
        check(q.returncode == 0, f"embed --model FILE exits 0 (stderr: {q.stderr})")
        if q.returncode == 0 and f32.returncode == 0:
            qv = [json.loads(line)["embedding"] for line in q.stdout.splitlines()]
            fv = [json.loads(line)["embedding"] for line in f32.stdout.splitlines()]
            cos = [sum(a * b for a, b in zip(x, y)) for x, y in zip(qv, fv)]
            check(all(c > 0.98 for c in cos) and any(c < 0.99999 for c in cos),
                  f"int8 embeddings are close to fp32 but not identical: {cos}")
        r = run([brisk, "info", "--model", out])
        check(r.returncode == 0 and json.loads(r.stdout)["quantization"].startswith("int8"), "info reports the plan")
        r = run([brisk, "bench", "--model", out, "--batch", "2", "--seq", "16", "--iters", "2", "--json"])
        check(r.returncode == 0 and json.loads(r.stdout)["seq_per_s"] > 0, "bench runs the quantized file")
        if faq:
            r = run([faq, "--model", out, "--limit", "6", "--threads", "2"])
            check(r.returncode == 0 and "matched (" in r.stdout, f"faq_assistant runs the quantized file ({r.stderr})")

        mixed = os.path.join(tmp, "mixed.safetensors")
        r = run([brisk, "quantize", "--plan", "mixed", "--calib", calib, "--out", mixed, "--threads", "2"])
        check(r.returncode == 0 and "int4-g32" in r.stdout, f"quantize mixed exits 0 (stderr: {r.stderr})")
        # Calibration runs on reproducible arithmetic: the same bytes at another ISA cap and thread count.
        again = os.path.join(tmp, "mixed_avx2.safetensors")
        r = subprocess.run([brisk, "quantize", "--plan", "mixed", "--calib", calib, "--out", again, "--threads", "1"],
                           capture_output=True, text=True, timeout=300, env=dict(os.environ, BRISK_ISA="avx2"))
        check(r.returncode == 0 and filecmp.cmp(mixed, again, shallow=False),
              f"the mixed file written under BRISK_ISA=avx2 with 1 thread is the same bytes (stderr: {r.stderr})")

        r = run([brisk, "quantize", "--plan", "int8,encoder.layer.9.*=fp32", "--calib", calib, "--out", mixed])
        check(r.returncode == 1 and "matches no layer" in r.stderr and "encoder.layer.5.output.dense" in r.stderr,
              "a plan pattern that matches nothing lists the valid names")
        r = run([brisk, "quantize", "--plan", "int8", "--calib", os.path.join(tmp, "none.txt"), "--out", mixed])
        check(r.returncode == 1 and "cannot be read" in r.stderr, "a missing calibration file is reported")
        with open(out, "r+b") as f:
            f.truncate(os.path.getsize(out) // 2)
        r = run([brisk, "embed", "--model", out, "hello"])
        check(r.returncode == 1 and "brisk: error:" in r.stderr, f"a truncated quantized file is refused ({r.stderr})")
        r = run([brisk, "embed", "--model", csv, "hello"])
        check(r.returncode == 1 and "not a quantized model file" in r.stderr, "a plain file as --model is refused")


def test_prune(brisk, faq):
    """brisk sensitivity writes its three files; brisk prune writes a smaller model that embed, quantize and the FAQ
    assistant load; bad flags are refused with a message naming them."""
    here = os.path.dirname(os.path.abspath(__file__))
    calib_all = open(os.path.join(here, "../../benchmarks/data/calibration_texts.txt"), encoding="utf-8").read()
    with tempfile.TemporaryDirectory() as tmp:
        calib = os.path.join(tmp, "calib.txt")
        with open(calib, "w", encoding="utf-8") as f:
            f.write("\n".join(calib_all.splitlines()[:24]) + "\n")
        texts = os.path.join(tmp, "texts.txt")
        with open(texts, "w", encoding="utf-8") as f:
            f.write("\n".join(calib_all.splitlines()[30:36]) + "\n")
        out = os.path.join(tmp, "zero")
        r = run([brisk, "sensitivity", "--texts", texts, "--mode", "zero", "--out", out, "--threads", "2"])
        check(r.returncode == 0 and "mean drop when one head is removed" in r.stdout,
              f"sensitivity --mode zero exits 0 (stderr: {r.stderr})")
        rows = open(os.path.join(out, "sensitivity.csv"), encoding="utf-8").read().splitlines()
        check(len(rows) == 1 + 6 + 72, f"zero mode: one row per layer and per head ({len(rows)} rows)")
        svg = open(os.path.join(out, "sensitivity.svg"), encoding="utf-8").read()
        check(svg.lstrip().startswith("<svg") or svg.lstrip().startswith("<?xml"), "sensitivity.svg is an SVG")
        sweep = os.path.join(tmp, "sweep")
        r = run([brisk, "sensitivity", "--texts", texts, "--levels", "0,0.5", "--out", sweep, "--threads", "2"])
        check(r.returncode == 0, f"sensitivity sweep exits 0 (stderr: {r.stderr})")
        rows = open(os.path.join(sweep, "sensitivity.csv"), encoding="utf-8").read().splitlines()
        check(len(rows) == 1 + 6 * 2 * 2, f"sweep: 6 layers x heads/ffn x 2 levels ({len(rows)} rows)")

        pruned = os.path.join(tmp, "pruned")
        r = run([brisk, "prune", "--calib", calib, "--heads", "0.25", "--ffn", "0.3", "--reconstruct", "--out",
                 pruned, "--threads", "2"])
        check(r.returncode == 0 and "parameters " in r.stdout, f"prune exits 0 (stderr: {r.stderr})")
        config = json.load(open(os.path.join(pruned, "config.json"), encoding="utf-8"))
        check(config["intermediate_size"] == 1075 and all(len(h) == 3 for h in config["pruned_heads"].values()),
              f"the pruned config records the shapes: {config.get('intermediate_size')}, {config.get('pruned_heads')}")
        check(os.path.getsize(os.path.join(pruned, "model.safetensors")) < 0.9 * 90_000_000, "the pruned model is smaller")
        words = ["How do I block my card?", "opening hours of the branch"]
        p = run([brisk, "embed", "--model", pruned, "--threads", "2"] + words)
        f32 = run([brisk, "embed", "--threads", "2"] + words)
        check(p.returncode == 0, f"embed --model PRUNED exits 0 (stderr: {p.stderr})")
        if p.returncode == 0 and f32.returncode == 0:
            pv = [json.loads(line)["embedding"] for line in p.stdout.splitlines()]
            fv = [json.loads(line)["embedding"] for line in f32.stdout.splitlines()]
            cos = [sum(a * b for a, b in zip(x, y)) for x, y in zip(pv, fv)]
            check(all(0.8 < c < 0.99999 for c in cos), f"pruned embeddings stay near the unpruned: {cos}")
        pfile = os.path.join(tmp, "pruned.safetensors")
        r = run([brisk, "prune", "--calib", calib, "--heads", "0.25", "--ffn", "0.3", "--reconstruct", "--out", pfile,
                 "--threads", "2"])
        check(r.returncode == 0, f"prune --out FILE.safetensors exits 0 (stderr: {r.stderr})")
        r = run([brisk, "embed", "--model", pfile, "--threads", "2"] + words)
        if r.returncode == 0 and p.returncode == 0:
            same = [json.loads(line)["embedding"] for line in r.stdout.splitlines()]
            check(max(abs(a - b) for x, y in zip(same, pv) for a, b in zip(x, y)) < 1e-5,
                  "the pruned model file embeds as the pruned directory does")
        else:
            check(False, f"embed --model PRUNED_FILE exits 0 (stderr: {r.stderr})")
        q = os.path.join(tmp, "pruned.int8.safetensors")
        r = run([brisk, "quantize", "--model", pruned, "--plan", "int8", "--calib", calib, "--out", q, "--threads", "2"])
        check(r.returncode == 0, f"a pruned model quantizes (stderr: {r.stderr})")
        r = run([brisk, "embed", "--model", q, "hello"])
        check(r.returncode == 0 and len(json.loads(r.stdout)["embedding"]) == 384, "the pruned int8 file embeds")
        if faq:
            r = run([faq, "--model", pruned, "--limit", "4", "--threads", "2"])
            check(r.returncode == 0 and "matched (" in r.stdout, f"faq_assistant runs the pruned model ({r.stderr})")

        # A TorchScript module (tests/data/make_tiny_torchscript.py; vocabulary of 32) with a vocab-only tokenizer.
        tok = os.path.join(tmp, "tok")
        os.makedirs(tok)
        with open(os.path.join(tok, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "card", "block", "my", "how", "do", "i"]) + "\n")
        module = os.path.join(here, "../data/tiny_torchscript/module.pt")
        ts = os.path.join(tmp, "ts")
        r = run([brisk, "sensitivity", "--model", module, "--tokenizer", tok, "--texts", texts, "--levels", "0,0.5",
                 "--out", ts, "--threads", "2"])
        if "lacks libtorch" not in r.stderr and "BRISK_WITH_TORCH" not in r.stderr:
            check(r.returncode == 0, f"sensitivity of a TorchScript module exits 0 (stderr: {r.stderr})")
            rows = open(os.path.join(ts, "sensitivity.csv"), encoding="utf-8").read().splitlines() if r.returncode == 0 else []
            check(len(rows) == 1 + 3 * 2 and any("ffn_in.weight" in row for row in rows),
                  f"TorchScript sweep: 3 weight matrices x 2 levels ({len(rows)} rows)")

        bad = os.path.join(tmp, "bad")
        for args, message in [
                (["--guided"], "needs exactly one of --target-params and --target-flops"),
                (["--units", "encoder.layer.2.attention.head.12"], "layer 2 head 12 does not exist"),
                (["--units", "encoder.layer.2.mlp"], "is unknown; expected"),
                (["--layers", "0,1,2,3,4,5"], "removing all 6 layers is refused"),
                (["--n-m", "2-4"], "expected N:M such as 2:4")]:
            r = run([brisk, "prune", "--calib", calib, "--out", bad, "--threads", "2"] + args)
            check(r.returncode == 1 and message in r.stderr, f"prune {args} is refused with '{message}' ({r.stderr})")
        r = run([brisk, "prune", "--calib", calib, "--out", bad, "--heads", "1.0"])
        check(r.returncode == 2 and "--heads" in r.stderr, f"an amount of 1 is refused ({r.stderr})")
        r = run([brisk, "sensitivity", "--texts", texts, "--levels", "0,1.5", "--out", bad])
        check(r.returncode == 1 and "expected a fraction in [0, 1)" in r.stderr, f"a level of 1.5 is refused ({r.stderr})")


def test_tokenize(brisk):
    """`brisk tokenize` prints Hugging Face tokenizers' ids: the Unigram golden (tests/data/make_unigram_golden.py)
    and the MiniLM golden (make_golden.py), as arguments and on stdin; bad input gets its error, in place."""
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
    golden = json.load(open(os.path.join(data, "unigram_golden.json"), encoding="utf-8"))
    cases = golden["cases"]
    r = run([brisk, "tokenize", "--model", os.path.join(data, "tiny_xlmr")] + [c["text"] for c in cases])
    rows = [json.loads(line) for line in r.stdout.split("\n") if line]
    check(r.returncode == 0 and len(rows) == len(cases), f"tokenize exits 0 with one line per text ({r.stderr})")
    bad = [c["text"] for c, row in zip(cases, rows) if row["ids"] != c["ids"] or row["text"] != c["text"]]
    check(not bad, f"tokenize gives tokenizers' Unigram ids for all {len(cases)} golden texts (differ: {bad[:3]})")
    minilm = json.load(open(os.path.join(data, "golden_minilm.json"), encoding="utf-8"))
    flat = [it for it in minilm["items"] if "\n" not in it["text"] and "\r" not in it["text"]]
    r = run([brisk, "tokenize", "--max-seq-len", str(minilm["max_seq_len"])], stdin="".join(it["text"] + "\n" for it in flat))
    rows = [json.loads(line) for line in r.stdout.split("\n") if line]
    check(r.returncode == 0 and [row["ids"] for row in rows] == [it["ids"] for it in flat],
          f"tokenize on stdin gives the WordPiece ids of the MiniLM golden ({r.stderr})")
    # Texts shaped like a list ("[MASK]", "[a,b]", "[]") are texts: the argument parser once split them (CLI11).
    listy = ["[MASK]", "[a,b]", "[]", "[CLS] x [SEP]", "[x]\x1f", "[", "]"]
    r = run([brisk, "tokenize"] + listy)
    rows = [json.loads(line) for line in r.stdout.split("\n") if line]
    piped = run([brisk, "tokenize"], stdin="".join(t + "\n" for t in listy))
    piped_rows = [json.loads(line) for line in piped.stdout.split("\n") if line]
    check(r.returncode == 0 and [row["text"] for row in rows] == listy and rows == piped_rows,
          f"list-shaped arguments are tokenized as written, as on stdin ({r.stdout!r} {r.stderr!r})")
    r = run([brisk, "embed", "--", "[a,b]", "[]"])
    check(r.returncode == 0 and [json.loads(line)["text"] for line in r.stdout.split("\n") if line] == ["[a,b]", "[]"],
          f"embed -- \"[a,b]\" \"[]\" embeds two texts as written ({r.stderr.strip()})")
    r = run([brisk, "tokenize", "--model", os.path.join(data, "tiny_xlmr"), "--max-seq-len", "4",
             cases[0]["text"] or "a longer text than four tokens"])
    rows = [json.loads(line) for line in r.stdout.split("\n") if line]
    check(r.returncode == 0 and len(rows[0]["ids"]) <= 4 and rows[0]["ids"][-1] == 2,
          f"--max-seq-len 4 cuts the ids and keeps </s> ({r.stdout})")
    r = run([brisk, "tokenize", "--model", os.path.join(data, "tiny_xlmr"), "--max-seq-len", "2", "hi"])
    check(r.returncode == 1 and "max_seq_len is 2; expected more than the 2 special tokens" in r.stderr,
          f"--max-seq-len 2 on XLM-R is refused naming it ({r.stderr.strip()})")
    raw = subprocess.run([brisk, "tokenize"], input=b"ok\nbad \xff byte\nlast\n", capture_output=True, timeout=300)
    lines = raw.stdout.splitlines()
    check(raw.returncode == 1 and len(lines) == 3 and json.loads(lines[1]).get("line") == 2
          and json.loads(lines[2])["text"] == "last",
          f"invalid UTF-8 gets its error on its own line, in place, and exit 1 ({raw.stdout!r} {raw.stderr!r})")
    raw = subprocess.run([brisk, "tokenize", "--replace-invalid-utf8"], input=b"bad \xff byte\n",
                         capture_output=True, timeout=300)
    check(raw.returncode == 0 and json.loads(raw.stdout)["ids"][0] == 101,
          f"--replace-invalid-utf8 tokenizes invalid UTF-8 ({raw.stderr!r})")
    r = run([brisk, "tokenize", "--model", "/nonexistent-model", "hi"])
    check(r.returncode == 1 and "'/nonexistent-model' does not exist" in r.stderr,
          f"a missing model is named ({r.stderr.strip()})")


def main():
    brisk = sys.argv[1]
    test_embed(brisk)
    test_embed_prompt(brisk)
    test_tokenize(brisk)
    test_info_and_errors(brisk)
    test_bench(brisk)
    if len(sys.argv) > 2:
        test_faq_assistant(sys.argv[2])
    test_quantize(brisk, sys.argv[2] if len(sys.argv) > 2 else None)
    test_prune(brisk, sys.argv[2] if len(sys.argv) > 2 else None)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
