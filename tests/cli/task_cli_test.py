#!/usr/bin/env python3
"""End-to-end checks of `brisk classify`, `brisk rerank` and the task fields of `brisk info`, run as a user would, on
the tiny models of tests/data/tasks (their golden.json comes from Hugging Face transformers, see the README there)
and on examples/intent_router's data with the default embedding model.

    task_cli_test.py BRISK_BINARY
Prints 'N passed, N failed' and exits non-zero on any failure. Expected probabilities are computed here from the
golden logits (softmax / sigmoid in plain Python), never by brisk."""
import json
import math
import os
import sys
import tempfile

from cli_harness import check, run, summary

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TASKS = os.path.join(ROOT, "tests", "data", "tasks")
INTENT_DATA = os.path.join(ROOT, "examples", "intent_router", "data")
MAX_LEN = 24  # the goldens' max_length: one of them is truncated to it
TOL = 1e-4


def golden(model):
    with open(os.path.join(TASKS, model, "golden.json")) as f:
        return json.load(f)


def labels_of(model):
    with open(os.path.join(TASKS, model, "config.json")) as f:
        id2label = json.load(f)["id2label"]
    return [id2label[str(i)] for i in range(len(id2label))]


def softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    return [v / sum(e) for v in e]


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def json_lines(r):
    try:
        return [json.loads(line) for line in r.stdout.splitlines()]
    except json.JSONDecodeError:
        return []


def classify(brisk, model, texts, *extra, stdin=None):
    return run([brisk, "classify", "--model", os.path.join(TASKS, model), "--max-seq-len", str(MAX_LEN),
                "--threads", "2", *extra, *texts], stdin=stdin)


def test_classify_golden(brisk):
    for model in ("bert_cls", "distilbert_cls"):
        g = golden(model)
        names = labels_of(model)
        texts = [s["text"] for s in g["single"]]
        r = classify(brisk, model, texts, "--top-k", "3", "--logits")
        rows = json_lines(r)
        check(r.returncode == 0 and len(rows) == len(texts), f"classify {model} exits 0 with one line per text "
                                                             f"(stderr: {r.stderr})")
        for s, row in zip(g["single"], rows):
            want = softmax(s["logits"])
            best = max(range(len(want)), key=lambda i: s["logits"][i])
            got = row["labels"]
            check(row["text"] == s["text"], f"{model}: classify echoes the text {s['text']!r}")
            check(got[0]["id"] == best and got[0]["label"] == names[best],
                  f"{model}: the top label of {s['text']!r} is the argmax of the golden logits ({names[best]}; got "
                  f"{got[0]})")
            check(len(got) == 3 and all(abs(l["score"] - want[l["id"]]) < TOL and l["label"] == names[l["id"]]
                                        for l in got),
                  f"{model}: the scores of {s['text']!r} are the softmax of the golden logits ({want}; got {got})")
            check([l["score"] for l in got] == sorted((l["score"] for l in got), reverse=True),
                  f"{model}: labels are sorted best first")
            check(all(abs(a - b) < TOL for a, b in zip(row.get("logits", []), s["logits"]))
                  and len(row.get("logits", [])) == 3, f"{model}: --logits prints the golden logits")

    # Default top-k is 1; stdin gives one line per line, empty lines included.
    g = golden("bert_cls")
    r = classify(brisk, "bert_cls", [], stdin="".join(s["text"] + "\n" for s in g["single"]))
    rows = json_lines(r)
    check(r.returncode == 0 and [row["text"] for row in rows] == [s["text"] for s in g["single"]],
          f"classify reads one text per stdin line, empty lines included (stderr: {r.stderr})")
    check(all(len(row["labels"]) == 1 and "logits" not in row for row in rows), "the default --top-k is 1")
    check(all(row["labels"][0]["id"] == max(range(3), key=lambda i: s["logits"][i])
              for row, s in zip(rows, g["single"])), "stdin lines get the golden argmax")


def test_classify_multilabel(brisk):
    for model in ("bert_multilabel", "distilbert_multilabel"):
        g = golden(model)
        r = classify(brisk, model, [s["text"] for s in g["single"]], "--top-k", "4")
        rows = json_lines(r)
        check(r.returncode == 0 and len(rows) == len(g["single"]), f"classify {model} exits 0 (stderr: {r.stderr})")
        for s, row in zip(g["single"], rows):
            got = {l["id"]: l["score"] for l in row["labels"]}
            want = [sigmoid(x) for x in s["logits"]]
            check(len(got) == 4 and all(abs(got[i] - want[i]) < TOL for i in range(4)),
                  f"{model}: multi-label scores of {s['text']!r} are sigmoids of the golden logits ({want}; got {got})")
        check(any(abs(sum(l["score"] for l in row["labels"]) - 1) > 0.05 for row in rows),
              f"{model}: multi-label scores are not a softmax (they need not sum to 1)")


def test_classify_errors(brisk):
    for k, code in (("0", 2), ("4", 1)):
        r = classify(brisk, "bert_cls", ["hello"], "--top-k", k)
        check(r.returncode == code and "brisk: error:" in r.stderr and f"--top-k {k}" in r.stderr
              and "expected 1 to" in r.stderr, f"--top-k {k} on a 3-label model exits {code} (stderr: {r.stderr})")
    r = classify(brisk, "bert_cls", ["hello"], "--top-k", "4")
    check("3 labels" in r.stderr and r.stdout == "", "--top-k past the labels names their number and prints nothing")

    r = run([brisk, "classify", "--threads", "2", "hello"])  # the default model: all-MiniLM-L6-v2
    check(r.returncode == 1 and "no classification head" in r.stderr and "--head" in r.stderr
          and "RuntimeOptions" not in r.stderr, f"classify on an embedding model names --head (stderr: {r.stderr})")
    r = run([brisk, "classify", "--model", "/nonexistent/brisk-model", "hello"])
    check(r.returncode == 1 and "/nonexistent/brisk-model" in r.stderr, "a missing model exits 1 naming it")
    r = classify(brisk, "bert_cls", ["hello"], "--head", "/nonexistent/head.safetensors")
    check(r.returncode == 1 and "/nonexistent/head.safetensors" in r.stderr,
          f"a missing head file exits 1 naming it (stderr: {r.stderr})")
    r = classify(brisk, "bert_cls", ["hello"], "--torchscript-output", "logits")
    check(r.returncode == 2 and "--torchscript" in r.stderr, "--torchscript-output needs --torchscript")
    r = classify(brisk, "bert_cls", ["hello"], "--torchscript", "x.pt", "--torchscript-output", "bogus")
    check(r.returncode == 2 and "bogus" in r.stderr, "an unknown --torchscript-output is a usage error")

    import subprocess
    raw = subprocess.run([brisk, "classify", "--model", os.path.join(TASKS, "bert_cls")],
                         input=b"hello\nbad \xff byte\nlost card\n", capture_output=True, timeout=300)
    lines = raw.stdout.splitlines()
    check(raw.returncode == 1 and b"stdin line 2:" in raw.stderr and len(lines) == 3
          and json.loads(lines[1]).get("line") == 2 and json.loads(lines[2])["text"] == "lost card",
          f"invalid UTF-8 on stdin gets its error in place (stderr: {raw.stderr!r})")


def test_rerank(brisk):
    model = os.path.join(TASKS, "cross_encoder")
    g = golden("cross_encoder")
    base = [brisk, "rerank", "--model", model, "--max-seq-len", str(MAX_LEN), "--threads", "2"]
    # The golden pairs have distinct queries: one pair per call, raw scores against the golden logit.
    for i, p in enumerate(g["pairs"]):
        r = run([*base, "--query", p["query"], "--raw-scores", p["passage"]])
        out = json.loads(r.stdout) if r.returncode == 0 else {}
        res = out.get("results", [{}])
        check(r.returncode == 0 and out.get("query") == p["query"] and len(res) == 1 and res[0].get("index") == 0
              and res[0].get("passage") == p["passage"] and abs(res[0].get("score", 1e9) - p["logits"][0]) < TOL,
              f"rerank pair {i}: the raw score is the golden logit {p['logits'][0]} (got {out}, stderr: {r.stderr})")
        r = run([*base, "--query", p["query"], p["passage"]])
        out = json.loads(r.stdout) if r.returncode == 0 else {}
        check(abs(out.get("results", [{}])[0].get("score", 1e9) - sigmoid(p["logits"][0])) < TOL,
              f"rerank pair {i}: the default score is the sigmoid of the golden logit")

    # Many passages against one query: sorted best first, each the score it gets alone, every index once.
    query = g["pairs"][0]["query"]
    passages = [p["passage"] for p in g["pairs"]]
    alone = []
    for passage in passages:
        r = run([*base, "--query", query, "--raw-scores", passage])
        alone.append(json.loads(r.stdout)["results"][0]["score"] if r.returncode == 0 else None)
    r = run([*base, "--query", query, "--raw-scores", *passages])
    res = json.loads(r.stdout)["results"] if r.returncode == 0 else []
    scores = [x["score"] for x in res]
    check(r.returncode == 0 and sorted(x["index"] for x in res) == list(range(len(passages))),
          f"rerank returns every passage once (stderr: {r.stderr})")
    check(scores == sorted(scores, reverse=True), "rerank sorts by score, best first")
    check(len(set(round(s, 3) for s in scores)) > 3, "the scores differ (the sort is not vacuous)")
    check(all(x["passage"] == passages[x["index"]] and alone[x["index"]] is not None
              and abs(x["score"] - alone[x["index"]]) < TOL for x in res),
          "each passage's score in a batch equals its score alone, and its text matches its index")
    r = run([*base, "--query", query, "--raw-scores", "--top-k", "3", *passages])
    top = json.loads(r.stdout)["results"] if r.returncode == 0 else []
    check([x["index"] for x in top] == [x["index"] for x in res[:3]], "--top-k 3 keeps the best three")
    r = run([*base, "--query", query, "--raw-scores"], stdin="".join(p + "\n" for p in passages))
    check(r.returncode == 0 and json.loads(r.stdout)["results"] == res, "passages from stdin rank the same")

    r = run([*base, "--query", query], stdin="")
    check(r.returncode == 1 and "no passages" in r.stderr, f"rerank with no passages exits 1 (stderr: {r.stderr})")
    r = run([*base, "hello"])
    check(r.returncode == 2 and "--query" in r.stderr, "rerank needs --query")
    r = run([*base, "--query", "q", "--top-k", "-1", "p"])
    check(r.returncode == 2 and "--top-k -1" in r.stderr, "a negative --top-k is a usage error")
    r = run([brisk, "rerank", "--model", os.path.join(TASKS, "bert_cls"), "--query", "q", "p"])
    check(r.returncode == 1 and "3 labels" in r.stderr, f"rerank with a 3-label model says why (stderr: {r.stderr})")
    r = run([brisk, "rerank", "--threads", "2", "--query", "q", "p"])
    check(r.returncode == 1 and "no classification head" in r.stderr and "cross-encoder" in r.stderr,
          f"rerank with an embedding model says why (stderr: {r.stderr})")


def test_info(brisk):
    r = run([brisk, "info", "--model", os.path.join(TASKS, "bert_cls")])
    info = json.loads(r.stdout) if r.returncode == 0 else {}
    check(r.returncode == 0 and info.get("task") == "classification" and info.get("backend") == "native"
          and info.get("labels") == labels_of("bert_cls") and info.get("multi_label") is False
          and info.get("classification_head") == "" and info.get("embedding_dim") == 0,
          f"info on a classifier shows its task, labels and backend ({info}, stderr: {r.stderr})")
    r = run([brisk, "info", "--model", os.path.join(TASKS, "bert_multilabel")])
    info = json.loads(r.stdout) if r.returncode == 0 else {}
    check(info.get("multi_label") is True and len(info.get("labels", [])) == 4, "info shows multi_label")
    r = run([brisk, "info"])
    info = json.loads(r.stdout) if r.returncode == 0 else {}
    check(info.get("task") == "embedding" and info.get("labels") == [] and info.get("backend") == "native"
          and info.get("embedding_dim") == 384, f"info on the embedding model shows task embedding ({info})")


def test_torchscript(brisk):
    ts = os.path.join(TASKS, "torchscript")
    g = golden("torchscript")
    texts = [item["text"] for item in g["items"]]
    base = ["--model", ts, "--max-seq-len", str(MAX_LEN), "--threads", "2"]
    r = run([brisk, "info", "--model", ts, "--torchscript", os.path.join(ts, "classifier.pt")])
    if r.returncode != 0 and "BRISK_WITH_TORCH" in r.stderr:
        print("note: partial skip: this build has no libtorch (BRISK_WITH_TORCH=OFF): the --torchscript checks are "
              "skipped; the other checks ran (the test stays Passed)")
        r = run([brisk, "classify", *base, "--torchscript", os.path.join(ts, "classifier.pt"), "x"])
        check(r.returncode == 1 and "BRISK_WITH_TORCH" in r.stderr, "without libtorch, --torchscript says so")
        return
    info = json.loads(r.stdout) if r.returncode == 0 else {}
    check(info.get("backend") == "torchscript" and info.get("task") == "classification"
          and info.get("labels") == labels_of("bert_cls"), f"info --torchscript shows the backend ({info}, {r.stderr})")
    for output in ("auto", "logits"):
        r = run([brisk, "classify", *base, "--torchscript", os.path.join(ts, "classifier.pt"), "--torchscript-output",
                 output, "--top-k", "3", *texts])
        rows = json_lines(r)
        check(r.returncode == 0 and len(rows) == len(texts), f"classify --torchscript exits 0 (stderr: {r.stderr})")
        for item, row in zip(g["items"], rows):
            best = max(range(3), key=lambda i: item["logits"][i])
            want = softmax(item["logits"])
            check(row["labels"][0]["id"] == best and all(abs(l["score"] - want[l["id"]]) < TOL for l in row["labels"]),
                  f"classify --torchscript ({output}) of {item['text']!r}: the golden argmax and softmax")
    r = run([brisk, "embed", *base, "--torchscript", os.path.join(ts, "encoder.pt"), "--torchscript-output", "hidden",
             "--pooling", "mean", *texts])
    rows = json_lines(r)
    check(r.returncode == 0 and len(rows) == len(texts), f"embed --torchscript exits 0 (stderr: {r.stderr})")
    for item, row in zip(g["items"], rows):
        norm = math.sqrt(sum(x * x for x in row["embedding"])) or 1.0
        check(all(abs(a / norm - b) < TOL for a, b in zip(row["embedding"], item["mean_pooled_normalized"]))
              and len(row["embedding"]) == 32, f"embed --torchscript of {item['text']!r}: the golden mean pooling")
    r = run([brisk, "classify", *base, "--torchscript", os.path.join(ts, "not_a_module.pt"), "x"])
    check(r.returncode == 1 and "not_a_module.pt" in r.stderr, f"a bad module exits 1 naming it ({r.stderr})")


def test_intents(brisk):
    with tempfile.TemporaryDirectory() as d:
        head = os.path.join(d, "head.safetensors")
        r = run([brisk, "fit-intents", "--examples", os.path.join(INTENT_DATA, "train.tsv"), "--out", head,
                 "--threads", "2"])
        check(r.returncode == 0, f"fit-intents exits 0 (stderr: {r.stderr})")
        questions = {"how much money do I have in my checking account": "balance",
                     "what time does the branch open on saturday": "opening_hours",
                     "I forgot my PIN, how do I get a new one": "reset_pin"}
        r = run([brisk, "classify", "--head", head, "--threads", "2", "--top-k", "2", *questions])
        rows = json_lines(r)
        check(r.returncode == 0 and len(rows) == 3, f"classify --head exits 0 (stderr: {r.stderr})")
        for row in rows:
            want = questions.get(row["text"])
            check(row["labels"][0]["label"] == want and row["labels"][0]["score"] > row["labels"][1]["score"],
                  f"classify --head routes {row['text']!r} to {want} (got {row['labels']})")
        r = run([brisk, "info", "--head", head])
        info = json.loads(r.stdout) if r.returncode == 0 else {}
        check(info.get("task") == "classification" and info.get("classification_head") == head
              and len(info.get("labels", [])) == 12, f"info --head shows the head ({info}, stderr: {r.stderr})")
        r = run([brisk, "classify", "--model", os.path.join(TASKS, "bert_cls"), "--head", head, "x"])
        check(r.returncode == 1 and "brisk: error:" in r.stderr,
              f"a head fitted on another model is refused (stderr: {r.stderr})")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    brisk = sys.argv[1]
    test_classify_golden(brisk)
    test_classify_multilabel(brisk)
    test_classify_errors(brisk)
    test_rerank(brisk)
    test_info(brisk)
    test_torchscript(brisk)
    test_intents(brisk)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
