"""examples/http_server's semantic answer cache (POST /v1/answers, /v1/answers/lookup; brisk::AnswerCache) driven by
the `requests` client on a free loopback port, with a pair verifier fitted by `brisk fit-verifier` on the train split
of benchmarks/data/verifier_pairs.tsv: answers served to the same question and refused to a changed number, per
tenant, bad bodies refused naming the field, the verifier's calls in /metrics, and a bad verifier file refused at
start.

usage: <http-venv python> http_answers_test.py HTTP_SERVER_BINARY
"""
import os
import subprocess
import sys
import tempfile
import time

import requests

sys.path.insert(0, os.path.dirname(__file__))
from http_harness import Server, check, fail_exit, metric  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODEL = os.environ.get("BRISK_MODEL_DIR", os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2"))
KEY = "answers-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
QUESTION = "Can I send 500 pounds abroad without a fee?"
ANSWER = "Yes: transfers abroad of up to 500 pounds a month are free."


def fit_verifier(binary, out):
    brisk = os.path.join(os.path.dirname(os.path.abspath(binary)), "..", "lib", "brisk")
    r = subprocess.run([brisk, "fit-verifier", "--model", MODEL, "--pairs",
                        os.path.join(REPO, "benchmarks", "data", "verifier_pairs.tsv"), "--out", out, "--threads", "2"],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0 and os.path.exists(out), f"brisk fit-verifier writes a verifier ({r.stderr[-300:]})")


def test_without_cache(binary):
    with Server(binary, ["--model", MODEL, "--threads", "2"]) as srv:
        r = requests.post(f"{srv.url}/v1/answers/lookup", json={"question": QUESTION})
        check(r.status_code == 404 and "--semantic-verifier" in r.json()["error"],
              f"without an answer cache /v1/answers/lookup is 404 naming the flags ({r.status_code}, {r.text[:200]})")


def test_answers(binary, verifier):
    with Server(binary, ["--model", MODEL, "--threads", "2", "--semantic-verifier", verifier, "--answer-cache-tenants",
                         "2"],
                env={"BRISK_HTTP_API_KEY": KEY}) as srv:
        url = f"{srv.url}/v1/answers"
        r = requests.post(url, json={"question": QUESTION, "answer": ANSWER})
        check(r.status_code == 401, f"/v1/answers needs the API key ({r.status_code})")
        r = requests.post(url, json={"question": QUESTION, "answer": ANSWER, "tenant": "bank"}, headers=AUTH)
        check(r.status_code == 200 and r.json() == {"stored": True}, f"an answer is stored ({r.status_code} {r.text})")

        r = requests.post(f"{url}/lookup", json={"question": QUESTION, "tenant": "bank"}, headers=AUTH)
        got = r.json()
        check(r.status_code == 200 and got["hit"] and got["answer"] == ANSWER and got["reason"] == "hit" and
              got["verified"] and got["verifier_score"] > 0.5 and got["similarity"] > 0.99,
              f"the same question is served its answer, verified ({r.text[:300]})")
        r = requests.post(f"{url}/lookup", json={"question": QUESTION.replace("500", "5,000"), "tenant": "bank"},
                          headers=AUTH)
        got = r.json()
        check(r.status_code == 200 and not got["hit"] and got["answer"] is None and
              got["cached_question"] == QUESTION and got["reason"] == "rejected_by_verifier",
              f"a changed amount is refused by the verifier ({r.text[:300]})")
        r = requests.post(f"{url}/lookup", json={"question": QUESTION}, headers=AUTH)
        check(r.status_code == 200 and not r.json()["hit"] and r.json()["reason"] == "no_candidate",
              f"the default tenant does not see the bank's answers ({r.text[:200]})")

        for body, field, what in [
                ({"tenant": "bank"}, "question", "no question"),
                ({"question": ""}, "question", "an empty question"),
                ({"question": 5}, "question", "a number for the question"),
                ({"question": QUESTION, "tenant": ""}, "tenant", "an empty tenant"),
                ({"question": QUESTION, "answer": "x"}, "answer", "an answer given to a lookup")]:
            r = requests.post(f"{url}/lookup", json=body, headers=AUTH)
            check(r.status_code == 400 and field in r.json()["error"],
                  f"lookup with {what} is 400 naming {field} ({r.status_code}, {r.text[:200]})")
        for body, field, what in [
                ({"question": QUESTION}, "answer", "no answer"),
                ({"question": QUESTION, "answer": ANSWER, "ttl_s": -1}, "ttl_s", "a negative ttl"),
                ({"question": QUESTION, "answer": ANSWER, "ttl_s": 1.5}, "ttl_s", "a fractional ttl")]:
            r = requests.post(url, json=body, headers=AUTH)
            check(r.status_code == 400 and field in r.json()["error"],
                  f"insert with {what} is 400 naming {field} ({r.status_code}, {r.text[:200]})")
        r = requests.post(url, data=b'{"question": "caf\xc3", "answer": "x"}', headers={**AUTH,
                          "Content-Type": "application/json"})
        check(r.status_code == 400 and "UTF-8" in r.json()["error"], f"invalid UTF-8 is 400 ({r.text[:200]})")

        # A TTL: the entry expires and is no longer served.
        requests.post(url, json={"question": "What are your opening hours?", "answer": "9 to 5", "ttl_s": 1},
                      headers=AUTH)
        time.sleep(1.5)
        r = requests.post(f"{url}/lookup", json={"question": "What are your opening hours?"}, headers=AUTH)
        check(r.status_code == 200 and not r.json()["hit"] and r.json()["reason"] == "expired",
              f"an answer past its ttl_s is not served ({r.text[:200]})")

        # Two tenants hold answers ("bank" and the default one): a third is refused, naming the limit, and the
        # first two still take answers.
        r = requests.post(url, json={"question": QUESTION, "answer": ANSWER, "tenant": "third"}, headers=AUTH)
        check(r.status_code == 507 and "max_tenants (2)" in r.json()["error"] and "Retry-After" not in r.headers,
              f"an answer for a third tenant is 507 naming max_tenants, not to retry ({r.status_code}, {r.text[:200]})")
        r = requests.post(url, json={"question": "Where is the branch?", "answer": "Main St", "tenant": "bank"},
                          headers=AUTH)
        check(r.status_code == 200, f"the tenants there still take answers ({r.status_code}, {r.text[:200]})")

        text = requests.get(f"{srv.url}/metrics", headers=AUTH).text
        check(metric(text, "brisk_answer_cache_lookups_total", result="hit") == 1 and
              metric(text, "brisk_answer_cache_lookups_total", result="rejected_by_verifier") == 1 and
              metric(text, "brisk_answer_cache_verifier_calls_total", result="accepted") >= 1,
              "/metrics counts the answer cache's lookups and the verifier's calls")


def test_bad_verifier(binary):
    weights = os.path.join(MODEL, "model.safetensors")
    r = subprocess.run([binary, "--model", MODEL, "--port", "0", "--semantic-verifier", weights],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 1 and "--semantic-verifier" in r.stderr and "model.safetensors" in r.stderr,
          f"a file that is not a verifier is refused at start, naming it (rc {r.returncode}, {r.stderr[-300:]})")


def main():
    binary = sys.argv[1]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        verifier = os.path.join(tmp, "verifier.safetensors")
        fit_verifier(binary, verifier)
        test_without_cache(binary)
        test_answers(binary, verifier)
        test_bad_verifier(binary)
    print(f"total {time.monotonic() - t0:.1f} s")
    fail_exit()


if __name__ == "__main__":
    main()
