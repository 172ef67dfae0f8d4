"""examples/http_server driven by real clients on free loopback ports: the official `openai` package, `requests`,
`curl`, raw sockets for the misbehaving ones, and a real Prometheus server scraping /metrics.

Expected values come from Hugging Face: tests/data/golden_minilm.json (all-MiniLM-L6-v2 embeddings and token ids) and
tests/data/tasks/*/golden.json (classifier and cross-encoder logits), all written by transformers.

usage: <http-venv python> http_server_test.py HTTP_SERVER_BINARY
"""
import base64
import http.client
import json
import math
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import openai
import requests

sys.path.insert(0, os.path.dirname(__file__))
from http_harness import (Server, check, fail_exit, free_port, metric, raw_request, read_status,  # noqa: E402
                          scrape_until)

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
MODEL = os.environ.get("BRISK_MODEL_DIR", os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2"))
KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
GOLDEN = json.load(open(os.path.join(DATA, "golden_minilm.json")))
ITEMS = [it for it in GOLDEN["items"] if len(it["ids"]) < 64][:6]


def close_to(a, b, tol=2e-4):
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) < tol


def long_texts(n, words=120):
    """Distinct texts of about `words` tokens: no two share a forward pass through the cache or single flight."""
    return [f"request {i}: " + " ".join(f"word{(i * 7 + k) % 97} account" for k in range(words // 2))
            for i in range(n)]


def test_clients(binary):
    with Server(binary, ["--model", MODEL, "--threads", "2"], env={"BRISK_HTTP_API_KEY": KEY}) as srv:
        # curl: /health needs no key; /embed with the key.
        out = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", f"{srv.url}/health"], capture_output=True, text=True)
        check(out.stdout.endswith("\n200"), f"curl /health is 200 without a key ({out.stdout!r})")
        text = ITEMS[0]["text"]
        out = subprocess.run(["curl", "-s", "-H", f"Authorization: Bearer {KEY}", "-H", "Content-Type: application/json",
                              "-d", json.dumps({"inputs": text}), f"{srv.url}/embed"], capture_output=True, text=True)
        rows = json.loads(out.stdout)
        check(len(rows) == 1 and close_to(rows[0], ITEMS[0]["embedding"]),
              "curl /embed gives transformers' embedding of a golden text")

        # openai: the default call (the client asks for base64 and decodes it), float and base64 explicitly.
        client = openai.OpenAI(base_url=f"{srv.url}/v1", api_key=KEY, max_retries=0)
        texts = [it["text"] for it in ITEMS]
        resp = client.embeddings.create(model="all-MiniLM-L6-v2", input=texts)
        check(all(close_to(d.embedding, it["embedding"]) for d, it in zip(resp.data, ITEMS)),
              "openai client.embeddings.create matches transformers on every golden text")
        check([d.index for d in resp.data] == list(range(len(texts))), "openai data indices are 0..n-1")
        expected_tokens = sum(len(it["ids"]) for it in ITEMS)
        check(resp.usage.prompt_tokens == expected_tokens and resp.usage.total_tokens == expected_tokens,
              f"usage counts transformers' tokens ({resp.usage.prompt_tokens} vs {expected_tokens})")
        check(resp.model == "all-MiniLM-L6-v2", "the model name is echoed")
        as_float = client.embeddings.create(model="m", input=texts[0], encoding_format="float")
        as_b64 = client.embeddings.create(model="m", input=texts[0], encoding_format="base64")
        raw = base64.b64decode(as_b64.data[0].embedding)
        decoded = list(struct.unpack(f"<{len(raw) // 4}f", raw))
        floats32 = list(struct.unpack(f"<{len(raw) // 4}f", struct.pack(f"<{len(raw) // 4}f", *as_float.data[0].embedding)))
        check(len(raw) == 384 * 4 and decoded == floats32, "base64 is the little-endian float32 bytes of the floats")
        try:
            client.embeddings.create(model="m", input="x", dimensions=128)
            check(False, "dimensions other than the model's is refused")
        except openai.BadRequestError as e:
            msg = e.response.json()["error"]
            check(msg.startswith("dimensions is 128"), f"dimensions 128 is refused naming the field ({msg})")
        # Issue 30: 2^64 - 1 (kept unsigned by the JSON parser) was echoed as -1.
        r = requests.post(f"{srv.url}/v1/embeddings", json={"input": "x", "model": "m",
                                                            "dimensions": 18446744073709551615}, headers=AUTH)
        check(r.status_code == 400 and r.json()["error"].startswith("dimensions is 18446744073709551615; expected an "
                                                                     "integer from 1 to 2147483647"),
              f"dimensions past INT32_MAX is refused with its real value ({r.text[:200]})")
        bad = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="wrong", max_retries=0)
        try:
            bad.embeddings.create(model="m", input="x")
            check(False, "a wrong key is refused")
        except openai.AuthenticationError:
            check(True, "openai with a wrong key gets 401")

        # requests: TEI /embed options, /info, and the task endpoints on an embedding model.
        r = requests.post(f"{srv.url}/embed", json={"inputs": [texts[1]], "normalize": False}, headers=AUTH)
        raw_row = r.json()[0]
        norm = math.sqrt(sum(x * x for x in raw_row))
        check(abs(norm - 1) > 1e-3 and close_to([x / norm for x in raw_row], ITEMS[1]["embedding"]),
              "normalize: false gives the unnormalised pooled embedding")
        long_text = " ".join(["account"] * 300)
        r = requests.post(f"{srv.url}/embed", json={"inputs": ["ok", long_text]}, headers=AUTH)
        check(r.status_code == 413 and "inputs[1] has 302 tokens" in r.json()["error"],
              f"a text over max_input_length is 413 naming it ({r.status_code} {r.text[:120]})")
        r = requests.post(f"{srv.url}/embed", json={"inputs": long_text, "truncate": True}, headers=AUTH)
        check(r.status_code == 200 and len(r.json()[0]) == 384, "truncate: true embeds it")
        info = requests.get(f"{srv.url}/info", headers=AUTH).json()
        check(info["max_input_length"] == 256 and info["model_type"] == {"embedding": {"pooling": "mean"}} and
              info["max_client_batch_size"] == 256, f"/info describes the model ({info})")
        for path in ("/predict", "/rerank"):
            body = {"inputs": "x"} if path == "/predict" else {"query": "q", "texts": ["p"]}
            r = requests.post(srv.url + path, json=body, headers=AUTH)
            check(r.status_code == 424 and "embedding model" in r.json()["error"],
                  f"{path} on an embedding model is 424 saying why")

        # Bad input, each on its own.
        r = requests.post(f"{srv.url}/embed", data=b'{"inputs": ["a",', headers=AUTH)
        check(r.status_code == 400 and "not valid JSON" in r.json()["error"] and r.json()["error_type"],
              "malformed JSON is 400")
        r = requests.post(f"{srv.url}/embed", json={"input": "a"}, headers=AUTH)
        check(r.status_code == 400 and r.json()["error"].startswith("inputs is missing"), "a missing field is named")
        r = requests.post(f"{srv.url}/embed", json={"inputs": 5}, headers=AUTH)
        check(r.status_code == 400 and "inputs is an integer" in r.json()["error"], "a wrong-typed field is named")
        r = requests.post(f"{srv.url}/embed", data=b'{"inputs": ["fine", "bad \xff byte"]}', headers=AUTH)
        check(r.status_code == 400 and "inputs[1] is not valid UTF-8 (byte 4" in r.json()["error"],
              f"invalid UTF-8 is 400 naming the input ({r.text[:150]})")
        r = requests.post(f"{srv.url}/embed", json={"inputs": ["q"] * 10000}, headers=AUTH)
        check(r.status_code == 413 and "10000 entries" in r.json()["error"], "10,000 inputs are 413")
        r = requests.post(f"{srv.url}/embed", json={"inputs": "a"})
        check(r.status_code == 401 and "missing" in r.json()["error"], "no Authorization is 401")
        r = requests.post(f"{srv.url}/embed", json={"inputs": "a"}, headers={"Authorization": "Bearer nope"})
        check(r.status_code == 401, "a wrong API key is 401")
        r = requests.get(f"{srv.url}/metrics")
        check(r.status_code == 401, "/metrics needs the key too")
        r = requests.post(f"{srv.url}/embed", json={"inputs": "a"}, headers={**AUTH, "X-Request-Timeout-Ms": "abc"})
        check(r.status_code == 400 and "X-Request-Timeout-Ms" in r.json()["error"], "a bad deadline header is named")

        # A 100 MB body, streamed from one 1 MiB buffer: 413, and the server keeps serving.
        size = 100 * 1000 * 1000
        s = raw_request(srv.port, f"POST /embed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
                                  f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n")
        chunk = b" " * (1 << 20)
        sent = 0
        try:
            while sent < size:
                sent += s.send(chunk[: min(len(chunk), size - sent)])
        except OSError:
            pass
        status = read_status(s)
        s.close()
        check(status == 413, f"a 100 MB body is 413 (got {status})")
        check(requests.get(f"{srv.url}/health").status_code == 200, "the server still answers after it")
        count_413 = lambda m: metric(m, "brisk_http_requests_total", endpoint="/embed", status="413") or 0  # noqa: E731
        metrics = scrape_until(srv.url, lambda m: count_413(m) >= 3, headers=AUTH)
        check(count_413(metrics) >= 3, f"/metrics counts requests by endpoint and status ({count_413(metrics)} 413s)")


def test_slowloris(binary):
    with Server(binary, ["--model", MODEL, "--read-timeout-s", "1", "--keep-alive-s", "1", "--http-threads", "4"]) as srv:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        head = b"POST /embed HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200
        t0 = time.monotonic()
        closed_after = None
        for b in head:  # one byte each 0.2 s: inside the 1 s per-read timeout, so only the head deadline ends it
            try:
                s.send(bytes([b]))
                r, _, _ = __import__("select").select([s], [], [], 0.2)
                if r and s.recv(1) == b"":
                    closed_after = time.monotonic() - t0
                    break
            except OSError:
                closed_after = time.monotonic() - t0
                break
            if time.monotonic() - t0 > 15:
                break
        s.close()
        check(closed_after is not None and closed_after < 6,
              f"a slowloris connection is closed by the head deadline (after {closed_after} s)")
        check(requests.post(f"{srv.url}/embed", json={"inputs": "hi"}).status_code == 200, "others are still served")
        m = scrape_until(srv.url, lambda m: (metric(m, "brisk_http_slow_connections_closed_total") or 0) >= 1)
        check((metric(m, "brisk_http_slow_connections_closed_total") or 0) >= 1, "the closed connection is counted")


def test_tasks(binary):
    golden = json.load(open(os.path.join(DATA, "tasks", "bert_cls", "golden.json")))
    cfg = json.load(open(os.path.join(DATA, "tasks", "bert_cls", "config.json")))
    labels = [cfg["id2label"][str(i)] for i in range(len(cfg["id2label"]))]
    with Server(binary, ["--model", os.path.join(DATA, "tasks", "bert_cls"), "--max-seq-len", "24"]) as srv:
        texts = [it["text"] for it in golden["single"]]
        out = requests.post(f"{srv.url}/predict", json={"inputs": texts, "truncate": True}).json()
        ok = True
        for it, row in zip(golden["single"], out):
            z = [math.exp(x) for x in it["logits"]]
            probs = {labels[k]: z[k] / sum(z) for k in range(len(z))}
            ok &= len(row) == len(labels) and all(abs(e["score"] - probs[e["label"]]) < 1e-4 for e in row)
            ok &= [e["score"] for e in row] == sorted((e["score"] for e in row), reverse=True)
        check(ok and len(out) == len(texts), "/predict gives the softmax of transformers' logits, best first")
        one = requests.post(f"{srv.url}/predict", json={"inputs": texts[0], "raw_scores": True,
                                                          "truncate": True}).json()
        raw = {labels[k]: v for k, v in enumerate(golden["single"][0]["logits"])}
        check(all(abs(e["score"] - raw[e["label"]]) < 1e-4 for e in one), "raw_scores gives the logits")
        info = requests.get(f"{srv.url}/info").json()
        check(info["labels"] == labels and "classifier" in info["model_type"], "/info lists the labels")
    golden = json.load(open(os.path.join(DATA, "tasks", "cross_encoder", "golden.json")))
    with Server(binary, ["--model", os.path.join(DATA, "tasks", "cross_encoder"), "--max-seq-len", "24"]) as srv:
        ok = True
        for p in golden["pairs"]:
            r = requests.post(f"{srv.url}/rerank", json={"query": p["query"], "texts": [p["passage"]],
                                                          "raw_scores": True, "truncate": True}).json()
            ok &= abs(r[0]["score"] - p["logits"][0]) < 1e-4
        check(ok, "/rerank raw scores are transformers' cross-encoder logits (pairs truncated to 24 tokens)")
        # Without "truncate": true, a pair over max_input_length is refused (TEI), not cut silently: two passages
        # that differ only past the limit used to get the same score.
        r = requests.post(f"{srv.url}/rerank", json={"query": "How do I reset my PIN?",
                                                      "texts": ["Open the app.", "open the app and go to card " * 8]})
        check(r.status_code == 413 and "texts[1]" in r.json()["error"] and "expected at most 24" in r.json()["error"],
              f"/rerank without truncate: a pair over max_input_length is 413 naming it ({r.status_code} {r.text[:160]})")
        q = golden["pairs"][0]["query"]
        passages = [p["passage"] for p in golden["pairs"]]
        r = requests.post(f"{srv.url}/rerank", json={"query": q, "texts": passages, "return_text": True,
                                                      "truncate": True}).json()
        scores = [x["score"] for x in r]
        check(sorted(x["index"] for x in r) == list(range(len(passages))) and scores == sorted(scores, reverse=True)
              and all(x["text"] == passages[x["index"]] and 0 < x["score"] < 1 for x in r),
              "/rerank returns every passage once, sorted, sigmoid scores, with its text")


def test_families(binary):
    """XLM-RoBERTa and the Qwen3 decoder embedder served unchanged: /embed and /v1/embeddings equal transformers'
    pooled embeddings (tests/data/make_tiny_xlmr.py, make_tiny_qwen.py), and TEI's prompt_name puts the model's
    query prompt in front of the text; a Qwen3ForSequenceClassification cross-encoder answers /rerank with
    transformers' logit."""
    golden = json.load(open(os.path.join(DATA, "tiny_xlmr", "golden_xlmr.json")))
    with Server(binary, ["--model", os.path.join(DATA, "tiny_xlmr")]) as srv:
        texts = [it["text"] for it in golden["items"]]
        out = requests.post(f"{srv.url}/embed", json={"inputs": texts, "normalize": False}).json()
        check(all(close_to(row, it["mean_pooled"], 5e-5) for row, it in zip(out, golden["items"])),
              "xlm-roberta: /embed gives transformers' mean-pooled embeddings")
    golden = json.load(open(os.path.join(DATA, "tiny_qwen3", "golden_qwen3.json")))
    with Server(binary, ["--model", os.path.join(DATA, "tiny_qwen3")]) as srv:
        docs = [it for it in golden["items"] if not it["prompt"]]
        out = requests.post(f"{srv.url}/embed", json={"inputs": [it["text"] for it in docs]}).json()
        check(all(close_to(row, it["normalized"], 5e-5) for row, it in zip(out, docs)),
              "qwen3: /embed gives transformers' normalized last-token embeddings")
        client = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="unused")
        got = client.embeddings.create(model="tiny-qwen3", input=docs[0]["text"]).data[0].embedding
        check(close_to(got, docs[0]["normalized"], 5e-5), "qwen3: the openai client gets the same embedding")
        prompt = golden["query_prompt"]
        queries = [it for it in golden["items"] if it["prompt"]]
        bare = [it["text"][len(prompt):] for it in queries]
        out = requests.post(f"{srv.url}/embed", json={"inputs": bare, "prompt_name": "query"}).json()
        check(all(close_to(row, it["normalized"], 5e-5) for row, it in zip(out, queries)),
              "qwen3: prompt_name query embeds the prompt + the text, as sentence-transformers")
        plain = requests.post(f"{srv.url}/embed", json={"inputs": bare[:1]}).json()[0]
        check(sum(a * b for a, b in zip(plain, out[0])) < 0.9999, "qwen3: the prompt changes the embedding")
        r = requests.post(f"{srv.url}/embed", json={"inputs": bare, "prompt_name": "passage"})
        check(r.status_code == 400 and "prompt_name is \"passage\"" in r.json()["error"],
              "an unknown prompt_name is a 400 that names it")
        info = requests.get(f"{srv.url}/info").json()
        check(info["model_type"] == {"embedding": {"pooling": "lasttoken"}}, "/info gives the last-token pooling")
    golden = json.load(open(os.path.join(DATA, "tiny_qwen3_reranker", "golden_qwen3_reranker.json")))
    with Server(binary, ["--model", os.path.join(DATA, "tiny_qwen3_reranker")]) as srv:
        pair = golden["pairs"][2]
        texts = [pair["document"], golden["pairs"][0]["document"]]
        out = requests.post(f"{srv.url}/rerank", json={"query": pair["query"], "texts": texts, "raw_scores": True})
        scores = {r["index"]: r["score"] for r in out.json()} if out.status_code == 200 else {}
        check(abs(scores.get(0, 1e9) - pair["logit"]) <= 5e-5,
              f"qwen3 reranker: /rerank gives transformers' logit for the pair ({out.status_code}, {out.text[:200]})")


def test_bad_flags(binary):
    """Issue 30: --write-timeout-s -1 was accepted."""
    for flag in ("--write-timeout-s", "--read-timeout-s", "--keep-alive-s"):
        r = subprocess.run([binary, "--model", MODEL, flag, "-1"], capture_output=True, text=True, timeout=60)
        check(r.returncode != 0 and flag in r.stderr and "not in range" in r.stderr,
              f"{flag} -1 is refused naming the flag (rc {r.returncode}, {r.stderr.strip()[:160]})")


def test_intent_head(binary):
    """A head written by `brisk fit-intents` loads in the server (issue 30: --head refused every such head) and
    classifies as `brisk classify --head` does."""
    brisk = os.path.join(os.path.dirname(os.path.abspath(binary)), "..", "lib", "brisk")
    train = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "intent_router", "data", "train.tsv")
    with tempfile.TemporaryDirectory() as tmp:
        head = os.path.join(tmp, "intents.safetensors")
        r = subprocess.run([brisk, "fit-intents", "--examples", train, "--out", head], capture_output=True, text=True)
        check(r.returncode == 0, f"brisk fit-intents writes a head ({r.stderr[-300:]})")
        want = subprocess.run([brisk, "classify", "--head", head, "I lost my debit card"], capture_output=True,
                              text=True)
        expected = json.loads(want.stdout)["labels"][0]["label"] if want.returncode == 0 else None
        with Server(binary, ["--model", MODEL, "--head", head]) as srv:
            out = requests.post(f"{srv.url}/predict", json={"inputs": "I lost my debit card"})
            check(out.status_code == 200 and out.json()[0]["label"] == expected == "card_lost",
                  f"/predict with --head gives brisk classify --head's label ({out.status_code}, {out.text[:200]})")


def test_load_behaviour(binary):
    """Overload, deadline, disconnect and drain, made deterministic by slow requests on one compute thread."""
    args = ["--model", MODEL, "--threads", "1", "--max-batch-size", "1", "--no-cache", "--no-reject-late",
            "--max-queue", "40", "--http-threads", "8"]
    with Server(binary, args) as srv:
        slow = threading.Thread(target=requests.post, args=(f"{srv.url}/embed",), kwargs={"json": {"inputs": long_texts(30)}})
        slow.start()
        time.sleep(0.3)  # its 30 inputs are queued; each takes tens of ms alone
        t0 = time.monotonic()
        r = requests.post(f"{srv.url}/embed", json={"inputs": long_texts(60)[30:]}, headers={"X-Request-Timeout-Ms": "60000"})
        check(r.status_code == 429 and r.headers.get("Retry-After") == "1" and r.json()["error_type"] == "overloaded",
              f"a full queue is 429 with Retry-After ({r.status_code} {r.text[:100]})")
        check(time.monotonic() - t0 < 1.0, f"the 429 is fast ({time.monotonic() - t0:.3f} s)")
        m = requests.get(f"{srv.url}/metrics").text
        abandoned = metric(m, "brisk_http_cancelled_inputs_total", reason="request_failed")
        check(metric(m, "brisk_http_cancelled_inputs_total", reason="client_gone") == 0 and 0 < abandoned <= 30,
              f"the 429's queued siblings are counted as request_failed, not as a client gone ({abandoned})")
        r = requests.post(f"{srv.url}/embed", json={"inputs": "behind the queue"}, headers={"X-Request-Timeout-Ms": "50"})
        check(r.status_code == 504 and r.json()["error_type"] == "timeout", f"an expired deadline is 504 ({r.text[:100]})")
        slow.join(timeout=60)

        # A client that leaves: its inputs are cancelled, nothing stays queued or in flight.
        body = json.dumps({"inputs": long_texts(30)}).encode()
        s = raw_request(srv.port, f"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  f"Content-Length: {len(body)}\r\n\r\n", body)
        time.sleep(0.4)
        s.close()
        # An input already in a batch completes (CANCELLED) when its batch ends: wait for that too.
        m = scrape_until(srv.url, lambda m: metric(m, "brisk_http_client_disconnects_total") == 1 and
                         metric(m, "brisk_batcher_queued") == 0 and metric(m, "brisk_http_in_flight_requests") == 1)
        check(metric(m, "brisk_http_client_disconnects_total") == 1, "the disconnect is seen")
        gone = metric(m, "brisk_http_cancelled_inputs_total", reason="client_gone")
        check(gone >= 10 and metric(m, "brisk_batcher_requests_total", outcome="cancelled") == gone + abandoned,
              f"its queued inputs are cancelled in brisk ({gone})")
        check(metric(m, "brisk_batcher_queued") == 0 and metric(m, "brisk_http_in_flight_requests") == 1,
              "nothing stays queued; only this /metrics request is in flight")

        # SIGTERM drains: slow requests started before it all complete with 200, then the process exits 0.
        results = []
        workers = [threading.Thread(target=lambda i=i: results.append(
            requests.post(f"{srv.url}/embed", json={"inputs": long_texts(8)[i:i + 4]}).status_code)) for i in range(3)]
        for w in workers:
            w.start()
        time.sleep(0.3)
        srv.proc.send_signal(signal.SIGTERM)
        for w in workers:
            w.join(timeout=60)
        code = srv.proc.wait(timeout=30)
        check(results == [200, 200, 200] and code == 0, f"SIGTERM drains in-flight requests, exit 0 ({results}, {code})")


def test_task_load_behaviour(binary):
    """/rerank and /predict with raw_scores go through the batcher as /embed does: a full queue is 429 with
    Retry-After, X-Request-Timeout-Ms is a deadline (504), and a client that leaves has its inputs cancelled. A policy
    file makes the batcher hold what is queued (a minute's queue delay, batches of 64 that four queued inputs never
    fill), so that each outcome is certain."""
    # Texts of distinct token ids in the tiny models' vocabulary (most words are [UNK]): single flight joins none.
    texts = ["hello", "lost card", "reset my pin", "open the app", "refund payment", "account balance",
             "transfer money", "block card"]
    with tempfile.TemporaryDirectory() as tmp:
        policy = os.path.join(tmp, "holding.json")
        with open(policy, "w") as f:
            json.dump({"version": 1, "max_batch_size": 64, "preferred_batch_multiple": 1,
                       "max_queue_delay_ms": 60000}, f)
        for model, path, body in (
                ("cross_encoder", "/rerank", lambda texts: {"query": "lost card", "texts": texts, "raw_scores": True}),
                ("cross_encoder", "/rerank", lambda texts: {"query": "lost card", "texts": texts}),
                ("bert_cls", "/predict", lambda texts: {"inputs": texts, "raw_scores": True})):
            what = f"{path} ({model}, {json.dumps(body(['x']))[:60]})"
            args = ["--model", os.path.join(DATA, "tasks", model), "--max-seq-len", "24", "--policy", policy,
                    "--max-queue", "4", "--no-reject-late", "--no-cache", "--http-threads", "8"]
            with Server(binary, args) as srv:
                # Two requests that together overflow the queue of 4 (each alone fits it): the first holds two places
                # until its deadline (the policy forms no batch), the second queues two more and is refused at its
                # third input.
                first = []
                holder = threading.Thread(target=lambda: first.append(requests.post(
                    f"{srv.url}{path}", json=body(texts[:2]), headers={"X-Request-Timeout-Ms": "2000"})))
                holder.start()
                m = scrape_until(srv.url, lambda m: metric(m, "brisk_batcher_queued") == 2)
                check(metric(m, "brisk_batcher_queued") == 2, f"{what}: the first request's two inputs are queued")
                t0 = time.monotonic()
                r = requests.post(f"{srv.url}{path}", json=body(texts[2:6]),
                                  headers={"X-Request-Timeout-Ms": "60000"})
                check(r.status_code == 429 and r.headers.get("Retry-After") == "1" and
                      r.json()["error_type"] == "overloaded" and time.monotonic() - t0 < 1.0,
                      f"{what}: a full queue is a fast 429 with Retry-After ({r.status_code} {r.text[:120]})")
                m = requests.get(f"{srv.url}/metrics").text
                failed = metric(m, "brisk_http_cancelled_inputs_total", reason="request_failed")
                check(failed == 2 and metric(m, "brisk_batcher_queued") == 2,
                      f"{what}: the 429's two queued inputs are cancelled, the first request's stay ({failed})")
                holder.join(timeout=60)
                check(len(first) == 1 and first[0].status_code == 504,
                      f"{what}: the first request, held past its deadline, is 504 "
                      f"({first[0].status_code if first else None})")
                m = scrape_until(srv.url, lambda m: metric(m, "brisk_batcher_queued") == 0)
                check(metric(m, "brisk_batcher_queued") == 0, f"{what}: nothing stays queued")

                t0 = time.monotonic()
                r = requests.post(f"{srv.url}{path}", json=body(["call support"]),
                                  headers={"X-Request-Timeout-Ms": "150"})
                took = time.monotonic() - t0
                check(r.status_code == 504 and r.json()["error_type"] == "timeout" and 0.15 <= took < 5,
                      f"{what}: X-Request-Timeout-Ms is its deadline, 504 ({r.status_code} {took:.3f} s)")

                payload = json.dumps(body(texts[:3])).encode()
                s = raw_request(srv.port, f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                          f"Content-Length: {len(payload)}\r\n\r\n", payload)
                time.sleep(0.3)
                s.close()
                m = scrape_until(srv.url, lambda m: metric(m, "brisk_http_client_disconnects_total") == 1 and
                                 metric(m, "brisk_batcher_queued") == 0)
                check(metric(m, "brisk_http_client_disconnects_total") == 1 and
                      metric(m, "brisk_http_cancelled_inputs_total", reason="client_gone") == 3 and
                      metric(m, "brisk_batcher_queued") == 0,
                      f"{what}: a client that leaves has its three inputs cancelled, none left queued")
                check(metric(m, "brisk_runtime_forward_passes_total") == 0,
                      f"{what}: nothing refused, expired or cancelled was computed")


def test_queue_capacity(binary):
    """A request of more inputs than --max-queue could never be queued whole: a 413 naming both numbers, not the 429
    (Retry-After) that a client would retry forever. A request of exactly --max-queue inputs on an idle server is
    served. (Requests that together overflow the queue are 429: test_load_behaviour, test_task_load_behaviour.)"""
    args = ["--model", MODEL, "--threads", "1", "--max-batch-size", "1", "--max-queue", "4", "--no-cache",
            "--no-reject-late"]
    texts = [it["text"] for it in ITEMS[:5]]
    with Server(binary, args) as srv:
        for path, field, payload in (("/embed", "inputs", {"inputs": texts}),
                                     ("/v1/embeddings", "input", {"model": "m", "input": texts})):
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
            conn.request("POST", path, body=json.dumps(payload), headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            reply = json.loads(resp.read())
            conn.close()
            check(resp.status == 413 and resp.getheader("Retry-After") is None and
                  reply.get("error_type") == "validation" and
                  f"{field} has 5 entries; expected at most 4, the queue's capacity (--max-queue)" in reply["error"],
                  f"{path}: 5 inputs with --max-queue 4 are 413, not a 429 to retry ({resp.status} {reply})")
        m = requests.get(f"{srv.url}/metrics").text
        check(metric(m, "brisk_batcher_requests_total", outcome="rejected_overloaded") in (None, 0) and
              metric(m, "brisk_batcher_queued") == 0, "nothing of them was queued or refused as an overload")
        # Exactly the capacity, on an idle server: every input is queued and answered, as transformers computes it.
        r = requests.post(f"{srv.url}/embed", json={"inputs": texts[:4]})
        rows = r.json() if r.status_code == 200 else []
        check(r.status_code == 200 and len(rows) == 4 and
              all(close_to(row, it["embedding"]) for row, it in zip(rows, ITEMS[:4])),
              f"4 inputs with --max-queue 4 on an idle server are served ({r.status_code} {r.text[:120]})")
        client = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="unused", max_retries=0)
        resp = client.embeddings.create(model="m", input=texts[:4])
        check(len(resp.data) == 4, "the openai client gets 4 embeddings with --max-queue 4")


def test_degradation(binary):
    """X-Brisk-Answer-Path names the path of each input: the model, the cache, the fallback model (here the same MiniLM
    directory: a full queue of one reroutes the rest of a request's inputs to it) or a stale result."""
    args = ["--model", MODEL, "--threads", "1", "--max-batch-size", "1", "--max-queue", "1",
            "--fallback", MODEL, "--fallback-threads", "1"]
    with Server(binary, args) as srv:
        item = ITEMS[0]
        r = requests.post(f"{srv.url}/embed", json={"inputs": item["text"], "normalize": False})
        check(r.status_code == 200 and r.headers.get("X-Brisk-Answer-Path") == "model",
              f"a first answer comes from the model ({r.headers.get('X-Brisk-Answer-Path')})")
        r = requests.post(f"{srv.url}/embed", json={"inputs": item["text"], "normalize": False})
        check(r.status_code == 200 and r.headers.get("X-Brisk-Answer-Path") == "cache",
              f"a repeat comes from the cache ({r.headers.get('X-Brisk-Answer-Path')})")
        texts = long_texts(8)
        r = requests.post(f"{srv.url}/embed", json={"inputs": texts, "normalize": False})
        paths = r.headers.get("X-Brisk-Answer-Path", "").split(",")
        check(r.status_code == 200 and len(paths) == 8 and "fallback" in paths and set(paths) <= {"model", "fallback"},
              f"inputs past the full queue are answered by the fallback, no 429 ({r.status_code} {paths})")
        m = requests.get(f"{srv.url}/metrics").text
        check(metric(m, "brisk_runtime_answers_total", path="fallback") == paths.count("fallback"),
              "the fallback answers are counted in Prometheus")
        # The fallback computes what the model does (here the same weights), compared with transformers'.
        other = ITEMS[1]
        r = requests.post(f"{srv.url}/embed", json={"inputs": long_texts(8, words=60) + [other["text"]]})
        last = r.headers.get("X-Brisk-Answer-Path", "").split(",")[-1]
        check(r.status_code == 200 and close_to(r.json()[-1], other["embedding"]),
              f"the {last} path's embedding is transformers' ({r.status_code})")


def test_tracing_and_policy(binary):
    """traceparent propagates: the response's names brisk's request span (a child of the caller's span, same trace),
    whose spans land in --otlp-traces; a malformed one is ignored (a new trace is not started, the request is served).
    --policy loads a `brisk tune` policy file: its max_batch_size shows as brisk_batcher_batch_limit."""
    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    with tempfile.TemporaryDirectory() as tmp:
        otlp = os.path.join(tmp, "spans.jsonl")
        policy = os.path.join(tmp, "policy.json")
        with open(policy, "w") as f:
            json.dump({"version": 1, "max_batch_size": 3, "preferred_batch_multiple": 1}, f)
        with Server(binary, ["--model", MODEL, "--otlp-traces", otlp, "--policy", policy, "--no-cache"]) as srv:
            r = requests.post(f"{srv.url}/embed", json={"inputs": ["first", "second"]},
                              headers={"traceparent": f"00-{trace_id}-{parent}-01"})
            out = r.headers.get("traceparent", "")
            parts = out.split("-")
            check(r.status_code == 200 and len(parts) == 4 and parts[1] == trace_id and parts[2] != parent,
                  f"the response's traceparent continues the trace under a new span ({out})")
            r = requests.post(f"{srv.url}/embed", json={"inputs": "x"}, headers={"traceparent": "00-zz-bad-01"})
            check(r.status_code == 200 and "traceparent" not in r.headers, "a malformed traceparent is ignored")
            m = requests.get(f"{srv.url}/metrics").text
            check(metric(m, "brisk_batcher_batch_limit") == 3, "--policy's max_batch_size is the batch limit")
        spans = [sp for line in open(otlp) for rs in json.loads(line)["resourceSpans"]
                 for ss in rs["scopeSpans"] for sp in ss["spans"]]
        names = sorted({sp["name"] for sp in spans})
        requests_spans = [sp for sp in spans if sp["name"] == "brisk.request"]
        check(len(requests_spans) == 2 and all(sp["traceId"] == trace_id and sp["parentSpanId"] == parent
                                               for sp in requests_spans),
              f"one brisk.request span per input, children of the caller's span ({len(requests_spans)})")
        check(parts[2] in {sp["spanId"] for sp in requests_spans}, "the propagated span is one of them")
        check({"brisk.tokenize", "brisk.queue", "brisk.batch_compute", "brisk.callback"} <= set(names),
              f"the stages are traced ({names})")


def test_prometheus(binary):
    prom = shutil.which("prometheus")
    if not prom:
        check(False, "prometheus is installed (scripts/setup)")
        return
    with Server(binary, ["--model", MODEL], env={"BRISK_HTTP_API_KEY": KEY}) as srv, \
            tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write(f"global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: brisk\n"
                    f"    authorization:\n      credentials: {KEY}\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{srv.port}']\n")
        port = free_port()
        p = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                              f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            latencies = []
            for i in range(20):
                t0 = time.monotonic()
                requests.post(f"{srv.url}/embed", json={"inputs": f"question number {i}"}, headers=AUTH)
                latencies.append(time.monotonic() - t0)
            api = f"http://127.0.0.1:{port}/api/v1/query"
            count = p99 = None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    q = requests.get(api, params={"query": 'sum(brisk_http_requests_total{endpoint="/embed"})'}).json()
                    res = q["data"]["result"]
                    count = float(res[0]["value"][1]) if res else None
                    if count == 20:
                        q = requests.get(api, params={"query": 'histogram_quantile(0.99, sum by (le) '
                                                      '(brisk_http_request_duration_seconds_bucket{endpoint="/embed"}))'})
                        p99 = float(q.json()["data"]["result"][0]["value"][1])
                        break
                except (requests.ConnectionError, KeyError, IndexError, ValueError):
                    pass
                time.sleep(0.5)
            check(count == 20, f"PromQL counts the 20 /embed requests Prometheus scraped ({count})")
            bounds = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
            cap = next((b for b in bounds if b >= max(latencies)), 10)
            check(p99 is not None and 0 < p99 <= cap,
                  f"PromQL P99 of /embed is within (0, {cap}] s, the bucket of the slowest client time ({p99})")
        finally:
            p.terminate()
            p.wait(timeout=20)


def main():
    binary = sys.argv[1]
    t0 = time.monotonic()
    only = sys.argv[2:]  # test names to run; all by default
    for test in (test_clients, test_bad_flags, test_tasks, test_families, test_intent_head, test_slowloris, test_load_behaviour,
                 test_task_load_behaviour, test_queue_capacity, test_degradation, test_tracing_and_policy, test_prometheus):
        if only and test.__name__ not in only:
            continue
        t = time.monotonic()
        test(binary)
        print(f"-- {test.__name__}: {time.monotonic() - t:.1f} s", flush=True)
    print(f"total {time.monotonic() - t0:.1f} s")
    fail_exit()


if __name__ == "__main__":
    main()
