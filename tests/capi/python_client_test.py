#!/usr/bin/env python3
"""The Python ctypes client (examples/python/brisk_client.py) on the task surface of the C API: classify against
tests/data/tasks/bert_cls's (and bert_multilabel's) transformers goldens, rerank with cross_encoder's, a runtime
over a Python callback backend (HostBackend): its exact values, its errors and values it leaves unset, and the
semantic answer cache (answer_insert / answer_lookup), and the model families beyond BERT (XLM-R, Qwen3).

    python_client_test.py LIBBRISK_SO
Prints 'N passed, N failed' and exits non-zero on any failure. Expected values come from the golden files (softmax /
sigmoid in plain Python) or from the test's own callback, never from brisk."""
import ctypes
import json
import math
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
import brisk_client  # noqa: E402
from brisk_client import Brisk, BriskError, HostBackend  # noqa: E402

TASKS = os.path.join(ROOT, "tests", "data", "tasks")
MAX_LEN = 24  # the goldens' max_length
TOL = 1e-4
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}", file=sys.stderr)


def golden(model):
    with open(os.path.join(TASKS, model, "golden.json")) as f:
        return json.load(f)


def softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    return [v / sum(e) for v in e]


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def raises(fn):
    """The BriskError fn raises, or None."""
    try:
        fn()
    except BriskError as e:
        return e
    return None


def test_classify(lib):
    g = golden("bert_cls")
    names = ["billing", "card_lost", "greeting"]
    texts = [s["text"] for s in g["single"]]
    with Brisk(lib, os.path.join(TASKS, "bert_cls"), num_threads=2, max_seq_len=MAX_LEN) as b:
        check(b.labels == names and b.dim == 0, f"a classifier has its labels and no embedding ({b.labels}, {b.dim})")
        rows = b.classify(texts, top_k=3)
        for s, row in zip(g["single"], rows):
            want = softmax(s["logits"])
            best = max(range(3), key=lambda i: s["logits"][i])
            check(row[0][0] == names[best], f"classify({s['text']!r}): the golden argmax {names[best]} (got {row})")
            check(len(row) == 3 and all(abs(score - want[names.index(label)]) < TOL for label, score in row),
                  f"classify({s['text']!r}): the softmax of the golden logits ({want}; got {row})")
        check([len(r) for r in b.classify(texts[:2])] == [1, 1], "the default top_k is 1")
        e = raises(lambda: b.classify(["x"], top_k=4))
        check(e is not None and e.status == 1 and "top_k" in str(e), f"top_k past the labels raises ({e})")
        e = raises(lambda: b.embed(["x"]))
        check(e is not None and e.status == 6, f"embed on a classifier is BRISK_FAILED_PRECONDITION ({e})")
    with Brisk(lib, os.path.join(TASKS, "bert_multilabel"), num_threads=2, max_seq_len=MAX_LEN) as b:
        gm = golden("bert_multilabel")
        rows = b.classify([s["text"] for s in gm["single"]], top_k=4)
        check(all(abs(score - sigmoid(s["logits"][b.labels.index(label)])) < TOL
                  for s, row in zip(gm["single"], rows) for label, score in row),
              "multi-label scores are sigmoids of the golden logits")


def test_rerank(lib):
    g = golden("cross_encoder")
    with Brisk(lib, os.path.join(TASKS, "cross_encoder"), num_threads=2, max_seq_len=MAX_LEN) as b:
        for i, p in enumerate(g["pairs"]):  # distinct queries: one pair per call
            (index, raw), = b.rerank(p["query"], [p["passage"]], raw_scores=True)
            (_, prob), = b.rerank(p["query"], [p["passage"]])
            check(index == 0 and abs(raw - p["logits"][0]) < TOL and abs(prob - sigmoid(p["logits"][0])) < TOL,
                  f"rerank pair {i}: the golden logit {p['logits'][0]} (got raw {raw}, sigmoid {prob})")
        passages = [p["passage"] for p in g["pairs"]]
        ranked = b.rerank(g["pairs"][0]["query"], passages, raw_scores=True)
        scores = [s for _, s in ranked]
        check(sorted(i for i, _ in ranked) == list(range(len(passages))) and scores == sorted(scores, reverse=True),
              "rerank returns every passage once, best first")
        e = raises(lambda: b.rerank("q", []))
        check(e is not None and e.status == 1, f"rerank with no passages raises BRISK_INVALID_ARGUMENT ({e})")


def features(ids):
    """The test backend's embedding of a token sequence: computed here, so embed() must return exactly these."""
    return [float(len(ids)), float(sum(ids) % 1000), float(ids[0]), float(ids[-1])]


def test_host_backend(lib):
    g = golden("bert_cls")
    model = os.path.join(TASKS, "bert_cls")  # its tokenizer; the weights are not read
    seen = []
    mode = {"value": "ok"}

    def fn(sequences):
        seen.extend(ids for ids, _ in sequences)
        if mode["value"] == "error":
            raise BriskError(1, "the host refuses this batch")
        if mode["value"] == "exception":
            raise ValueError("host bug")
        if mode["value"] == "unset":
            return [features(ids)[:3] for ids, _ in sequences]  # the last value of every row left unset
        return [features(ids) for ids, _ in sequences]

    backend = HostBackend(fn, 4, name="pyhost")
    with Brisk(lib, model, num_threads=2, max_seq_len=MAX_LEN, backend=backend, cache_result_bytes=0) as b:
        check(b.dim == 4 and b.labels == [], f"the host backend's embedding width is 4 ({b.dim})")
        texts = [s["text"] for s in g["single"]]
        rows = b.embed(texts)
        for s, row in zip(g["single"], rows):
            check(row == features(s["ids"]), f"embed({s['text']!r}) is the callback's row for the golden ids "
                                             f"{s['ids']} (want {features(s['ids'])}, got {row})")
        check(sorted(map(tuple, seen)) == sorted(tuple(s["ids"]) for s in g["single"]),
              "the callback saw exactly the golden token ids")
        future = b.submit("hello, i lost my card!")
        check(future.result(timeout=60) == features(g["single"][0]["ids"]), "submit goes through the callback too")

        mode["value"] = "error"
        e = raises(lambda: b.embed(["a text the host refuses"]))
        check(e is not None and e.status == 1 and "the host refuses this batch" in str(e) and "pyhost" in str(e),
              f"an error status from the callback comes back with its message ({e})")
        mode["value"] = "exception"
        e = raises(lambda: b.embed(["another text"]))
        check(e is not None and e.status == brisk_client.BRISK_INTERNAL and "ValueError: host bug" in str(e),
              f"a Python exception in the callback is BRISK_INTERNAL with its text ({e})")
        mode["value"] = "unset"
        e = raises(lambda: b.embed(["a third text"]))
        check(e is not None and e.status == brisk_client.BRISK_INTERNAL and "unset" in str(e)
              and "unset" in b._lib.brisk_last_error().decode(),
              f"values left unset are BRISK_INTERNAL with 'unset' in brisk_last_error ({e})")
        mode["value"] = "ok"
        check(b.embed(["hello"]) == [features([2, 11, 3])], "the runtime works again after failed batches")

    # Logits from the host: classify applies the softmax over its labels.
    logits = lambda ids: [0.5, float(len(ids) % 3), -1.0]
    backend = HostBackend(lambda seqs: [logits(ids) for ids, _ in seqs], 3, output="logits",
                          labels=["a", "b", "c"])
    with Brisk(lib, model, num_threads=2, max_seq_len=MAX_LEN, backend=backend) as b:
        s = g["single"][0]
        row = b.classify([s["text"]], top_k=3)[0]
        want = softmax(logits(s["ids"]))
        check(b.labels == ["a", "b", "c"] and all(abs(score - want["abc".index(label)]) < 1e-6 for label, score in row),
              f"classify over host logits is their softmax ({want}; got {row})")
    e = raises(lambda: Brisk(lib, model, backend=HostBackend(fn, 0)))
    check(e is not None and e.status == 1, f"a host backend of width 0 is refused ({e})")


def test_policy_path(lib):
    """policy_path: a serving policy file's max_batch_size splits the host backend's batches; a bad file is named."""
    import tempfile
    model = os.path.join(TASKS, "bert_cls")
    sizes = []

    def fn(sequences):
        sizes.append(len(sequences))
        return [features(ids) for ids, _ in sequences]

    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "policy.json")
        with open(good, "w") as f:
            json.dump({"format": "brisk-serving-policy", "version": 1, "max_batch_size": 2,
                       "preferred_batch_multiple": 1}, f)
        with Brisk(lib, model, num_threads=2, max_seq_len=MAX_LEN, backend=HostBackend(fn, 4), cache_result_bytes=0,
                   policy_path=good) as b:
            b.embed(["one text", "two texts", "three texts", "four texts", "five texts"])
            stats = json.loads(b.stats_json())
        check(sizes == [2, 2, 1], f"the policy's max_batch_size 2 gives batches of 2, 2 and 1 ({sizes})")
        check(stats["batcher"]["batch_limit"] == 2, f"stats show the policy's limit ({stats['batcher']['batch_limit']})")
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{"max_batch_size": 0}')
        e = raises(lambda: Brisk(lib, model, backend=HostBackend(fn, 4), policy_path=bad))
        check(e is not None and e.status == 1 and "bad.json" in str(e) and "max_batch_size is 0" in str(e),
              f"a bad policy file is refused naming the file and the value ({e})")


def test_answer_cache(lib):
    """answer_insert / answer_lookup over all-MiniLM-L6-v2 (cosine and the default guards): a paraphrase served, an
    answer longer than the client's first buffer, tenants, and a file that is not a verifier refused."""
    model = os.environ.get("BRISK_MODEL_DIR", os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2"))
    with Brisk(lib, model, num_threads=2, answer_cache=True) as b:
        long_answer = "Visit any branch with your ID. " * 100  # 3,100 bytes: past the client's 1 KiB first try
        b.answer_insert("How do I close my savings account?", long_answer, tenant="bank")
        got = b.answer_lookup("how can I close my savings account", tenant="bank")
        check(got["hit"] and got["answer"] == long_answer and got["reason"] == "hit" and got["similarity"] > 0.9
              and not got["verified"] and got["verifier_score"] is None, f"a paraphrase gets the long answer ({got})")
        got = b.answer_lookup("How do I close my savings account?")
        check(not got["hit"] and got["answer"] is None and got["reason"] == "no_candidate",
              f"the default tenant does not see the bank's answers ({got})")
        b.answer_insert("What are your opening hours?", "9 to 5", ttl_ms=60000)
        check(b.answer_lookup("What are your opening hours?")["answer"] == "9 to 5", "the default tenant's answer")
        e = raises(lambda: b.answer_insert("q", "a", ttl_ms=-1))
        check(e is not None and e.status == 1 and "ttl_ms is -1" in str(e), f"a negative ttl is refused ({e})")
    with Brisk(lib, model, num_threads=2) as b:
        e = raises(lambda: b.answer_lookup("anything"))
        check(e is not None and e.status == 6 and "no answer cache" in str(e),
              f"without an answer cache a lookup fails with FAILED_PRECONDITION ({e})")
    weights = os.path.join(model, "model.safetensors")
    e = raises(lambda: Brisk(lib, model, num_threads=2, semantic_verifier=weights))
    check(e is not None and "model.safetensors" in str(e) and "brisk-pair-verifier" in str(e),
          f"a semantic_verifier that is not a verifier file is refused naming it ({e})")


def test_families(lib):
    """XLM-RoBERTa and the Qwen3 decoder embedder through the C API unchanged: brisk_embed equals transformers'
    pooled embeddings (tests/data/make_tiny_xlmr.py, make_tiny_qwen.py); the Qwen3 reranker's brisk_rerank its
    logits."""
    data = os.path.join(ROOT, "tests", "data")
    for model, golden_file, key in (("tiny_xlmr", "golden_xlmr.json", "mean_pooled"),
                                    ("tiny_qwen3", "golden_qwen3.json", "normalized")):
        with open(os.path.join(data, model, golden_file), encoding="utf-8") as f:
            items = json.load(f)["items"]
        with Brisk(lib, os.path.join(data, model), num_threads=2) as b:
            rows = b.embed([it["text"] for it in items])
            prompt = b.query_prompt
            queries = [it for it in items if it.get("prompt")]
            bare = [it["text"][len(prompt):] for it in queries]
            prompted = b.embed([prompt + t for t in bare]) if queries else []
        worst = max(abs(x - y) for row, it in zip(rows, items) for x, y in zip(row, it[key]))
        check(worst < 5e-5, f"{model}: brisk_embed is transformers' {key} embedding (worst |diff| {worst:.2g})")
        if model == "tiny_qwen3":
            check(prompt.startswith("Instruct: ") and all(it["text"].startswith(prompt) for it in queries),
                  "brisk_query_prompt is config_sentence_transformers.json's query prompt")
            check(all(max(abs(x - y) for x, y in zip(row, it[key])) < 5e-5 for row, it in zip(prompted, queries)),
                  "query_prompt + text embeds as sentence-transformers' prompt_name='query'")
        else:
            check(prompt == "", f"{model}: no query prompt")
    # A Qwen3ForSequenceClassification cross-encoder (Qwen3-Reranker's form): brisk_rerank's raw scores are
    # transformers' logits, whose head reads the last token that is not the padding id.
    with open(os.path.join(data, "tiny_qwen3_reranker", "golden_qwen3_reranker.json"), encoding="utf-8") as f:
        pairs = json.load(f)["pairs"]
    with Brisk(lib, os.path.join(data, "tiny_qwen3_reranker"), num_threads=2) as b:
        got = [b.rerank(p["query"], [p["document"]], raw_scores=True)[0][1] for p in pairs]
    worst = max(abs(g - p["logit"]) for g, p in zip(got, pairs))
    check(worst < 5e-5, f"qwen3 reranker: brisk_rerank gives transformers' logits (worst |diff| {worst:.2g})")


def test_json_that_grows(lib):
    """stats_json()'s text can grow between the size query and the copy (counters gain digits under load): the
    client used to raise BRISK_OUT_OF_RANGE then. A stand-in for brisk_stats_json, with brisk's buffer protocol,
    whose text grows by 300 bytes after the size query, drives it deterministically."""
    calls = []

    def growing(rt, buf, length, required):
        text = b"{" + b"9" * (300 if calls else 0) + b"}"
        calls.append(length)
        if required:
            required._obj.value = len(text) + 1
        if buf is None or length < len(text) + 1:
            return 3  # BRISK_OUT_OF_RANGE, nothing written
        ctypes.memmove(buf, text, len(text) + 1)
        return 0

    with Brisk(lib, os.path.join(TASKS, "bert_cls"), max_seq_len=MAX_LEN) as b:
        text = b._json(growing)
    check(text.startswith("{9") and text.endswith("}") and len(calls) >= 3,
          f"a stats text that outgrows its first buffer is read whole ({len(text)} bytes, {len(calls)} calls)")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    lib = sys.argv[1]
    test_classify(lib)
    test_rerank(lib)
    test_host_backend(lib)
    test_policy_path(lib)
    test_answer_cache(lib)
    test_families(lib)
    test_json_that_grows(lib)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
